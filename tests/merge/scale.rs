//! Integration's cost per packet, counted in git processes started (a deterministic proxy
//! for its time): integrating more packets costs the same per packet, and no more than a
//! fixed budget.

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Git processes `git orchestra merge` may start per integrated packet: the approval (the
/// stored verdict read), the in-memory merge and its commit, and the worktree's release
/// (leftovers found, unsaved work saved, worktree removed). Measured at 16; a new git call per
/// packet must be worth its place under this budget.
const GIT_STARTS_PER_PACKET: usize = 16;

/// Runs `n` independent packets, then integrates them with `git orchestra merge` through a
/// `git` on `PATH` that logs its starts; returns the git command lines the merge started.
fn git_starts_merging(n: usize) -> Vec<String> {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Count git starts\"\n\n{}",
        independent_packets(n)
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let git = CountingGit::new(&repo);
    let out = orchestra_with_env(
        &repo.path,
        &["merge", &run, "--json"],
        &[("PATH", &git.path)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["integrated"].as_array().unwrap().len(),
        n,
        "{}",
        text(&out)
    );
    // A merge this short leaves the repository's commit-graph alone (see the next test).
    assert!(!repo.path.join(".git/objects/info/commit-graphs").exists());
    git.started()
}

/// Git finds each merge's base by walking back from both sides. Through the run's new merges,
/// all made within seconds of each other, it has nothing to stop it early and reads every one,
/// so each merge cost more than the one before (13 ms a merge at 1,000 packets against 2.5 at
/// 100). A long merge adds its merges to the repository's commit-graph as it goes, whose
/// generation numbers end those walks.
#[test]
fn a_long_merge_adds_its_merges_to_the_commit_graph() {
    let n = 70;
    let repo = TestRepo::new();
    let body = format!("objective = \"Many merges\"\n\n{}", independent_packets(n));
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let tip = repo.git(&["rev-parse", &format!("orchestra/{run}/integration")]);
    let common = repo.path.join(".git");
    assert!(
        git_orchestra::git::testing::commit_graph_holds(&common, tip.trim()),
        "the commit-graph does not hold the integration's tip after {n} packets"
    );
    let first = repo.git(&[
        "rev-parse",
        &format!("orchestra/{run}/integration~{}", n - 1),
    ]);
    assert!(git_orchestra::git::testing::commit_graph_holds(
        &common,
        first.trim()
    ));
    repo.git(&["commit-graph", "verify"]);
}

#[test]
fn integrating_a_packet_starts_the_same_few_git_processes_however_many_packets() {
    let (few_lines, more_lines) = (git_starts_merging(4), git_starts_merging(12));
    let (few, more) = (few_lines.len(), more_lines.len());
    let per_packet = (more - few).div_ceil(8);
    assert!(
        per_packet <= GIT_STARTS_PER_PACKET,
        "integrating a packet started {per_packet} git processes (4 packets: {few}, 12 \
         packets: {more}); the budget is {GIT_STARTS_PER_PACKET}; 12 packets started {:?}",
        git_by_subcommand(&more_lines)
    );
    // Flat: the fixed part (integration branch, target, verdict of the whole) does not grow
    // with the packets either.
    let fixed = few.saturating_sub(4 * per_packet);
    assert!(
        more <= fixed + 12 * per_packet + 4,
        "integrating 12 packets started {more} git processes, more than 12 × {per_packet} + {fixed}"
    );
    eprintln!("git starts: 4 packets {few}, 12 packets {more}, per packet {per_packet}");
}

/// Runs `n` independent packets whose validation commands — one all packets share, one of
/// their own — log the process group they run in (a sandbox launch starts a group of its
/// own), then integrates them with `git orchestra merge`; returns the merge's report and the
/// `(group, command label)` lines its validation logged.
fn validation_launches_merging(n: usize) -> (serde_json::Value, Vec<(String, String)>) {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let log = repo.scratch().join("launches.log");
    let logged = |label: &str| {
        format!(
            "\"echo \\\"$(cut -d' ' -f5 /proc/$$/stat) {label}\\\" >> '{}'\"",
            log.display()
        )
    };
    let mut body = String::from("objective = \"Count validation launches\"\n\n");
    for i in 0..n {
        let validation = format!("{}, {}", logged("shared"), logged(&format!("p{i}")));
        body.push_str(&packet(
            &format!("p{i}"),
            &format!("\"out-p{i}.txt\""),
            "",
            &validation,
        ));
    }
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    // Only the merge's launches count, not the packets' own validation in their worktrees.
    std::fs::write(&log, "").unwrap();
    let run = run_id(&repo.path);
    let out = orchestra(&repo.path, &["merge", &run, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["integrated"].as_array().unwrap().len(),
        n,
        "{}",
        text(&out)
    );
    let lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let (group, label) = l.split_once(' ').unwrap();
            (group.to_string(), label.to_string())
        })
        .collect();
    (v, lines)
}

#[test]
fn a_batch_runs_its_packets_validation_commands_once_in_one_confined_process() {
    let n = 12;
    let (report, lines) = validation_launches_merging(n);
    let batches = report["batches"].as_array().unwrap().len();
    let launches: std::collections::BTreeSet<&str> =
        lines.iter().map(|(g, _)| g.as_str()).collect();
    let mut runs = std::collections::BTreeMap::new();
    for (_, label) in &lines {
        *runs.entry(label.as_str()).or_insert(0) += 1;
    }
    // Each batch's merged tree runs the distinct commands of its own packets once: the shared
    // command once per batch, each packet's own once; earlier packets' are not run again.
    let own_runs: Vec<(&str, i32)> = runs
        .iter()
        .filter(|(l, _)| **l != "shared")
        .map(|(l, n)| (*l, *n))
        .collect();
    assert_eq!(own_runs.len(), n, "{runs:?}");
    assert!(
        own_runs.iter().all(|(_, times)| *times == 1),
        "an integrated packet's commands ran again on later batches: {runs:?}"
    );
    assert_eq!(runs.get("shared"), Some(&(batches as i32)), "{runs:?}");
    // One confined process per batch, however many commands it runs.
    assert_eq!(
        launches.len(),
        batches,
        "{} batches started {} confined processes: {lines:?}",
        batches,
        launches.len()
    );
}

/// What integrating `n` packets started: the git command lines and the confined processes of
/// validation (told apart by their process groups), with the merge's batch count.
struct Starts {
    git: Vec<String>,
    launches: usize,
    batches: usize,
}

/// Runs `n` independent packets, each with a validation command of its own that logs its
/// process group, then integrates them through a `git` on `PATH` that logs its starts.
fn starts_merging(n: usize) -> Starts {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let launches = repo.scratch().join("launches.log");
    let mut body = String::from("objective = \"Count starts at scale\"\n\n");
    for i in 0..n {
        let validation = format!(
            "\"cut -d' ' -f5 /proc/$$/stat >> '{}'; : p{i}\"",
            launches.display()
        );
        body.push_str(&packet(
            &format!("p{i}"),
            &format!("\"out-p{i}.txt\""),
            "",
            &validation,
        ));
    }
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &["--max-parallel", "8"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(&launches, "").unwrap();
    let run = run_id(&repo.path);
    let git = CountingGit::new(&repo);
    let out = orchestra_with_env(
        &repo.path,
        &["merge", &run, "--json"],
        &[("PATH", &git.path)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["integrated"].as_array().unwrap().len(),
        n,
        "{}",
        text(&out)
    );
    let groups: std::collections::BTreeSet<String> = std::fs::read_to_string(&launches)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    Starts {
        git: git.started(),
        launches: groups.len(),
        batches: v["batches"].as_array().unwrap().len(),
    }
}

#[test]
fn integrating_costs_the_same_per_packet_from_50_to_200_packets() {
    let (few, many) = (starts_merging(50), starts_merging(200));
    let per_packet = (many.git.len() - few.git.len()).div_ceil(150);
    assert!(
        per_packet <= GIT_STARTS_PER_PACKET,
        "integrating a packet started {per_packet} git processes (50 packets: {}, 200 \
         packets: {}); the budget is {GIT_STARTS_PER_PACKET}; 200 packets started {:?}",
        few.git.len(),
        many.git.len(),
        git_by_subcommand(&many.git)
    );
    let fixed = few.git.len().saturating_sub(50 * per_packet);
    assert!(
        many.git.len() <= fixed + 200 * per_packet + 8,
        "integrating 200 packets started {} git processes, more than 200 × {per_packet} + {fixed}",
        many.git.len()
    );
    // Validation: one confined process per batch, and batches of the same size however many
    // packets wait, so no more confined processes per packet at 200 than at 50.
    for s in [&few, &many] {
        assert_eq!(s.launches, s.batches, "one confined process per batch");
    }
    assert!(
        many.launches * 50 <= few.launches * 200,
        "validation started {} confined processes for 50 packets but {} for 200",
        few.launches,
        many.launches
    );
    eprintln!(
        "starts: 50 packets {} git, {} confined; 200 packets {} git, {} confined",
        few.git.len(),
        few.launches,
        many.git.len(),
        many.launches
    );
}

/// Returns how many times the merge started `git worktree list` (which reads every
/// registered worktree, so its cost grows with the run).
fn worktree_lists(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.contains("worktree list")).count()
}

#[test]
fn releasing_integrated_worktrees_lists_the_registrations_a_bounded_number_of_times() {
    // With the pool full (`[worktree] recycle`, 2 by default), parking one more worktree must
    // not read every registered worktree to find that out: that made each integrated packet's
    // release cost grow with the number of packets.
    let (few, more) = (git_starts_merging(4), git_starts_merging(12));
    let (few, more) = (worktree_lists(&few), worktree_lists(&more));
    assert!(
        more <= few.max(4),
        "integrating 4 packets listed the worktrees {few} times, 12 packets {more} times"
    );
}

//! Early parking: in a run that integrates (`run --merge`) with recycling on, a succeeded
//! packet's worktree goes to the pool at once and the next packet takes it; the pool is
//! trimmed back to `[worktree] recycle` when the run ends; a conflict on a parked packet is
//! resolved in a worktree checked out again (one a cut-short park left detached goes back on
//! its branch first); a kill after a park is resumed; and nothing is parked early without
//! `--merge` or with recycling off.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use git_orchestra::git::{self, RepoInfo};

use crate::merge::crash::{RESOLVING_WORKER, conflicting_plan};
use crate::support::{TestRepo, orchestra, orchestra_with_env, packet, run_id, status_json, text};

/// Writes its packet's own file.
const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// A repository of 40 committed files whose runs recycle `recycle` worktrees.
fn repo_recycling(recycle: usize) -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        ".orchestra/config.toml",
        &format!("[worktree]\nrecycle = {recycle}\n"),
    );
    for i in 0..40 {
        repo.write(&format!("data/f{i}.txt"), &format!("file {i}\n"));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "parking set-up"]);
    repo
}

/// Writes a plan of `n` packets in waves of `wave`: each packet depends on the one a wave
/// before it.
pub(crate) fn waves_plan(repo: &TestRepo, n: usize, wave: usize) -> PathBuf {
    let mut body = "objective = \"Waves\"\n\n".to_string();
    for i in 0..n {
        let deps = if i >= wave {
            format!("\"w{}\"", i - wave)
        } else {
            String::new()
        };
        body.push_str(&packet(
            &format!("w{i}"),
            &format!("\"out-w{i}.txt\""),
            &deps,
            "",
        ));
    }
    repo.write_plan("waves.toml", &body)
}

/// Returns the journaled events of the newest run, oldest first, as JSON values.
pub(crate) fn events(repo: &TestRepo) -> Vec<serde_json::Value> {
    let run = run_id(&repo.path);
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    store
        .events(&run, 0)
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(&e.event).unwrap())
        .collect()
}

/// Returns the `how` of every `worktree_ready` event of the newest run.
fn ready_hows(repo: &TestRepo) -> Vec<String> {
    events(repo)
        .iter()
        .filter(|e| e["type"] == "worktree_ready")
        .map(|e| e["how"].as_str().unwrap().to_string())
        .collect()
}

/// Returns how many events of `kind` the newest run journaled.
fn count(repo: &TestRepo, kind: &str) -> usize {
    events(repo).iter().filter(|e| e["type"] == kind).count()
}

/// Returns the worktrees parked in the pool of the scratch root.
fn parked(repo: &TestRepo) -> Vec<PathBuf> {
    let info = RepoInfo::discover(&repo.path).unwrap();
    let pool = repo.scratch().join("wt").join(git::POOL_DIR);
    git::pooled(&info, &pool).unwrap()
}

/// Returns the worktree paths of the newest run's packets.
fn packet_worktrees(repo: &TestRepo) -> Vec<PathBuf> {
    status_json(&repo.path)["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| PathBuf::from(p["worktree"].as_str().unwrap()))
        .collect()
}

/// Asserts that `main` holds every listed packet's file, the run completed, the pool holds at
/// most `keep` worktrees and no packet worktree is left.
fn assert_landed_and_trimmed(repo: &TestRepo, ids: &[String], keep: usize) {
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed", "{v:#}");
    for id in ids {
        assert_eq!(
            repo.git(&["show", &format!("main:out-{id}.txt")]),
            id.as_str()
        );
    }
    assert_trimmed(repo, keep);
    let pool = parked(repo);
    // Only the main checkout and the pool are registered.
    let listed = repo.git(&["worktree", "list", "--porcelain"]);
    let registered = listed
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count();
    assert_eq!(registered, 1 + pool.len(), "{listed}");
}

#[test]
fn a_merged_run_in_waves_recycles_succeeded_worktrees_and_trims_the_pool() {
    let repo = repo_recycling(2);
    let plan = waves_plan(&repo, 20, 4);
    let out = repo.run_plan(&plan, WORKER, &["--merge", "--max-parallel", "4"]);
    assert!(out.status.success(), "{}", text(&out));
    let hows = ready_hows(&repo);
    assert_eq!(hows.len(), 20, "{hows:?}");
    let fresh = hows.iter().filter(|h| h.starts_with("fresh")).count();
    let recycled = hows
        .iter()
        .filter(|h| h.starts_with("recycled from"))
        .count();
    // The first wave (4) checks out fresh trees; later packets take their dependencies'
    // parked worktrees.
    assert!(
        fresh <= 6,
        "{fresh} fresh checkouts for 20 packets: {hows:?}"
    );
    assert_eq!(fresh + recycled, 20, "{hows:?}");
    assert!(count(&repo, "worktree_parked") >= 16, "{}", text(&out));
    let ids: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
    assert_landed_and_trimmed(&repo, &ids, 2);
}

/// The last packet's park goes on while the run's integration starts: a `git` that takes a
/// second over the park's listing of ignored files shows the merge starting before the park
/// detaches the worktree, and the integration's release still finds it parked (nothing left
/// at the packet's path, one worktree in the pool, `main` advanced).
#[test]
fn the_integration_starts_while_the_last_worktree_is_still_being_parked() {
    let repo = repo_recycling(2);
    let plan = waves_plan(&repo, 1, 1);
    let git = crate::support::CountingGit::new(&repo);
    // The same logging `git`, slowed on the park's listing of ignored files.
    let wrapper = Path::new(git.path.split(':').next().unwrap()).join("git");
    let logging = std::fs::read_to_string(&wrapper).unwrap();
    let slowed = logging.replacen(
        "exec ",
        "case \"$*\" in *ls-files*--ignored*) sleep 1 ;; esac\nexec ",
        1,
    );
    std::fs::write(&wrapper, slowed).unwrap();
    let out = repo.run_plan_with_env(&plan, WORKER, &["--merge"], &[("PATH", &git.path)]);
    assert!(out.status.success(), "{}", text(&out));
    let started = git.started();
    let at = |what: &str| started.iter().position(|l| l.contains(what));
    let (merge, detach) = (at("merge-tree"), at("-m park HEAD HEAD"));
    assert!(
        merge.is_some() && detach.is_some() && merge < detach,
        "the merge starts before the park detaches: {started:#?}"
    );
    assert_eq!(count(&repo, "worktree_parked"), 1, "{}", text(&out));
    assert_landed_and_trimmed(&repo, &["w0".to_string()], 2);
    assert_eq!(parked(&repo).len(), 1);
    assert!(packet_worktrees(&repo).iter().all(|w| !w.exists()));
}

#[test]
fn gc_trims_a_pool_above_the_configured_recycle() {
    let repo = repo_recycling(4);
    // Four packets at once: each parks its worktree as it succeeds, and the run keeps four.
    let plan = waves_plan(&repo, 4, 4);
    let out = repo.run_plan(&plan, WORKER, &["--merge", "--max-parallel", "4"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(parked(&repo).len(), 4, "{}", text(&out));
    // A lower setting leaves the pool as it was until gc.
    repo.write(".orchestra/config.toml", "[worktree]\nrecycle = 1\n");
    let dry = orchestra(&repo.path, &["gc", "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        text(&dry).contains("would remove 3 parked worktrees from the recycling pool"),
        "{}",
        text(&dry)
    );
    assert_eq!(parked(&repo).len(), 4, "a dry run removed parked worktrees");
    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("removed 3 parked worktrees from the recycling pool"),
        "{}",
        text(&out)
    );
    let pool = parked(&repo);
    assert_eq!(pool.len(), 1, "{pool:?}");
    let listed = repo.git(&["worktree", "list", "--porcelain"]);
    let registered = listed
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count();
    assert_eq!(registered, 2, "the main checkout and one parked: {listed}");
    // Already at its size: a second gc has nothing to trim.
    let again = orchestra(&repo.path, &["gc"]);
    assert!(
        !text(&again).contains("parked worktree"),
        "{}",
        text(&again)
    );
}

#[test]
fn nothing_is_parked_early_in_a_run_without_merge_or_with_recycling_off() {
    // Without `--merge`, every worktree stays for the user to look at.
    let repo = repo_recycling(2);
    let plan = waves_plan(&repo, 4, 2);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(count(&repo, "worktree_parked"), 0);
    assert!(packet_worktrees(&repo).iter().all(|w| w.exists()));
    assert!(
        ready_hows(&repo).iter().all(|h| h == "fresh"),
        "{:?}",
        ready_hows(&repo)
    );

    // With `recycle = 0`, nothing goes to a pool, during the run or after it.
    let repo = repo_recycling(0);
    let plan = waves_plan(&repo, 4, 2);
    let out = repo.run_plan(&plan, WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(count(&repo, "worktree_parked"), 0);
    assert!(
        ready_hows(&repo).iter().all(|h| h == "fresh"),
        "{:?}",
        ready_hows(&repo)
    );
    assert!(parked(&repo).is_empty());
    assert!(packet_worktrees(&repo).iter().all(|w| !w.exists()));
}

#[test]
fn a_conflict_on_a_packet_whose_worktree_was_parked_early_is_resolved_in_it_checked_out_again() {
    let repo = repo_recycling(2);
    let plan = conflicting_plan(&repo);
    let out = repo.run_plan(&plan, RESOLVING_WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let ev = events(&repo);
    let at = |kind: &str, packet: &str| {
        ev.iter()
            .position(|e| e["type"] == kind && e["packet"] == packet)
            .unwrap_or_else(|| panic!("no {kind} of {packet}: {ev:#?}"))
    };
    // Which packet conflicts depends on the merge order: the one that did was parked first.
    let conflicted = ev
        .iter()
        .find(|e| e["type"] == "packet_conflicted")
        .map(|e| e["packet"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no conflict: {ev:#?}"));
    assert!(at("worktree_parked", &conflicted) < at("packet_conflicted", &conflicted));
    assert!(at("packet_conflicted", &conflicted) < at("worktree_restored", &conflicted));
    assert!(at("worktree_restored", &conflicted) < at("packet_integrated", &conflicted));
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        readme.contains("pa was here") && readme.contains("pb was here"),
        "{readme}"
    );
    assert!(!readme.contains("<<<<<<<"), "{readme}");
    assert_trimmed(&repo, 2);
}

/// Asserts the pool holds at most `keep` worktrees and no packet worktree is left.
fn assert_trimmed(repo: &TestRepo, keep: usize) {
    let pool = parked(repo);
    assert!(pool.len() <= keep, "the pool was not trimmed: {pool:?}");
    let left: Vec<PathBuf> = packet_worktrees(repo)
        .into_iter()
        .filter(|w| w.exists())
        .collect();
    assert!(left.is_empty(), "packet worktrees left behind: {left:?}");
}

/// Writes a plan of three packets, each depending on the one before.
fn chain_plan(repo: &TestRepo) -> PathBuf {
    let body = format!(
        "objective = \"Chain\"\n\n{}{}{}",
        packet("c1", "\"out-c1.txt\"", "", ""),
        packet("c2", "\"out-c2.txt\"", "\"c1\"", ""),
        packet("c3", "\"out-c3.txt\"", "\"c2\"", ""),
    );
    repo.write_plan("chain.toml", &body)
}

/// Returns the arguments of a `run --merge` of `plan` under the scratch root of `repo`.
fn run_args(plan: &Path, root: &Path) -> Vec<String> {
    [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        WORKER,
        "--worktree-root",
        root.to_str().unwrap(),
        "--merge",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn a_run_killed_right_after_a_packet_parked_early_is_resumed_to_the_end() {
    // An uninterrupted run of the same plan says where the first park is journaled.
    let probe = repo_recycling(2);
    let out = probe.run_plan(&chain_plan(&probe), WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let kinds: Vec<String> = events(&probe)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    let parked_at = kinds
        .iter()
        .position(|k| k == "worktree_parked")
        .unwrap_or_else(|| panic!("nothing parked early: {kinds:?}"));
    // The engine journals everything but `run_created` and the command's request.
    let n = (parked_at - 1).to_string();

    let repo = repo_recycling(2);
    let plan = chain_plan(&repo);
    let root = repo.scratch().join("wt");
    let args = run_args(&plan, &root);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = orchestra_with_env(
        &repo.path,
        &args,
        &[("ORCHESTRA_CRASH_AFTER_EVENTS", n.as_str())],
    );
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let last = events(&repo).last().cloned().unwrap();
    assert_eq!(last["type"], "worktree_parked", "{last}");
    assert_eq!(last["packet"], "c1");
    assert_eq!(parked(&repo).len(), 1);
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let ids: Vec<String> = ["c1", "c2", "c3"].iter().map(|s| s.to_string()).collect();
    assert_landed_and_trimmed(&repo, &ids, 2);
}

#[test]
fn a_conflict_on_a_packet_whose_park_a_kill_cut_short_is_resolved_on_its_branch() {
    let repo = repo_recycling(2);
    let plan = conflicting_plan(&repo);
    // Without `--merge` the worktrees stay where they are.
    let out = repo.run_plan(&plan, RESOLVING_WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    // Each as a park a kill cut short leaves it: detached at its branch's tip, not moved.
    for wt in packet_worktrees(&repo) {
        crate::support::git(&wt, &["checkout", "--quiet", "--detach"]);
    }
    let run = run_id(&repo.path);
    let out = orchestra(&repo.path, &["merge", &run]);
    assert!(out.status.success(), "{}", text(&out));
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        readme.contains("pa was here") && readme.contains("pb was here"),
        "{readme}"
    );
    // The resolution is on the conflicting packet's branch, not on a detached HEAD.
    let conflicted = events(&repo)
        .iter()
        .find(|e| e["type"] == "packet_conflicted")
        .map(|e| e["packet"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no conflict: {}", text(&out)));
    let branch = format!("orchestra/{run}/{conflicted}");
    let subject = repo.git(&["log", "-1", "--format=%s", &branch]);
    assert!(subject.contains("resolve conflicts"), "{subject}");
    assert_eq!(
        repo.git(&["merge-base", "--is-ancestor", &branch, "main"]),
        ""
    );
}

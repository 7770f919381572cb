//! The git processes recycling a worktree starts: a packet of a run that integrates
//! (`run --merge`) takes the worktree its dependency parked, and parking and taking it start no
//! more than a budget of git processes, the fewest under the registration lock.

use std::path::Path;

use crate::support::*;

/// Writes its packet's own file.
const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Git processes parking a packet's worktree may start: its clean check (`status`), its
/// droppable ignored files (`ls-files`) and the detach of HEAD (`update-ref`, which leaves
/// the index alone where `checkout --detach` refreshed it). Measured at 6 before the
/// merge-under-way and sparse checks read their files instead of starting `git rev-parse` and
/// `git config`, and the move to the pool renamed the directory and rewrote the registration
/// instead of starting `git worktree move`.
const GIT_STARTS_PER_PARK: usize = 3;

/// Git processes taking a parked worktree for a new packet may start: its candidate's clean
/// check (`status`, before the registration lock) and the checkout on the packet's branch
/// (`checkout`). Measured at 6 (with the candidate's `status` and a `git worktree move` under
/// the registration lock, the branch looked up by `rev-parse` and created by `update-ref`, the
/// two commits' ignore rules compared by `git diff`) before the move was done in-process, then
/// 3 before the branch was read and created with gix instead.
const GIT_STARTS_PER_TAKE: usize = 2;

/// A repository of 40 committed files whose runs recycle two worktrees.
fn repo_recycling() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(".orchestra/config.toml", "[worktree]\nrecycle = 2\n");
    for i in 0..40 {
        repo.write(&format!("data/f{i}.txt"), &format!("file {i}\n"));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "recycling set-up"]);
    repo
}

/// Returns the words of the git command `line` from its subcommand on (`-C <dir>` and
/// `-c <key=value>` skipped).
fn from_subcommand(line: &str) -> Vec<&str> {
    let mut words = line.split(' ');
    let mut rest = Vec::new();
    while let Some(w) = words.next() {
        if w == "-C" || w == "-c" {
            words.next();
        } else if !w.starts_with('-') {
            rest.push(w);
            rest.extend(words.by_ref());
        }
    }
    rest
}

/// Returns true if and only if the git command `line` is one of recycling's: a park's or a
/// take's, as opposed to the packet's validation, commit, checks and merge, and the pool's
/// trim as the run ends.
fn recycling_start(line: &str) -> bool {
    let words = from_subcommand(line);
    let has = |w: &str| words.contains(&w);
    match words.first().copied() {
        Some("worktree") => has("move") || has("repair"),
        Some("checkout") | Some("clean") => true,
        Some("update-ref") => !line.contains("/integration "),
        Some("config") => line.contains("core.sparseCheckout"),
        Some("ls-files") => has("--ignored"),
        Some("diff") => line.contains(".gitignore"),
        // The merge-under-way check of a park; the new branch's lookup of a take.
        Some("rev-parse") => {
            has("MERGE_HEAD") || (line.contains("refs/heads/orchestra/") && !line.contains("^{"))
        }
        Some("status") => has("--untracked-files=all") && !has("-z"),
        _ => false,
    }
}

/// Returns how many worktrees the newest run in `repo` parked and how many it took from the
/// pool.
fn parks_and_takes(repo: &TestRepo) -> (usize, usize) {
    let events = super::park_early::events(repo);
    let parks = events
        .iter()
        .filter(|e| e["type"] == "worktree_parked")
        .count();
    let takes = events
        .iter()
        .filter(|e| {
            e["type"] == "worktree_ready"
                && e["how"]
                    .as_str()
                    .is_some_and(|h| h.starts_with("recycled from"))
        })
        .count();
    (parks, takes)
}

/// Runs `plan` with `--merge` and at most `parallel` packets at a time through `git`'s `PATH`;
/// asserts it completed and returns how many worktrees it parked and took.
fn run_counted(repo: &TestRepo, git: &CountingGit, plan: &Path, parallel: usize) -> (usize, usize) {
    let parallel = parallel.to_string();
    let extra = ["--merge", "--max-parallel", parallel.as_str()];
    let out = repo.run_plan_with_env(plan, WORKER, &extra, &[("PATH", &git.path)]);
    assert!(out.status.success(), "{}", text(&out));
    let status = status_json(&repo.path);
    assert_eq!(status["run"]["state"], "completed", "{status:#}");
    parks_and_takes(repo)
}

/// A run in waves, whose packets take their dependencies' worktrees, then a run of two
/// packets on the merged result, which take worktrees parked at other commits (so their ignore
/// rules are compared).
#[test]
fn a_recycled_packet_starts_a_bounded_number_of_git_processes_for_its_worktree() {
    let repo = repo_recycling();
    let (n, wave) = (12, 3);
    let waves = super::park_early::waves_plan(&repo, n, wave);
    let two = repo.write_plan(
        "two.toml",
        &format!(
            "objective = \"Two\"\n\n{}{}",
            packet("t0", "\"out-t0.txt\"", "", ""),
            packet("t1", "\"out-t1.txt\"", "", "")
        ),
    );
    let git = CountingGit::new(&repo);
    let (parks, takes) = run_counted(&repo, &git, &waves, wave);
    assert!(takes >= 3 && parks >= takes, "{parks} parks, {takes} takes");
    let (more_parks, more_takes) = run_counted(&repo, &git, &two, 2);
    assert_eq!(
        more_takes, 2,
        "both packets of the second run take a worktree"
    );
    let (parks, takes) = (parks + more_parks, takes + more_takes);
    let lines = git.started();
    let recycling: Vec<&String> = lines.iter().filter(|l| recycling_start(l)).collect();
    let named = |what: &str| -> Vec<&&String> {
        recycling
            .iter()
            .filter(|l| from_subcommand(l).join(" ").starts_with(what))
            .collect()
    };
    let none = Vec::<&&String>::new();
    assert_eq!(named("worktree move"), none, "moved by git");
    assert_eq!(named("config"), none, "sparse checks by git");
    assert_eq!(
        named("rev-parse"),
        none,
        "merge checks and branch lookups by git"
    );
    assert_eq!(named("diff"), none, "ignore rules compared by git");
    // A park's detach of HEAD (`update-ref --no-deref … HEAD HEAD`) is one of its starts.
    let branch_updates: Vec<&&String> = named("update-ref")
        .into_iter()
        .filter(|l| !from_subcommand(l).contains(&"--no-deref"))
        .collect();
    assert_eq!(branch_updates, none, "branches created by git");
    let budget = parks * GIT_STARTS_PER_PARK + takes * GIT_STARTS_PER_TAKE;
    assert!(
        recycling.len() <= budget,
        "{} git starts for {parks} parks and {takes} takes, more than {GIT_STARTS_PER_PARK} \
         per park and {GIT_STARTS_PER_TAKE} per take: {recycling:#?}",
        recycling.len()
    );
}

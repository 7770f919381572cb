//! The merge's scratch checkout: made once per merge and moved from candidate to candidate
//! (only the files that differ are written), and one a kill left behind is checked before it
//! is trusted — made again when its last move did not finish, moved and cleaned when it did.

use std::path::PathBuf;

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Each packet's validation: its own file is there, and the tree is exactly the candidate's
/// (nothing planted, README.md as committed).
fn validation(id: &str) -> String {
    format!("\"test -s out-{id}.txt && test ! -e planted.txt && grep -qx '# sample' README.md\"")
}

/// Runs `n` independent packets with [`validation`]; returns the run.
fn run_packets(repo: &TestRepo, n: usize) -> String {
    let mut body = String::from("objective = \"Validate in one scratch checkout\"\n\n");
    for i in 0..n {
        let id = format!("p{i}");
        body.push_str(&packet(
            &id,
            &format!("\"out-{id}.txt\""),
            "",
            &validation(&id),
        ));
    }
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    run_id(&repo.path)
}

/// Returns where the merge of `run` keeps its scratch checkout, and its marker.
fn scratch_of(repo: &TestRepo, run: &str) -> (PathBuf, PathBuf) {
    let dir = repo
        .path
        .parent()
        .unwrap()
        .join(".orchestra")
        .join(repo.path.file_name().unwrap())
        .join(".scratch");
    let name = format!("keep-merge-{run}");
    (dir.join(&name), dir.join(format!("{name}.ready")))
}

/// Merges `run` through a `git` that logs its starts; returns the report and the git lines.
fn merge_counting(repo: &TestRepo, run: &str, n: usize) -> (serde_json::Value, Vec<String>) {
    let git = CountingGit::new(repo);
    let out = orchestra_with_env(
        &repo.path,
        &["merge", run, "--json"],
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
    (v, git.started())
}

/// Returns how many git commands running `sub` (`"worktree add"`, `"checkout"`) the merge
/// started on a scratch checkout (the packets' own worktrees are recycled with `checkout` too).
fn on_scratch(lines: &[String], sub: &str) -> usize {
    lines
        .iter()
        .filter(|l| l.contains(".scratch/") && l.contains(&format!(" {sub} ")))
        .count()
}

#[test]
fn a_merge_checks_its_scratch_out_once_and_moves_it_from_batch_to_batch() {
    let repo = TestRepo::new();
    let n = 7;
    let run = run_packets(&repo, n);
    let (report, lines) = merge_counting(&repo, &run, n);
    let batches = report["batches"].as_array().unwrap().len();
    assert!(batches >= 3, "{report:#}");
    assert_eq!(
        on_scratch(&lines, "worktree add"),
        1,
        "{batches} batches made {} scratch checkouts: {:?}",
        on_scratch(&lines, "worktree add"),
        git_by_subcommand(&lines)
    );
    // Every later candidate moves the checkout: git rewrites only what differs.
    assert_eq!(on_scratch(&lines, "checkout"), batches - 1, "{lines:#?}");
    let (path, ready) = scratch_of(&repo, &run);
    assert!(
        !path.exists() && !ready.exists(),
        "the scratch checkout was left behind"
    );
    assert!(
        !repo.git(&["worktree", "list"]).contains("keep-merge"),
        "{}",
        repo.git(&["worktree", "list"])
    );
}

/// Makes the checkout a killed merge of `run` could have left: registered, `planted.txt`
/// untracked, README.md changed, with the marker of a completed move when `ready`.
fn leave_scratch(repo: &TestRepo, run: &str, ready: bool) -> PathBuf {
    let (path, marker) = scratch_of(repo, run);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    repo.git(&[
        "worktree",
        "add",
        "--detach",
        path.to_str().unwrap(),
        "HEAD",
    ]);
    std::fs::write(path.join("planted.txt"), "left by a command\n").unwrap();
    std::fs::write(path.join("README.md"), "# changed by a command\n").unwrap();
    if ready {
        let head = repo.git(&["rev-parse", "HEAD"]);
        std::fs::write(&marker, head.trim()).unwrap();
    }
    path
}

#[test]
fn a_scratch_checkout_a_kill_left_half_moved_is_made_again() {
    let repo = TestRepo::new();
    let run = run_packets(&repo, 2);
    let path = leave_scratch(&repo, &run, false);
    // A kill in the middle of `checkout` leaves git's index lock behind.
    let admin = repo
        .path
        .join(".git/worktrees")
        .join(path.file_name().unwrap());
    std::fs::write(admin.join("index.lock"), "").unwrap();
    let (report, lines) = merge_counting(&repo, &run, 2);
    let batches = report["batches"].as_array().unwrap().len();
    // Removed and made anew once; later batches move it as usual.
    assert_eq!(on_scratch(&lines, "worktree add"), 1, "{lines:#?}");
    assert_eq!(on_scratch(&lines, "worktree remove"), 2, "{lines:#?}");
    assert_eq!(on_scratch(&lines, "checkout"), batches - 1, "{lines:#?}");
    assert!(!path.exists(), "the scratch checkout was left behind");
    assert!(!repo.git(&["worktree", "list"]).contains("keep-merge"));
}

#[test]
fn a_scratch_checkout_a_kill_left_after_a_complete_move_is_moved_and_cleaned() {
    let repo = TestRepo::new();
    let run = run_packets(&repo, 2);
    let path = leave_scratch(&repo, &run, true);
    // Its validations pass only on the candidate's own tree: nothing planted, README.md back.
    let (_, lines) = merge_counting(&repo, &run, 2);
    assert_eq!(on_scratch(&lines, "worktree add"), 0, "{lines:#?}");
    assert!(on_scratch(&lines, "checkout") >= 1, "{lines:#?}");
    assert!(!path.exists(), "the scratch checkout was left behind");
}

#[test]
fn gc_removes_the_scratch_checkout_a_killed_merge_left_and_never_came_back_to() {
    let repo = TestRepo::new();
    let run = run_packets(&repo, 2);
    let path = leave_scratch(&repo, &run, true);
    let (_, marker) = scratch_of(&repo, &run);
    let out = orchestra(&repo.path, &["gc", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(path.exists(), "a dry run removes nothing");
    let out = orchestra(&repo.path, &["gc"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!path.exists(), "gc left the scratch checkout behind");
    assert!(
        !marker.exists(),
        "gc left the scratch checkout's marker behind"
    );
    assert!(
        !repo.git(&["worktree", "list"]).contains("keep-merge"),
        "{}",
        repo.git(&["worktree", "list"])
    );
}

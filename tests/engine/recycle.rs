//! Recycled worktrees: integrated packets' clean worktrees parked in the pool and moved to new
//! packets, dirty ones never taken, ignored build output kept out of commits, and a kill in the
//! middle of recycling resumed.

use std::path::{Path, PathBuf};

use git_orchestra::git::{
    self, Created, RepoInfo, Reuse, WorktreeRequest, create, park, pool_dir, validate,
};

use crate::support::{TestRepo, orchestra, orchestra_with_env, packet, status_json, text};

/// Writes its packet's file and an ignored build cache, as a build would.
const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt"; mkdir -p target; echo warm > target/cache"#;

/// A repository ignoring `target/` and `node_modules/` whose runs park up to two worktrees,
/// keeping `target/` (the user's `[worktree] keep_ignored`).
fn recycling_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(".gitignore", "target/\nnode_modules/\n");
    repo.write(".orchestra/config.toml", "[worktree]\nrecycle = 2\n");
    repo.user_config("[worktree]\nkeep_ignored = [\"target\"]\n");
    for i in 0..40 {
        repo.write(&format!("data/f{i}.txt"), &format!("file {i}\n"));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "recycling set-up"]);
    repo
}

fn one_packet_plan(repo: &TestRepo, objective: &str, id: &str) -> PathBuf {
    repo.write_plan(
        &format!("{id}.toml"),
        &format!(
            "objective = \"{objective}\"\n\n{}",
            packet(id, &format!("\"out-{id}.txt\""), "", "")
        ),
    )
}

/// Returns the worktrees parked in the pool of the scratch root.
fn parked(repo: &TestRepo) -> Vec<PathBuf> {
    let info = RepoInfo::discover(&repo.path).unwrap();
    let pool = repo.scratch().join("wt").join(git::POOL_DIR);
    git::pooled(&info, &pool).unwrap()
}

/// Returns the packet record `id` of the newest run's status.
fn packet_record(repo: &TestRepo, id: &str) -> serde_json::Value {
    let v = status_json(&repo.path);
    v["packets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
        .unwrap()
}

/// Asserts that the second packet's worktree came from the pool and is a correct checkout.
fn assert_recycled(repo: &TestRepo, out: &str, first: &Path) {
    assert!(out.contains("recycled from"), "{out}");
    let rec = packet_record(repo, "q1");
    let wt = PathBuf::from(rec["worktree"].as_str().unwrap());
    assert!(parked(repo).is_empty(), "the pool gave its worktree away");
    assert!(!first.exists());
    // The base (with p1 merged) is checked out, the kept cache is there, and it is clean.
    assert_eq!(
        std::fs::read_to_string(wt.join("out-p1.txt")).unwrap(),
        "p1\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("target/cache")).unwrap(),
        "warm\n"
    );
    let branch = rec["branch"].as_str().unwrap();
    let files = repo.git(&["show", "--name-only", "--format=", branch]);
    assert_eq!(files.trim(), "out-q1.txt", "ignored output never committed");
    let info = RepoInfo::discover(&repo.path).unwrap();
    let status = validate(&info, &wt, branch).unwrap();
    assert!(!status.dirty());
    assert!(
        !std::fs::read_dir(repo.path.join(".git/worktrees"))
            .unwrap()
            .flatten()
            .any(|d| d.path().join("orchestra-recycle").exists()),
        "no recycling marker is left"
    );
}

/// Runs the first plan with `--merge` and returns the parked worktree.
fn integrate_first(repo: &TestRepo) -> PathBuf {
    let plan = one_packet_plan(repo, "First", "p1");
    let out = repo.run_plan(&plan, WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let first = PathBuf::from(packet_record(repo, "p1")["worktree"].as_str().unwrap());
    assert!(!first.exists(), "the integrated worktree left its path");
    let pool = parked(repo);
    assert_eq!(pool.len(), 1, "{pool:?}");
    assert!(pool[0].join("target/cache").exists(), "the cache is kept");
    first
}

#[test]
fn an_integrated_worktree_is_parked_and_recycled_for_the_next_packet() {
    let repo = recycling_repo();
    let first = integrate_first(&repo);
    let plan = one_packet_plan(&repo, "Second", "q1");
    let out = repo.run_plan(&plan, WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_recycled(&repo, &text(&out), &first);
}

#[test]
fn a_kill_in_the_middle_of_recycling_is_finished_on_resume() {
    let repo = recycling_repo();
    let first = integrate_first(&repo);
    let plan = one_packet_plan(&repo, "Second", "q1");
    let root = repo.scratch().join("wt");
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        WORKER,
        "--worktree-root",
        root.to_str().unwrap(),
    ];
    let out = orchestra_with_env(
        &repo.path,
        &args,
        &[("ORCHESTRA_CRASH_AT", "recycle-moved")],
    );
    assert!(!out.status.success(), "{}", text(&out));
    // Killed after the move, before the checkout: the marker names the destination.
    let wt = PathBuf::from(packet_record(&repo, "q1")["worktree"].as_str().unwrap());
    assert!(wt.exists());
    assert!(parked(&repo).is_empty());
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(packet_record(&repo, "q1")["state"], "succeeded");
    assert_recycled(&repo, &text(&resumed), &first);
}

#[test]
fn a_dirty_worktree_is_never_parked_and_ignore_changes_drop_the_cache() {
    let repo = recycling_repo();
    let info = RepoInfo::discover(&repo.path).unwrap();
    let root = repo.scratch().join("wt");
    let path = root.join("run-a").join("p1");
    let request = WorktreeRequest {
        repo: &info,
        path: &path,
        branch: "orchestra/run-a/p1",
        base: &info.head,
        reuse: Reuse::ReportDirty,
    };
    let (_, created) = create(&request).unwrap();
    assert_eq!(created, Created::Fresh);
    std::fs::write(path.join("notes.txt"), "unsaved").unwrap();
    assert_eq!(park(&info, &path, 2).unwrap(), None);
    assert_eq!(
        std::fs::read_to_string(path.join("notes.txt")).unwrap(),
        "unsaved"
    );
    std::fs::remove_file(path.join("notes.txt")).unwrap();
    std::fs::create_dir_all(path.join("target")).unwrap();
    std::fs::write(path.join("target/cache"), "old").unwrap();
    let parked_at = park(&info, &path, 2).unwrap().unwrap();
    assert_eq!(parked_at.parent().unwrap(), pool_dir(&path).unwrap());
    // A full pool takes no more.
    assert_eq!(park(&info, &parked_at, 1).unwrap(), None);

    // The next base stops ignoring `target/`: the cache must not appear as a change.
    repo.write(".gitignore", "build/\n");
    repo.git(&["commit", "-qam", "ignore build/ instead"]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    let next = root.join("run-b").join("q1");
    let request = WorktreeRequest {
        path: &next,
        branch: "orchestra/run-b/q1",
        base: &head,
        ..request
    };
    let (wt, created) = create(&request).unwrap();
    assert_eq!(created, Created::Recycled { from: parked_at });
    assert_eq!(wt.head, head);
    assert!(!next.join("target").exists());
    assert_eq!(
        std::fs::read_to_string(next.join(".gitignore")).unwrap(),
        "build/\n"
    );
}

#[test]
fn a_recycled_worktree_hands_no_planted_ignored_file_to_the_next_packet() {
    let repo = recycling_repo();
    // The first packet's worker plants a tool later packets would run.
    let planter =
        format!("{WORKER}; mkdir -p node_modules/.bin; echo 'echo pwned' > node_modules/.bin/jest");
    let plan = one_packet_plan(&repo, "First", "p1");
    let out = repo.run_plan(&plan, &planter, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let pool = parked(&repo);
    assert_eq!(pool.len(), 1, "{pool:?}");
    assert!(
        pool[0].join("target/cache").exists(),
        "the kept cache stays"
    );
    assert!(
        !pool[0].join("node_modules").exists(),
        "an ignored directory outside keep_ignored was parked"
    );
    let plan = one_packet_plan(&repo, "Second", "q1");
    let out = repo.run_plan(
        &plan,
        "ls node_modules/.bin/jest > out-q1.txt 2>&1; true",
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("recycled from"), "{}", text(&out));
    let wt = PathBuf::from(packet_record(&repo, "q1")["worktree"].as_str().unwrap());
    assert!(!wt.join("node_modules/.bin/jest").exists());
}

#[test]
fn a_worktree_holding_ignored_files_worth_saving_is_not_parked() {
    let repo = recycling_repo();
    repo.write(".gitignore", "target/\nnode_modules/\n*.log\n");
    repo.git(&["commit", "-qam", "ignore logs"]);
    let plan = one_packet_plan(&repo, "First", "p1");
    let out = repo.run_plan(
        &plan,
        &format!("{WORKER}; echo notes > debug.log"),
        &["--merge"],
    );
    assert!(out.status.success(), "{}", text(&out));
    // `debug.log` is not build output: the worktree is removed the usual way, its ignored
    // files archived, rather than parked with them.
    assert!(parked(&repo).is_empty());
    let run = status_json(&repo.path)["run"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let saved = repo
        .path
        .join(format!(".git/orchestra/runs/{run}/p1/saved"));
    let archived = std::fs::read_dir(&saved)
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".tar"))
        })
        .unwrap_or(false);
    assert!(
        archived,
        "the ignored files were archived in {}",
        saved.display()
    );
}

#[test]
fn the_default_configuration_recycles_the_worktree_of_an_integrated_packet() {
    // No `[worktree] recycle` anywhere: the default pool still parks the first packet's
    // worktree, and the next one-packet run takes it.
    let repo = TestRepo::new();
    let worker = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;
    let first = repo.run_plan(&one_packet_plan(&repo, "First", "p1"), worker, &["--merge"]);
    assert!(first.status.success(), "{}", text(&first));
    assert_eq!(parked(&repo).len(), 1, "the default configuration parks it");
    let second = repo.run_plan(
        &one_packet_plan(&repo, "Second", "q1"),
        worker,
        &["--merge"],
    );
    assert!(second.status.success(), "{}", text(&second));
    assert!(text(&second).contains("recycled from"), "{}", text(&second));
}

#[test]
fn recycle_zero_turns_recycling_off() {
    let repo = TestRepo::new();
    repo.write(".orchestra/config.toml", "[worktree]\nrecycle = 0\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "no recycling"]);
    let worker = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;
    let first = repo.run_plan(&one_packet_plan(&repo, "First", "p1"), worker, &["--merge"]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(
        parked(&repo).is_empty(),
        "nothing is parked with recycle = 0"
    );
    let second = repo.run_plan(
        &one_packet_plan(&repo, "Second", "q1"),
        worker,
        &["--merge"],
    );
    assert!(second.status.success(), "{}", text(&second));
    assert!(
        !text(&second).contains("recycled from"),
        "{}",
        text(&second)
    );
}

/// Returns the `(start, end)` times in nanoseconds of every write of `data.slow` through a smudge
/// filter that takes half a second, in a run of two packets that both take a parked worktree
/// whose `data.slow` differs from their base's.
fn recycled_checkouts_running() -> Vec<(u128, u128)> {
    let repo = recycling_repo();
    let log = repo.scratch().join("checkouts.log");
    let smudge = repo.scratch().join("slow-smudge");
    std::fs::write(
        &smudge,
        format!(
            "#!/bin/sh\ns=$(date +%s%N); sleep 0.5; cat; echo \"$s $(date +%s%N)\" >> '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    crate::support::make_executable(&smudge);
    repo.git(&["config", "filter.slow.smudge", smudge.to_str().unwrap()]);
    repo.git(&["config", "filter.slow.clean", "cat"]);
    repo.write(".gitattributes", "*.slow filter=slow\n");
    repo.write("data.slow", "first\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "a file checked out through a slow filter"]);
    let two = |objective: &str, a: &str, b: &str| {
        repo.write_plan(
            &format!("{a}.toml"),
            &format!(
                "objective = \"{objective}\"\nmax_parallel = 2\n\n{}{}",
                packet(a, &format!("\"out-{a}.txt\""), "", ""),
                packet(b, &format!("\"out-{b}.txt\""), "", "")
            ),
        )
    };
    let out = repo.run_plan(&two("First", "p1", "p2"), WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        parked(&repo).len(),
        2,
        "both integrated worktrees are parked"
    );
    repo.write("data.slow", "second\n");
    repo.git(&["commit", "-qam", "the slow file changes"]);
    let _ = std::fs::remove_file(&log);
    let out = repo.run_plan(&two("Second", "q1", "q2"), WORKER, &[]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert_eq!(shown.matches("recycled from").count(), 2, "{shown}");
    for id in ["q1", "q2"] {
        let wt = PathBuf::from(packet_record(&repo, id)["worktree"].as_str().unwrap());
        assert_eq!(
            std::fs::read_to_string(wt.join("data.slow")).unwrap(),
            "second\n"
        );
    }
    super::worktree_overlap::spans_in(&log)
}

#[test]
fn worktrees_recycled_together_are_checked_out_at_the_same_time() {
    let spans = recycled_checkouts_running();
    assert!(
        spans.len() >= 2,
        "one checkout per recycled worktree: {spans:?}"
    );
    assert!(
        super::worktree_overlap::any_overlap(&spans),
        "the recycled checkouts ran one after another, under the registration lock: {spans:?}"
    );
}

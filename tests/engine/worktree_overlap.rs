//! Packets that start together do not queue behind each other's worktree checkout or
//! validation: a process registers one worktree at a time, but the checkout that writes its
//! files and the `git status` that validates it run outside that lock.

use crate::support::*;

const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Returns the `(start, end)` times in nanoseconds of every fresh-checkout validation (`git
/// status --porcelain=v2 --branch`) of a run of `n` independent packets, each slowed by a
/// `git` on `PATH` that sleeps half a second in them.
fn validations_running(n: usize) -> Vec<(u128, u128)> {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Start together\"\nmax_parallel = {n}\n\n{}",
        independent_packets(n)
    );
    let plan = repo.write_plan("plan.toml", &body);
    let real = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| std::path::Path::new(dir).join("git"))
        .find(|p| p.is_file())
        .unwrap();
    let bin = repo.scratch().join("slow-status-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = repo.scratch().join("validations.log");
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \"$*\" in *'status --porcelain=v2 --branch'*)\n  s=$(date +%s%N); sleep 0.5; '{real}' \"$@\"; rc=$?\n  echo \"$s $(date +%s%N)\" >> '{log}'; exit $rc;;\nesac\nexec '{real}' \"$@\"\n",
            real = real.display(),
            log = log.display()
        ),
    )
    .unwrap();
    make_executable(&wrapper);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = repo.run_plan_with_env(&plan, WORKER, &[], &[("PATH", &path)]);
    assert!(out.status.success(), "{}", text(&out));
    spans_in(&log)
}

#[test]
fn fresh_worktrees_of_packets_starting_together_are_validated_at_the_same_time() {
    let spans = validations_running(3);
    assert!(
        spans.len() >= 3,
        "one validation per fresh worktree: {spans:?}"
    );
    assert!(
        any_overlap(&spans),
        "the validations ran one after another, as if under the registration lock: {spans:?}"
    );
}

/// Returns the `(start, end)` times in nanoseconds of every file checkout of `.slow` files in a
/// run of `n` independent packets: a smudge filter that takes half a second writes them.
fn checkouts_running(n: usize) -> Vec<(u128, u128)> {
    let repo = TestRepo::new();
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
    make_executable(&smudge);
    repo.git(&["config", "filter.slow.smudge", smudge.to_str().unwrap()]);
    repo.git(&["config", "filter.slow.clean", "cat"]);
    repo.write(".gitattributes", "*.slow filter=slow\n");
    repo.write("data.slow", "written slowly\n");
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "a file checked out through a slow filter",
    ]);
    let body = format!(
        "objective = \"Check out together\"\nmax_parallel = {n}\n\n{}",
        independent_packets(n)
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let wt = root.read_dir().unwrap().next().unwrap().unwrap().path();
    let checked_out = wt.read_dir().unwrap().next().unwrap().unwrap().path();
    assert_eq!(
        std::fs::read_to_string(checked_out.join("data.slow")).unwrap(),
        "written slowly\n",
        "the filter wrote the file"
    );
    spans_in(&log)
}

#[test]
fn fresh_worktrees_of_packets_starting_together_are_checked_out_at_the_same_time() {
    let spans = checkouts_running(3);
    assert!(
        spans.len() >= 3,
        "one checkout per fresh worktree: {spans:?}"
    );
    assert!(
        any_overlap(&spans),
        "the checkouts ran one after another, under the registration lock: {spans:?}"
    );
}

/// Runs a one-packet plan killed (`ORCHESTRA_CRASH_AT`) once its worktree is registered and
/// before its files are checked out; returns the worktree's path.
fn kill_between_registration_and_checkout(repo: &TestRepo) -> std::path::PathBuf {
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Cut short\"\n\n{}",
            packet("p1", "\"out-p1.txt\"", "", "")
        ),
    );
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[("ORCHESTRA_CRASH_AT", "worktree-registered")],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let wt = root.join(run_id(&repo.path)).join("p1");
    // Registered, still locked as initializing, and holding nothing but its `.git` link.
    let admin = repo.path.join(".git/worktrees/p1");
    assert_eq!(
        std::fs::read_to_string(admin.join("locked"))
            .unwrap()
            .trim(),
        "initializing"
    );
    let names: Vec<_> = std::fs::read_dir(&wt)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [".git"], "{names:?}");
    wt
}

#[test]
fn a_kill_between_registration_and_checkout_is_repaired_on_resume() {
    let repo = TestRepo::new();
    let wt = kill_between_registration_and_checkout(&repo);
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    let packets = status_json(&repo.path)["packets"].clone();
    assert_eq!(packets[0]["state"], "succeeded", "{packets}");
    assert_eq!(
        std::fs::read_to_string(wt.join("out-p1.txt")).unwrap(),
        "p1\n"
    );
    // The repaired worktree is a finished registration of the packet's branch.
    let listed = git(&repo.path, &["worktree", "list", "--porcelain"]);
    assert!(
        listed.contains(&format!("worktree {}", wt.display())),
        "{listed}"
    );
    assert!(!listed.contains("locked"), "{listed}");
}

#[test]
fn a_kill_between_registration_and_checkout_is_dropped_by_cancel() {
    let repo = TestRepo::new();
    let wt = kill_between_registration_and_checkout(&repo);
    let cancelled = orchestra(&repo.path, &["cancel", &run_id(&repo.path)]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    assert!(!repo.path.join(".git/worktrees/p1").exists());
    let listed = git(&repo.path, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains(&wt.display().to_string()), "{listed}");
}

/// Returns the `(start, end)` pairs a timing log holds, one `start end` line each.
pub(super) fn spans_in(log: &std::path::Path) -> Vec<(u128, u128)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let (s, e) = l.split_once(' ').unwrap();
            (s.parse().unwrap(), e.parse().unwrap())
        })
        .collect()
}

/// Returns true if and only if two of `spans` overlap in time.
pub(super) fn any_overlap(spans: &[(u128, u128)]) -> bool {
    spans
        .iter()
        .enumerate()
        .any(|(i, a)| spans[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1))
}

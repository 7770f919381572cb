//! Crash and signal consistency of `run --merge`: a run killed at any journaled event of its
//! packets or of their integration, or interrupted while a worker resolves a conflict, is
//! resumed until the target holds every packet's work — and is `completed` only then; what
//! the journal of the integration phase must say, and a target refused before any work.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::*;

/// Two packets that both rewrite README.md: the second conflicts at integration.
pub(crate) fn conflicting_plan(repo: &TestRepo) -> PathBuf {
    let body = format!(
        "objective = \"Crash while merging\"\n\n{}{}",
        packet(
            "pa",
            "\"README.md\"",
            "",
            "\"grep -q 'pa was here' README.md\""
        ),
        packet(
            "pb",
            "\"README.md\"",
            "",
            "\"grep -q 'pb was here' README.md\""
        ),
    );
    repo.write_plan("plan.toml", &body)
}

/// Writes its packet's line; in a conflict round (ORCHESTRA_FIXES_FILE set) it keeps both
/// sides by dropping the conflict markers.
pub(crate) const RESOLVING_WORKER: &str = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' README.md; else echo "$ORCHESTRA_PACKET was here" > README.md; fi"#;

/// Asserts that `main` holds both packets' work, resolved, and that the run is completed.
fn assert_integrated(repo: &TestRepo, context: &str) {
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(
        readme.contains("pa was here") && readme.contains("pb was here"),
        "{context}: main lacks a packet's work: {readme}"
    );
    assert!(!readme.contains("<<<<<<<"), "{context}: {readme}");
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed", "{context}: {v:#}");
}

/// Returns the kinds of the journaled events of the newest run of `repo`, oldest first.
fn journal(repo: &TestRepo) -> Vec<String> {
    let run = run_id(&repo.path);
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let events = store.events(&run, 0).unwrap();
    events.iter().map(|e| e.event.kind().to_string()).collect()
}

#[test]
fn run_merge_killed_at_any_journaled_event_is_resumed_until_main_holds_every_packet() {
    // First count the events of an uninterrupted run: its packets and their integration.
    let probe = TestRepo::new();
    let plan = conflicting_plan(&probe);
    let out = probe.run_plan(&plan, RESOLVING_WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_integrated(&probe, "uninterrupted");
    let kinds = journal(&probe);
    for kind in [
        "integration_requested",
        "merge_started",
        "packet_conflicted",
        "packet_integrated",
        "target_advancing",
        "merge_finished",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
    }
    // The request comes before any merge, and the run finishes only after the merge.
    let at = |kind: &str| kinds.iter().position(|k| k == kind).unwrap();
    assert!(
        at("integration_requested") < at("merge_started"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    assert!(at("merge_finished") < kinds.len() - 1, "{kinds:?}");
    // The engine journals everything but `run_created` and the command's request.
    let total = kinds.len() - 2;

    // Then kill the process right after each of them in turn, and resume.
    for n in 1..total {
        let repo = TestRepo::new();
        let plan = conflicting_plan(&repo);
        let root = repo.scratch().join("wt");
        crash_then_resume(&repo, &plan, &root, n);
        assert_eq!(
            repo.git(&["fsck", "--no-progress", "--no-dangling"]),
            "",
            "crash point {n}"
        );
    }
}

#[test]
fn ctrl_c_while_a_worker_resolves_a_conflict_leaves_the_run_interrupted_and_resume_merges() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = conflicting_plan(&repo);
    let marker = repo.scratch().join("resolving");
    // The first conflict round hangs until it is stopped; the next one resolves.
    let worker = format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ] && [ ! -f {m} ]; then touch {m}; sleep 60; fi; {RESOLVING_WORKER}"#,
        m = marker.display()
    );
    let root = repo.scratch().join("wt");
    let mut child = orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            &worker,
            "--worktree-root",
            root.to_str().unwrap(),
            "--merge",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the conflict round never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let before_main = repo.git(&["rev-parse", "main"]);
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "interrupted", "{v:#}");
    let kinds = journal(&repo);
    assert!(!kinds.iter().any(|k| k == "packet_sent_back"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "merge_finished"), "{kinds:?}");
    // pa may be in already; pb is not.
    let readme = repo.git(&["show", "main:README.md"]);
    assert!(!readme.contains("pb was here"), "{readme}");
    assert!(repo.git(&["rev-parse", "main"]) == before_main || readme.contains("pa was here"));

    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_integrated(&repo, "resumed");
}

#[test]
fn run_merge_of_a_finished_run_killed_while_integrating_is_resumed_until_main_holds_it() {
    // The probe: run without --merge, then with it; the second part's events are counted.
    let probe = TestRepo::new();
    let plan = conflicting_plan(&probe);
    let out = probe.run_plan(&plan, RESOLVING_WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let before = journal(&probe).len();
    let out = probe.run_plan(&plan, RESOLVING_WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_integrated(&probe, "uninterrupted");
    let kinds = journal(&probe);
    let integrating = &kinds[before..];
    assert!(
        integrating.iter().any(|k| k == "integration_requested"),
        "{integrating:?}"
    );
    // The engine journals everything but the command's request and reopening.
    let total = integrating.len() - 2;
    for n in 1..total {
        let repo = TestRepo::new();
        let plan = conflicting_plan(&repo);
        let out = repo.run_plan(&plan, RESOLVING_WORKER, &[]);
        assert!(out.status.success(), "{}", text(&out));
        let root = repo.scratch().join("wt");
        crash_then_resume(&repo, &plan, &root, n);
    }
}

#[test]
fn a_packet_found_on_the_integration_branch_without_its_journal_entry_is_journaled_integrated() {
    // What a merge killed right after advancing the integration branch leaves: the branch
    // holds pa's work, the journal does not say so.
    let repo = TestRepo::new();
    let plan = conflicting_plan(&repo);
    let out = repo.run_plan(&plan, RESOLVING_WORKER, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let pa = repo.git(&["rev-parse", &format!("orchestra/{run}/pa")]);
    repo.git(&["branch", &format!("orchestra/{run}/integration"), &pa]);
    let out = repo.run_plan(&plan, RESOLVING_WORKER, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_integrated(&repo, "merged");
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let integrated: Vec<String> = store
        .events_of_kind(&run, git_orchestra::store::EventKind::PacketIntegrated)
        .unwrap()
        .into_iter()
        .filter_map(|e| e.event.packet().map(str::to_string))
        .collect();
    assert!(integrated.contains(&"pa".to_string()), "{integrated:?}");
    assert!(integrated.contains(&"pb".to_string()), "{integrated:?}");
}

#[test]
fn a_target_the_merge_could_not_advance_is_journaled_with_the_reason() {
    let repo = TestRepo::new();
    let plan = conflicting_plan(&repo);
    // main is checked out with an uncommitted change the merge would overwrite.
    repo.write("README.md", "local edit\n");
    let out = repo.run_plan(&plan, RESOLVING_WORKER, &["--merge"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let run = run_id(&repo.path);
    let store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    let finished = store
        .events_of_kind(&run, git_orchestra::store::EventKind::MergeFinished)
        .unwrap();
    let last = serde_json::to_value(&finished.last().unwrap().event).unwrap();
    assert_eq!(last["target_advanced"], false, "{last}");
    let note = last["target_note"].as_str().unwrap_or_default();
    assert!(note.contains("could not fast-forward"), "{last}");
    // The run finished only with that reason on record.
    assert_eq!(status_json(&repo.path)["run"]["state"], "completed");
}

#[test]
fn run_merge_with_a_target_that_is_no_branch_is_refused_before_any_packet_runs() {
    let repo = TestRepo::new();
    let plan = conflicting_plan(&repo);
    let before = refs(&repo.path);
    let out = repo.run_plan(&plan, RESOLVING_WORKER, &["--merge", "--target", "no-such"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("`no-such` is not a local branch"), "{all}");
    assert_eq!(refs(&repo.path), before, "packets ran: {all}");
}

#[test]
fn ctrl_c_while_the_merged_tree_is_validated_stops_at_once_and_resume_merges() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let marker = repo.scratch().join("validating");
    // Passes at once in the packet's worktree; on the merged tree the first run hangs.
    let validation = format!(
        r#"test -f out-p1.txt && case \"$PWD\" in */wt/*) true ;; *) [ -f {m} ] || {{ touch {m}; sleep 60; }} ;; esac"#,
        m = marker.display()
    );
    let body = format!(
        "objective = \"Stop the validation\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", &format!("\"{validation}\""))
    );
    let plan = repo.write_plan("plan.toml", &body);
    let root = repo.scratch().join("wt");
    let mut child = orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "echo p1 > out-p1.txt",
            "--worktree-root",
            root.to_str().unwrap(),
            "--merge",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the merged tree's validation never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = Instant::now();
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "took {:?}",
        stopped.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(status_json(&repo.path)["run"]["state"], "interrupted");
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(repo.git(&["show", "main:out-p1.txt"]), "p1");
    assert_eq!(status_json(&repo.path)["run"]["state"], "completed");
}

/// Runs `plan` with `--merge`, killed after its `n`th journaled event; checks the run is not
/// reported completed, resumes it, and checks the target holds every packet.
fn crash_then_resume(repo: &TestRepo, plan: &std::path::Path, root: &std::path::Path, n: usize) {
    let n_text = n.to_string();
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--worker-cmd",
        RESOLVING_WORKER,
        "--worktree-root",
        root.to_str().unwrap(),
        "--merge",
    ];
    let out = orchestra_with_env(
        &repo.path,
        &args,
        &[("ORCHESTRA_CRASH_AFTER_EVENTS", &n_text)],
    );
    assert_eq!(
        out.status.signal(),
        Some(9),
        "crash point {n}: {}",
        text(&out)
    );
    let state = status_json(&repo.path)["run"]["state"].clone();
    assert_ne!(
        state, "completed",
        "crash point {n}: completed before the merge"
    );
    let resumed = orchestra(&repo.path, &["resume"]);
    assert!(
        resumed.status.success(),
        "crash point {n}: {}",
        text(&resumed)
    );
    assert_integrated(repo, &format!("crash point {n}"));
}

//! Failures go back to the worker that can fix them: a failed validation command or scope check
//! becomes required fixes (`ORCHESTRA_FIXES_FILE`) for a bounded number of fix rounds.

use crate::support::*;

/// A worker that gets it wrong first and right once it is given fixes, keeping what the fixes
/// said in `fixes-seen.md`.
const LEARNS: &str = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" fixes-seen.md; echo ok > out.txt; else echo wrong > out.txt; echo "broken output line" >&2; fi"#;

#[test]
fn a_failed_validation_goes_back_to_the_worker_with_its_output_and_the_fix_lands() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Fix on validation\"\n\n{}",
        packet(
            "p1",
            "\"out.txt\", \"fixes-seen.md\"",
            "",
            "\"grep -q ok out.txt || { echo out.txt says $(cat out.txt); exit 3; }\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, LEARNS, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let branch = format!("orchestra/{run}/p1");
    assert_eq!(repo.git(&["show", &format!("{branch}:out.txt")]), "ok");
    let seen = repo.git(&["show", &format!("{branch}:fixes-seen.md")]);
    assert!(
        seen.contains("The validation command `grep -q ok out.txt"),
        "{seen}"
    );
    assert!(seen.contains("exit 3"), "{seen}");
    assert!(seen.contains("out.txt says wrong"), "{seen}");
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");
}

#[test]
fn fix_rounds_are_bounded_and_the_reason_says_how_many_were_tried() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    let body = format!(
        "objective = \"Never fixed\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -e never\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let counter = repo.scratch().join("runs.txt");
    let worker = format!("echo run >> {}; echo x > out.txt", counter.display());
    let out = repo.run_plan(&plan, &worker, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let runs = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(runs.lines().count(), 3, "one run and two fix rounds");
    let v = status_json(&repo.path);
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("validation `test -e never` failed"),
        "{reason}"
    );
    assert!(reason.contains("after 2 fix rounds"), "{reason}");

    // `[run] fix_rounds = 0` fails at once.
    let repo = TestRepo::new();
    repo.scratch_writable();
    repo.write(".orchestra/config.toml", "[run]\nfix_rounds = 0\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    let plan = repo.write_plan("plan.toml", &body);
    let counter = repo.scratch().join("runs.txt");
    let worker = format!("echo run >> {}; echo x > out.txt", counter.display());
    let out = repo.run_plan(&plan, &worker, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let runs = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(runs.lines().count(), 1, "no fix round");
}

#[test]
fn a_scope_violation_is_sent_back_and_never_enters_the_branch_history() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Stay in scope\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -f out.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // First the worker also writes a file outside its scope; given fixes, it removes it.
    let worker = r#"echo ok > out.txt; if [ -n "$ORCHESTRA_FIXES_FILE" ]; then grep -q "outside.txt" "$ORCHESTRA_FIXES_FILE" && rm -f outside.txt; else echo secret > outside.txt; fi"#;
    let out = repo.run_plan(&plan, worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let branch = format!("orchestra/{run}/p1");
    let touched = repo.git(&[
        "log",
        "--format=",
        "--name-only",
        &format!("main..{branch}"),
    ]);
    assert!(touched.contains("out.txt"), "{touched}");
    assert!(
        !touched.contains("outside.txt"),
        "no commit of the branch holds the out-of-scope file: {touched}"
    );
}

#[test]
fn a_packet_that_changes_nothing_says_so_and_fails_unless_it_may_be_empty() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Do nothing\"\n\n{}",
        packet("p1", "\"out.txt\"", "", ""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, "echo 'I edited out.txt'", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("[p1] no changes: the worker changed no file"),
        "{all}"
    );
    assert!(
        !all.contains("files changed)"),
        "no commit is claimed: {all}"
    );
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    let reason = v["packets"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("changed no file"), "{reason}");
    assert!(reason.contains("may_be_empty = true"), "{reason}");
    let run = run_id(&repo.path);
    assert_eq!(
        repo.git(&["rev-parse", &format!("orchestra/{run}/p1")]),
        repo.git(&["rev-parse", "main"]),
        "no commit was made"
    );

    // Marked as possibly empty, the same packet succeeds and says it changed nothing.
    let repo = TestRepo::new();
    let plan = repo.write_plan(
        "plan.toml",
        &body.replace(
            "validation = []\n",
            "validation = []\nmay_be_empty = true\n",
        ),
    );
    let out = repo.run_plan(&plan, "true", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("[p1] no changes"), "{}", text(&out));
}

/// A worker that leaves an AWS key in its file first and takes it out once it is given fixes,
/// keeping what the fixes said in `fixes-seen.md`.
const LEAKS_THEN_FIXES: &str = r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" fixes-seen.md; echo "key = from_env()" > out.txt; else echo "key = AKIAIOSFODNN7EXAMPLE" > out.txt; fi"#;

#[test]
fn the_deterministic_checks_gate_every_packet_and_their_findings_go_back_as_fixes() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Gate in the pipeline\"\n\n{}",
        packet(
            "p1",
            "\"out.txt\", \"fixes-seen.md\"",
            "",
            "\"test -f out.txt\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, LEAKS_THEN_FIXES, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains("[p1] review by deterministic: rejected (1 blocking finding)"),
        "{progress}"
    );
    assert!(
        progress.contains("[p1] review by deterministic (fix round 1): approved"),
        "{progress}"
    );
    // The worker was told what was found, without the key itself.
    let run = run_id(&repo.path);
    let branch = format!("orchestra/{run}/p1");
    let seen = repo.git(&["show", &format!("{branch}:fixes-seen.md")]);
    assert!(seen.contains("out.txt:1"), "{seen}");
    assert!(!seen.contains("AKIAIOSFODNN7EXAMPLE"), "{seen}");
    // What landed is the fixed file; the key is in no commit the target reached.
    assert_eq!(repo.git(&["show", "main:out.txt"]), "key = from_env()");
    let history = repo.git(&["log", "-p", "main"]);
    assert!(!history.contains("AKIAIOSFODNN7EXAMPLE"), "{history}");
    // The pipeline's verdict is stored on the packet's commit, naming its reviewer.
    let tip = repo.git(&["rev-parse", &branch]);
    let note = repo.git(&["notes", "--ref=orchestra/review", "show", &tip]);
    assert!(note.contains("\"reviewer\": \"deterministic\""), "{note}");
    assert!(note.contains("\"verdict\": \"approve\""), "{note}");
}

#[test]
fn a_killed_worker_runs_again_after_a_pause_and_a_failing_one_does_not() {
    let repo = TestRepo::new();
    repo.scratch_writable();
    repo.write(
        ".orchestra/config.toml",
        "[run]\nretries = 2\nretry_delay_ms = 20\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    let body = format!(
        "objective = \"Try again\"\n\n{}",
        packet("p1", "\"out.txt\"", "", "\"test -f out.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    // Killed on its first try (a crash, the OOM killer), fine on the second.
    let marker = repo.scratch().join("killed-once");
    let worker = format!(
        "if [ ! -e {m} ]; then touch {m}; kill -9 $$; fi; echo ok > out.txt",
        m = marker.display()
    );
    let out = repo.run_plan(&plan, &worker, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains("may pass on another try: try 2 in 0.0s"),
        "{progress}"
    );
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "succeeded", "{v}");

    // A worker that exits with a failure said so itself: it is not run again.
    let repo = TestRepo::new();
    repo.scratch_writable();
    let plan = repo.write_plan("plan.toml", &body);
    let counter = repo.scratch().join("runs.txt");
    let worker = format!("echo run >> {}; exit 3", counter.display());
    let out = repo.run_plan(&plan, &worker, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let runs = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(runs.lines().count(), 1);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("another try"));
}

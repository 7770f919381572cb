//! `git orchestra retry`: a finished run's failed packet runs again from its worktree, with its
//! skipped dependents and a note for its worker, and lands the way the run was asked to.

use crate::support::*;

/// Fails until `mark` exists; keeps what `ORCHESTRA_FIXES_FILE` said in `note-seen.txt`.
fn flaky_worker(mark: &std::path::Path) -> String {
    format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" note-seen.txt; fi; test -f {} || exit 1; echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#,
        mark.display()
    )
}

#[test]
fn retry_runs_the_failed_packet_and_its_skipped_dependent_again_and_merges_them() {
    let repo = TestRepo::new();
    let body = format!(
        "objective = \"Retry me\"\n\n{}{}",
        packet(
            "p1",
            "\"out-p1.txt\", \"note-seen.txt\"",
            "",
            "\"test -f out-p1.txt\""
        ),
        packet(
            "p2",
            "\"out-p2.txt\", \"note-seen.txt\"",
            "\"p1\"",
            "\"test -f out-p2.txt\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let mark = repo.scratch().join("ready");
    let out = repo.run_plan(&plan, &flaky_worker(&mark), &["--merge"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["packets"][0]["state"], "failed", "{v}");
    assert_eq!(v["packets"][1]["state"], "skipped", "{v}");
    let run = run_id(&repo.path);

    // Nothing to retry by name that did not fail; an unknown packet is named with the known.
    let out = orchestra(&repo.path, &["retry", &run, "ghost"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("p1, p2"), "{}", text(&out));

    std::fs::write(&mark, "").unwrap();
    let out = orchestra(&repo.path, &["retry", "--note", "the mark is there now"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("retrying p1, p2"), "{}", text(&out));
    let v = status_json(&repo.path);
    assert_eq!(v["run"]["state"], "completed", "{v}");
    assert_eq!(v["packets"][0]["attempt"], 2, "{v}");
    // The run was merged before, so the retried work is merged too: it is on main.
    assert_eq!(repo.git(&["show", "main:out-p1.txt"]), "p1");
    assert_eq!(repo.git(&["show", "main:out-p2.txt"]), "p2");
    let seen = repo.git(&["show", &format!("orchestra/{run}/p1:note-seen.txt")]);
    assert!(seen.contains("the mark is there now"), "{seen}");
    // Both attempts' logs are kept.
    let dir = repo.path.join(format!(".git/orchestra/runs/{run}/p1"));
    assert!(dir.join("worker-1.log").is_file() && dir.join("worker-2.log").is_file());

    // A run with nothing left to retry says so and changes nothing.
    let out = orchestra(&repo.path, &["retry", &run]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("no failed or skipped packet to retry"),
        "{}",
        text(&out)
    );
}

/// Journals a `start` run `id` that stopped while planning, as a killed `start` leaves it.
fn unfinished_start_run(repo: &TestRepo, id: &str) {
    use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};
    let started: WorkflowEvent = serde_json::from_value(serde_json::json!({
        "type": "started",
        "objective": "An older objective",
        "base": "main",
        "settings": {"yes": true, "merge": false, "clarify": false, "worker_cmd": null,
                     "max_parallel": null},
    }))
    .unwrap();
    let common = repo.path.join(".git");
    StartJournal::open(&common, id)
        .unwrap()
        .append(&started)
        .unwrap();
    assert!(git_orchestra::status::start_state(&common, id).is_some_and(|s| !s.phase.is_final()));
}

/// Runs `git orchestra <args>` with a model no request reaches (a closed local port), so a
/// command that wrongly goes on with a `start` run fails at once instead of asking a model.
fn orchestra_offline(repo: &TestRepo, args: &[&str]) -> std::process::Output {
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", "http://127.0.0.1:9/v1"),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    orchestra_with_env(&repo.path, args, &env)
}

/// Runs a one-packet plan whose worker fails until `mark` exists; returns the run's id.
fn failed_run(repo: &TestRepo, mark: &std::path::Path) -> String {
    let body = format!(
        "objective = \"Retry me\"\n\n{}",
        packet(
            "p1",
            "\"out-p1.txt\", \"note-seen.txt\"",
            "",
            "\"test -f out-p1.txt\""
        ),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, &flaky_worker(mark), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    run_id(&repo.path)
}

#[test]
fn retry_without_a_run_retries_the_newest_run_not_an_older_unfinished_start_run() {
    let repo = TestRepo::new();
    unfinished_start_run(&repo, "older-start");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mark = repo.scratch().join("ready");
    let run = failed_run(&repo, &mark);
    assert_ne!(run, "older-start");

    std::fs::write(&mark, "").unwrap();
    // The model only reviews the retried packet: a `start` run picked by mistake would plan.
    let scripts = serde_json::json!([
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let out = orchestra_with_env(&repo.path, &["retry"], &env);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("retrying p1 of run {run}")),
        "{}",
        text(&out)
    );
    assert_eq!(status_json(&repo.path)["run"]["state"], "completed");
    // The older `start` run was left where it stopped.
    let state = git_orchestra::status::start_state(&repo.path.join(".git"), "older-start");
    assert!(state.is_some_and(|s| !s.phase.is_final()));
}

#[test]
fn retry_resume_cancel_and_pause_without_a_run_name_the_newest_run_when_it_does_not_fit() {
    let repo = TestRepo::new();
    unfinished_start_run(&repo, "older-start");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mark = repo.scratch().join("ready");
    std::fs::write(&mark, "").unwrap();
    let body = format!(
        "objective = \"Done\"\n\n{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let out = repo.run_plan(&plan, &flaky_worker(&mark), &[]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);

    // The newest run is completed: each command says so by name, never falling back to the
    // older unfinished `start` run.
    for cmd in ["retry", "resume", "cancel", "pause"] {
        let out = orchestra_offline(&repo, &[cmd]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", text(&out));
        assert!(text(&out).contains(&run), "{cmd}: {}", text(&out));
        assert!(!text(&out).contains("older-start"), "{cmd}: {}", text(&out));
    }
    let state = git_orchestra::status::start_state(&repo.path.join(".git"), "older-start");
    assert!(state.is_some_and(|s| !s.phase.is_final()));
}

#[test]
fn diff_and_merge_without_a_run_name_a_newer_planning_start_run_not_an_older_run() {
    let repo = TestRepo::new();
    let mark = repo.scratch().join("never");
    let failed = failed_run(&repo, &mark);
    std::thread::sleep(std::time::Duration::from_millis(20));
    unfinished_start_run(&repo, "newer-start");
    let v = status_json(&repo.path);
    assert_eq!(v["planning"]["id"], "newer-start", "{v}");
    for args in [&["diff"][..], &["merge"][..]] {
        let out = orchestra_offline(&repo, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("`newer-start`"),
            "{args:?}: {}",
            text(&out)
        );
        assert!(
            text(&out).contains("no packets yet"),
            "{args:?}: {}",
            text(&out)
        );
        assert!(!text(&out).contains(&failed), "{args:?}: {}", text(&out));
    }
}

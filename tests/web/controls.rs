//! The run page offers only the controls that apply to the run in its state, and shows what
//! a `start` run's clarifier and planner have produced while they work.

use git_orchestra::orchestrator::{StartJournal, WorkflowEvent, WorkflowState as S};
use git_orchestra::store::{Event, NewPacket, NewRun, Store};
use serde_json::{Value, json};

use crate::web::view::{send, session, ui};

fn run_page(url: &str, run: &str) -> Value {
    let page = session(url);
    let (status, answer) = send(
        &page.addr,
        &format!(
            "GET /api/run/{run} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{answer}");
    serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or_default()).unwrap()
}

fn transition(j: &StartJournal, from: S, to: S) {
    j.append(&WorkflowEvent::Transition {
        from,
        to,
        reason: "test".into(),
    })
    .unwrap();
}

/// Regression: the page showed pause, resume, retry and cancel on every run (a finished run
/// offered to pause and cancel), and a `start` run still planning showed only "No packets
/// yet." — not the requirements its clarifier settled on nor the planner's rounds.
#[test]
fn the_run_page_offers_only_the_controls_that_apply_and_shows_planning_as_it_goes() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_orchestra::demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let common = repo.join(".git");
    // A `start` run whose process died while planning: its clarifier said what is required,
    // its planner proposed one plan with a problem.
    let j = StartJournal::open(&common, "run-plan").unwrap();
    let started: WorkflowEvent = serde_json::from_value(json!({
        "type": "started", "objective": "Greet in French", "base": "HEAD",
        "settings": {"yes": false, "merge": false, "clarify": true, "worker_cmd": null, "max_parallel": null}
    }))
    .unwrap();
    j.append(&started).unwrap();
    transition(&j, S::Idle, S::Clarifying);
    let clarified: WorkflowEvent = serde_json::from_value(json!({
        "type": "clarified", "outcome": "clear",
        "requirements": ["greet() says Bonjour"], "assumptions": ["English stays the default"],
        "answers": []
    }))
    .unwrap();
    j.append(&clarified).unwrap();
    transition(&j, S::Clarifying, S::Planning);
    j.append(&WorkflowEvent::PlanProposed {
        round: 1,
        toml: "objective = \"Greet in French\"\n".into(),
        issues: vec!["the plan has no packet".into()],
    })
    .unwrap();

    // An engine run nobody drives, not yet finished.
    let mut store = Store::open(&common).unwrap();
    store
        .create_run(&NewRun {
            id: "run-engine".into(),
            objective: "engine".into(),
            base: "HEAD".into(),
            plan_toml: String::new(),
            plan_path: "plan.toml".into(),
            worker_cmd: Some("true".into()),
            max_parallel: 1,
            timeout_secs: 60,
            worktree_root: tmp.path().join("wt").display().to_string(),
            packets: vec![NewPacket {
                id: "p1".into(),
                title: "P1".into(),
                role: "coder".into(),
                branch: "orchestra/run-engine/p1".into(),
                worktree: tmp.path().join("wt/p1").display().to_string(),
            }],
        })
        .unwrap();

    let view = ui(&repo);
    let page = run_page(&view.url, "run-plan");
    // Nothing drives it: it can be resumed or cancelled, not paused.
    assert_eq!(page["controls"], json!(["resume", "cancel"]), "{page}");
    assert_eq!(
        page["progress"]["requirements"],
        json!(["greet() says Bonjour"]),
        "{page}"
    );
    assert_eq!(page["progress"]["rounds"][0]["round"], 1, "{page}");
    assert_eq!(
        page["progress"]["rounds"][0]["issues"],
        json!(["the plan has no packet"]),
        "{page}"
    );
    let page = run_page(&view.url, "run-engine");
    assert_eq!(page["controls"], json!(["resume", "cancel"]), "{page}");

    // Ended runs offer nothing to stop or continue.
    transition(&j, S::Planning, S::Cancelled);
    store.record("run-engine", &Event::RunCancelled).unwrap();
    for run in ["run-plan", "run-engine"] {
        let page = run_page(&view.url, run);
        assert_eq!(page["controls"], json!([]), "{run}: {page}");
    }
}

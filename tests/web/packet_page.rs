//! The packet page in a real browser: an agent's transcripts of several attempts and fix
//! rounds are shown as the terminal shows them — durations in seconds, a model retry as a
//! sentence, an error outcome with an error's icon — each attempt and round under its own
//! heading, and its review rounds counted apart from its attempts.

use std::time::{Duration, SystemTime};

use git_orchestra::agent::{AgentEvent, AgentOutcome, WorkerState};

use crate::support::{TestRepo, orchestra, packet, run_id, text};
use crate::web::view;
use crate::web::webdriver::{Browser, tools};

const WAIT: Duration = Duration::from_secs(120);

/// Writes the transcript `name` of packet `p1` of `run` from `events` and `outcome`, last
/// modified `order` seconds after a minute from now (transcripts are shown oldest first).
fn transcript(
    repo: &TestRepo,
    run: &str,
    name: &str,
    events: &[AgentEvent],
    outcome: &AgentOutcome,
    order: u64,
) {
    let dir = git_orchestra::exec::run_dir(&repo.path.join(".git"), run).join("p1");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let mut file = std::fs::File::create(&path).unwrap();
    for e in events {
        e.transcribe(&mut file, &[]);
    }
    use std::io::Write;
    writeln!(
        file,
        "{{\"type\":\"outcome\",\"outcome\":{}}}",
        serde_json::to_string(outcome).unwrap()
    )
    .unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(60 + order))
        .unwrap();
}

fn model_call(turn: u32, ms: u64) -> AgentEvent {
    AgentEvent::ModelCall {
        turn,
        model: "local-coder".into(),
        input_tokens: 1200,
        output_tokens: 80,
        cost: None,
        ms,
    }
}

/// Writes packet `p1`'s transcripts of `run`: attempt 1 (a slow model call, a retry, an
/// error), its fix round 1 (a tool call, completed) and attempt 2 (completed).
fn write_transcripts(repo: &TestRepo, run: &str) {
    let failed = AgentOutcome {
        state: WorkerState::Error,
        reason: "the model server is unreachable".into(),
        ..AgentOutcome::default()
    };
    let done = AgentOutcome {
        state: WorkerState::Completed,
        summary: Some("notes written".into()),
        ..AgentOutcome::default()
    };
    let retry = AgentEvent::Retry {
        model: "local-coder".into(),
        attempt: 1,
        delay_ms: 2000,
        error: "connection refused".into(),
    };
    transcript(
        repo,
        run,
        "worker-1.log",
        &[model_call(1, 79_245), retry],
        &failed,
        1,
    );
    let tool = AgentEvent::ToolCall {
        turn: 1,
        name: "write_file".into(),
        ok: true,
        ms: 1_234,
        summary: "wrote 1 line".into(),
        target: "notes.txt".into(),
        args: serde_json::Value::Null,
        output_tail: String::new(),
    };
    transcript(
        repo,
        run,
        "worker-1-fix-1.log",
        &[model_call(1, 500), tool],
        &done,
        2,
    );
    transcript(
        repo,
        run,
        "worker-2.log",
        &[model_call(1, 61_000)],
        &done,
        3,
    );
}

/// Returns the inner text of each element `selector` finds on the page.
fn texts(b: &Browser, selector: &str) -> Vec<String> {
    b.eval(&format!(
        "return [...document.querySelectorAll('{selector}')].map(e => e.innerText.trim())"
    ))
    .as_array()
    .unwrap()
    .iter()
    .map(|t| t.as_str().unwrap().to_string())
    .collect()
}

#[test]
fn the_packet_page_shows_attempts_and_fix_rounds_apart_in_the_terminals_words() {
    let Some((chromium, driver)) = tools() else {
        return;
    };
    let repo =
        TestRepo::with_files(&[("README.md", "# s\n"), ("w.sh", "echo notes > notes.txt\n")]);
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"notes\"\n\n{}",
            packet("p1", "\"notes.txt\"", "", "")
        ),
    );
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "sh w.sh",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    write_transcripts(&repo, &run);
    let mut store = git_orchestra::store::Store::open(&repo.path.join(".git")).unwrap();
    for (round, approved, blocking) in [(0, false, 2), (1, true, 0)] {
        let review = git_orchestra::store::Event::PacketReviewed {
            packet: "p1".into(),
            commit: "0".repeat(40),
            reviewer: "model-review".into(),
            approved,
            blocking,
            round,
            findings: Vec::new(),
        };
        store.record(&run, &review).unwrap();
    }

    let ui = view::ui(&repo.path);
    let b = Browser::start(&chromium, &driver);
    b.goto(&ui.url);
    b.goto(&format!("{}/packet/{run}/p1", ui.base));
    b.wait_for(
        "the activity",
        "const a = document.getElementById('activity'); return a && a.textContent.includes('local-coder')",
        WAIT,
    );
    let activity = b
        .eval("return document.getElementById('activity').innerText")
        .as_str()
        .unwrap()
        .to_string();
    // Durations as the terminal writes them.
    assert!(
        activity.contains("79.2s") && activity.contains("1.2s"),
        "{activity}"
    );
    assert!(!activity.contains(" ms"), "{activity}");
    // A retry is a sentence, not the event's JSON.
    assert!(
        activity.contains("retry 1 in 2.0s") && activity.contains("connection refused"),
        "{activity}"
    );
    assert!(
        !activity.contains("{\"") && !activity.contains("\"type\""),
        "{activity}"
    );
    // An error ends with an error's icon; only a completed run gets the tick.
    let outcomes = texts(&b, "#activity .outcome");
    assert_eq!(outcomes.len(), 3, "{activity}");
    assert!(outcomes[0].starts_with("✘ error"), "{outcomes:?}");
    assert!(outcomes[1].starts_with("✔ completed"), "{outcomes:?}");
    // Review rounds are counted apart from attempts (the run's own review gate came first),
    // each with its verdict's icon.
    let reviews = texts(&b, ".reviews > li");
    assert!(
        reviews.ends_with(&[
            "✘ review by model-review: rejected (2 blocking findings)".to_string(),
            "✔ review by model-review (fix round 1): approved".to_string(),
        ]),
        "{reviews:?}"
    );
    let header = texts(&b, ".packet-state .muted");
    assert!(
        header[0].starts_with(&format!("attempt 1 · {} review rounds", reviews.len())),
        "{header:?}"
    );
    // Each attempt and each fix round under its own heading, in order.
    let sections = texts(&b, "#activity .section");
    assert!(
        sections
            .ends_with(&["attempt 1", "attempt 1 · fix round 1", "attempt 2"].map(String::from)),
        "{sections:?}\n{activity}"
    );
}

//! The stall watchdog: a model whose output began and then streams nothing for the role's
//! stall timeout is noticed within a second of it, journaled, and the agent marked blocked;
//! silence before the first token is not a stall.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::agent::tools::Registry;
use git_orchestra::agent::{self, AgentEvent, Roles, WorkerState};
use git_orchestra::confine::ConfinedRoot;
use git_orchestra::llm::{self, Provider, RetryPolicy};
use serde_json::json;

use crate::agent::llm::profile;
use crate::agent::mock::MockServer;
use crate::support::TestRepo;

#[test]
fn a_model_silent_after_its_output_began_is_detected_as_stalled_and_the_agent_blocked() {
    // The answer begins, then pauses for 4 s; the role allows 1 s without progress, the
    // profile (transport) 10 s — so only the watchdog can notice in time.
    let server = MockServer::start(vec![json!({
        "pause_after": 1, "pause_ms": 4000,
        "sse": [{"choices": [{"index": 0, "delta": {"content": "begun "}, "finish_reason": null}]},
                {"choices": [{"index": 0, "delta": {"content": "late"}, "finish_reason": "stop"}]}, "[DONE]"]
    })]);
    let repo = TestRepo::new();
    let mut p = profile(&server, Provider::OpenaiCompatible);
    p.timeout = Duration::from_secs(10);
    let model = llm::connect(&p).unwrap();
    let mut role = Roles::builtin().unwrap().get("coder").unwrap().clone();
    role.stall_timeout_secs = 1;
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        context_tokens: 32_000,
        task: "Do something.".into(),
        root: &root,
        packet_files: None,
        registry: &registry,
        stop: &stop,
        policy: RetryPolicy::default(),
        price: None,
        answer: None,
        sandbox: None,
        text_answer: false,
    };
    let started = Instant::now();
    let mut blocked_at = None;
    let mut events = Vec::new();
    let outcome = agent::run(&spec, &mut |e| {
        if matches!(
            e,
            AgentEvent::State {
                to: WorkerState::Blocked,
                ..
            }
        ) {
            blocked_at.get_or_insert(started.elapsed());
        }
        events.push(e.clone());
    })
    .unwrap();
    let blocked_at = blocked_at.expect("the stall was reported as a state change");
    assert!(
        blocked_at >= Duration::from_secs(1) && blocked_at < Duration::from_millis(2500),
        "reported after {blocked_at:?}"
    );
    assert_eq!(outcome.state, WorkerState::Blocked, "{outcome:?}");
    assert!(
        outcome.reason.contains("stalled") && outcome.reason.contains("stall timeout"),
        "{}",
        outcome.reason
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ModelCall { .. })),
        "the late answer is not used: {events:?}"
    );
    // The run itself ends once the held answer arrives and is cut off, not at the transport
    // timeout.
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn a_model_silent_before_its_first_token_is_not_stalled_and_its_answer_is_used() {
    // A local server reads the prompt for 3 s before its first token; the role allows 1 s
    // without progress once output began — the request must not be dropped and sent again.
    let server = MockServer::start(vec![json!({
        "delay_ms": 3000,
        "sse": [{"choices": [{"index": 0, "delta": {"content": "late but right"}, "finish_reason": "stop"}]}, "[DONE]"]
    })]);
    let repo = TestRepo::new();
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let mut role = Roles::builtin().unwrap().get("coder").unwrap().clone();
    role.stall_timeout_secs = 1;
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        context_tokens: 32_000,
        task: "Answer.".into(),
        root: &root,
        packet_files: None,
        registry: &registry,
        stop: &stop,
        policy: RetryPolicy::default(),
        price: None,
        answer: None,
        sandbox: None,
        text_answer: true,
    };
    let outcome = agent::run(&spec, &mut |_| {}).unwrap();
    assert_eq!(outcome.state, WorkerState::Completed, "{outcome:?}");
    assert_eq!(outcome.summary.as_deref(), Some("late but right"));
    assert_eq!(server.requests().len(), 1, "the request was sent again");
}

#[test]
fn waiting_for_a_place_under_the_profiles_limit_is_not_a_stall() {
    let server = MockServer::start(vec![crate::agent::edit_diff::calls(
        "complete",
        json!({"summary": "done"}),
    )]);
    let repo = TestRepo::new();
    let inner = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let gate = std::sync::Arc::new(llm::Gate::new(1));
    let model = llm::Limited::new(inner, gate.clone());
    let mut role = Roles::builtin().unwrap().get("coder").unwrap().clone();
    role.stall_timeout_secs = 1;
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![&model],
        context_tokens: 32_000,
        task: "Do something.".into(),
        root: &root,
        packet_files: None,
        registry: &registry,
        stop: &stop,
        policy: RetryPolicy::default(),
        price: None,
        answer: None,
        sandbox: None,
        text_answer: false,
    };
    // Another packet holds the profile's only place for twice the stall timeout.
    let held = gate.acquire(&mut || true).unwrap();
    let outcome = std::thread::scope(|s| {
        let agent = s.spawn(|| agent::run(&spec, &mut |_| {}).unwrap());
        std::thread::sleep(Duration::from_millis(2000));
        drop(held);
        agent.join().unwrap()
    });
    assert_eq!(outcome.state, WorkerState::Completed, "{outcome:?}");
    assert_eq!(gate.peak(), 1);
}

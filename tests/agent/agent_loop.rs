//! The tool loop in a real temporary repository, driven by scripted model conversations.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use git_orchestra::agent::tools::Registry;
use git_orchestra::agent::{self, AgentEvent, AgentOutcome, Roles, WorkerState};
use git_orchestra::confine::ConfinedRoot;
use git_orchestra::llm::{self, Provider, RetryPolicy};

use crate::agent::llm::{SECRET, profile};
use crate::agent::mock::{MockServer, Recorded};
use crate::support::TestRepo;

pub(crate) struct Ran {
    pub outcome: AgentOutcome,
    pub events: Vec<AgentEvent>,
    pub requests: Vec<Recorded>,
    pub repo: TestRepo,
}

fn run_role_in(
    sandboxed: bool,
    fixture: &str,
    provider: Provider,
    role: &str,
    packet_files: Option<Vec<String>>,
    edit: impl FnOnce(&mut agent::Role),
) -> Ran {
    run_role_on(
        TestRepo::new(),
        sandboxed,
        fixture,
        provider,
        role,
        packet_files,
        edit,
    )
}

/// Runs `role` against the scripted `fixture` in `repo`.
pub(crate) fn run_role_on(
    repo: TestRepo,
    sandboxed: bool,
    fixture: &str,
    provider: Provider,
    role: &str,
    packet_files: Option<Vec<String>>,
    edit: impl FnOnce(&mut agent::Role),
) -> Ran {
    let server = MockServer::from_fixture(fixture);
    let model = llm::connect(&profile(&server, provider)).unwrap();
    let roles = Roles::builtin().unwrap();
    let mut role = roles.get(role).unwrap().clone();
    edit(&mut role);
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        context_tokens: 32_000,
        task: "Swap the operands in add().".into(),
        root: &root,
        packet_files,
        registry: &registry,
        stop: &stop,
        policy: RetryPolicy {
            base_delay: Duration::from_millis(5),
            ..Default::default()
        },
        price: Some(git_orchestra::config::Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
        }),
        answer: None,
        sandbox: sandboxed.then(|| git_orchestra::agent::sandbox::Sandbox {
            launcher: env!("CARGO_BIN_EXE_git-orchestra").into(),
            tmp: repo.scratch().join("tmp"),
            read: vec![repo.path.join(".git")],
            write: Vec::new(),
            limits: Default::default(),
            if_unavailable: git_orchestra::agent::sandbox::IfUnavailable::Allow,
        }),
        text_answer: false,
    };
    let mut events = Vec::new();
    let outcome = agent::run(&spec, &mut |e| events.push(e.clone())).unwrap();
    let requests = server.requests();
    Ran {
        outcome,
        events,
        requests,
        repo,
    }
}

fn run_role(
    fixture: &str,
    provider: Provider,
    role: &str,
    packet_files: Option<Vec<String>>,
    edit: impl FnOnce(&mut agent::Role),
) -> Ran {
    run_role_in(false, fixture, provider, role, packet_files, edit)
}

pub(crate) fn tool_results(req: &Recorded) -> Vec<String> {
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_coder_reads_recovers_from_bad_calls_edits_and_completes() {
    let ran = run_role(
        "openai/agent_edit",
        Provider::OpenaiCompatible,
        "coder",
        None,
        |_| {},
    );
    let o = &ran.outcome;
    assert_eq!(o.state, WorkerState::Completed, "{o:?}");
    assert_eq!(o.summary.as_deref(), Some("Swapped the operands of add."));
    assert_eq!(o.touched_files, ["src/lib.rs"]);
    assert_eq!(o.learnings, ["add is commutative"]);
    assert_eq!((o.turns, o.tool_calls, o.tool_errors), (6, 6, 3));
    assert_eq!(o.usage.input_tokens, 6 * 50);
    assert!((o.cost.unwrap() - (300.0 * 1.0 + 72.0 * 2.0) / 1e6).abs() < 1e-12);
    let lib = std::fs::read_to_string(ran.repo.path.join("src/lib.rs")).unwrap();
    assert!(lib.contains("b + a"), "{lib}");
    assert!(!ran.repo.path.parent().unwrap().join("escape.txt").exists());

    // What went back to the model, call by call.
    let results = tool_results(&ran.requests[5]);
    assert!(
        results[0].contains("pub fn add"),
        "read_file numbered the lines: {}",
        results[0]
    );
    assert!(results[0].starts_with("    1\t"), "{}", results[0]);
    assert!(
        results[1].starts_with("error: the arguments of `edit_file` are not valid JSON"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("not found") && results[2].contains("src/lib.rs"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("1 replacement"), "{}", results[3]);
    assert!(
        results[4].contains("outside the worktree"),
        "{}",
        results[4]
    );

    let states: Vec<_> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::State { to, .. } => Some(*to),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            WorkerState::Running,
            WorkerState::Completing,
            WorkerState::Completed
        ]
    );
    // The tools the coder was offered, and the role's instructions in the system prompt.
    let names: Vec<_> = ran.requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.contains(&"edit_file".to_string()) && names.contains(&"complete".to_string()),
        "{names:?}"
    );
    assert!(
        ran.requests[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("signal_state")
    );
    assert!(!format!("{:?}{:?}", ran.events, ran.outcome).contains(SECRET));
}

#[test]
fn an_answer_without_complete_is_nudged_once_then_blocked() {
    let ran = run_role(
        "openai/agent_no_complete",
        Provider::OpenaiCompatible,
        "coder",
        None,
        |_| {},
    );
    assert_eq!(ran.outcome.state, WorkerState::Blocked);
    assert!(
        ran.outcome.reason.contains("without calling `complete`"),
        "{}",
        ran.outcome.reason
    );
    assert_eq!(ran.requests.len(), 2);
    let last = ran.requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("call `complete`"),
        "{last}"
    );
}

#[test]
fn writes_outside_the_role_or_packet_scope_are_refused_with_a_reason() {
    let ran = run_role(
        "openai/agent_scope",
        Provider::OpenaiCompatible,
        "coder",
        Some(vec!["src/lib.rs".into()]),
        |_| {},
    );
    assert_eq!(ran.outcome.state, WorkerState::Completed);
    let results = tool_results(&ran.requests[2]);
    assert!(
        results[0].contains("declared only src/lib.rs") && results[0].contains("src/parser.rs"),
        "{}",
        results[0]
    );
    assert_eq!(
        std::fs::read_to_string(ran.repo.path.join("src/parser.rs")).unwrap(),
        "pub fn parse() {}\n"
    );
    assert!(
        std::fs::read_to_string(ran.repo.path.join("src/lib.rs"))
            .unwrap()
            .contains("b + a")
    );

    // The tester role may only write tests.
    let ran = run_role(
        "openai/agent_scope",
        Provider::OpenaiCompatible,
        "tester",
        None,
        |_| {},
    );
    let results = tool_results(&ran.requests[2]);
    assert!(
        results[0].contains("may only write files matching") && results[0].contains("tests/**"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("refused"), "{}", results[1]);
}

#[test]
fn signalled_states_are_validated_and_blocked_ends_the_run() {
    let ran = run_role(
        "openai/agent_states",
        Provider::OpenaiCompatible,
        "coder",
        None,
        |_| {},
    );
    assert_eq!(ran.outcome.state, WorkerState::Blocked);
    assert_eq!(ran.outcome.reason, "need the API spec");
    let results = tool_results(&ran.requests[1]);
    assert!(results[0].contains("call `complete`"), "{}", results[0]);
    assert_eq!(ran.outcome.tool_errors, 1);
}

#[test]
fn repeating_the_same_call_is_a_stall_and_turns_are_limited() {
    let ran = run_role(
        "openai/agent_loops_forever",
        Provider::OpenaiCompatible,
        "coder",
        None,
        |_| {},
    );
    assert_eq!(ran.outcome.state, WorkerState::Blocked);
    assert!(
        ran.outcome.reason.contains("stalled"),
        "{}",
        ran.outcome.reason
    );
    assert_eq!(ran.requests.len(), 3);
}

#[test]
fn the_turn_limit_blocks_the_agent() {
    let ran = run_role(
        "openai/agent_loops_forever",
        Provider::OpenaiCompatible,
        "coder",
        None,
        |r| r.max_turns = 2,
    );
    assert_eq!(ran.outcome.state, WorkerState::Blocked);
    assert!(
        ran.outcome.reason.contains("limit of 2 turns"),
        "{}",
        ran.outcome.reason
    );
}

#[test]
fn the_loop_speaks_anthropic_too() {
    let ran = run_role(
        "anthropic/agent_edit",
        Provider::Anthropic,
        "coder",
        None,
        |_| {},
    );
    assert_eq!(
        ran.outcome.state,
        WorkerState::Completed,
        "{:?}",
        ran.outcome
    );
    assert!(
        std::fs::read_to_string(ran.repo.path.join("src/lib.rs"))
            .unwrap()
            .contains("b + a")
    );
    let msgs = ran.requests[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["content"][0]["type"], "tool_result");
}

#[test]
fn a_model_error_ends_in_the_error_state_naming_the_cause() {
    let ran = run_role(
        "openai/unauthorized",
        Provider::OpenaiCompatible,
        "coder",
        None,
        |_| {},
    );
    assert_eq!(ran.outcome.state, WorkerState::Error);
    assert!(
        ran.outcome.reason.contains("ORCHESTRA_TEST_API_KEY"),
        "{}",
        ran.outcome.reason
    );
    assert!(!ran.outcome.reason.contains(SECRET));
}

#[test]
fn run_command_sees_no_secrets_is_truncated_and_sandboxed() {
    crate::agent::llm::export_key();
    for sandboxed in [false, true] {
        let ran = run_role_in(
            sandboxed,
            "openai/agent_command",
            Provider::OpenaiCompatible,
            "coder",
            None,
            |_| {},
        );
        assert_eq!(
            ran.outcome.state,
            WorkerState::Completed,
            "{:?}",
            ran.outcome
        );
        let result = &tool_results(&ran.requests[1])[0];
        assert!(
            result.starts_with("exit status: 0"),
            "{}",
            &result[..200.min(result.len())]
        );
        assert!(
            result.contains("key=\n") || result.contains("key=\r\n"),
            "the key variable is scrubbed"
        );
        assert!(!result.contains(SECRET));
        assert!(
            result.contains("[output truncated"),
            "long output is cut with a note"
        );
        assert_eq!(result.contains("(not sandboxed)"), !sandboxed);
        let escaped = ran.repo.path.parent().unwrap().join("outside.txt");
        // Unsandboxed the write lands outside (so this check can fail); sandboxed it cannot.
        assert_eq!(escaped.exists(), !sandboxed, "sandboxed: {sandboxed}");
        let _ = std::fs::remove_file(escaped);
    }
}

//! End-to-end: our real clients, in both wire formats and streaming, drive the agent loop
//! against a real local model server (llama.cpp's `llama-server` with a small model).
//!
//! Opt-in: runs only when `ORCHESTRA_E2E_LLM_URL` holds the server's base URL (for example
//! `http://127.0.0.1:18080`, as printed by `../shared/scripts/local-llm-server.sh`);
//! otherwise each test says it was skipped and passes. The small model cannot be trusted with
//! reasoning, so the tests assert the plumbing: the first turn yields the expected tool call,
//! its result goes back and the server accepts it, and the loop ends by an answer or its turn
//! limit without an error.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::agent::tools::Registry;
use git_orchestra::agent::{self, AgentEvent, Roles, WorkerState};
use git_orchestra::confine::ConfinedRoot;
use git_orchestra::llm::{self, Profile, Provider, RetryPolicy};

use crate::support::TestRepo;

/// The variable holding the local server's base URL.
const URL_VAR: &str = "ORCHESTRA_E2E_LLM_URL";

/// Takes the local model server for one test: its few slots on two cores answer one
/// conversation in time, not several at once (tests waiting in its queue ran into their own
/// timeouts), so the tests against it take turns.
pub(crate) fn local_server_turn() -> std::sync::MutexGuard<'static, ()> {
    static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERVER.lock().unwrap_or_else(|p| p.into_inner())
}

/// Returns the server's base URL ending in `/v1`, or `None` (after saying so) when the test
/// is not enabled.
pub(crate) fn server_url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => {
            let url = url.trim().trim_end_matches('/');
            Some(if url.ends_with("/v1") {
                url.to_string()
            } else {
                format!("{url}/v1")
            })
        }
        _ => {
            eprintln!("skipped: {URL_VAR} not set");
            None
        }
    }
}

fn run_against_local_server(provider: Provider) {
    let Some(url) = server_url() else { return };
    let _turn = local_server_turn();
    let repo = TestRepo::with_files(&[("README.md", "# sample\n\nThe magic word is: pelican.\n")]);
    let mut profile = Profile::new("e2e", provider, "local-qwen", &url);
    profile.api_key_env = None;
    profile.temperature = Some(0.0);
    profile.max_tokens = 256;
    profile.timeout = Duration::from_secs(120);
    let model = llm::connect(&profile).unwrap();

    // A reader limited to the tools the small model needs keeps its prompt short.
    let roles = Roles::builtin().unwrap();
    let mut role = roles.get("coder").unwrap().clone();
    role.tools = vec!["read_file".into(), "complete".into()];
    role.write_scope = Vec::new();
    role.instructions = "You are a careful assistant working in a repository. Use the tools \
                         you are given."
        .into();
    role.max_turns = 2;
    role.timeout_secs = 300;
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        context_tokens: 8192,
        task: "Call the tool read_file with path README.md".into(),
        root: &root,
        packet_files: None,
        registry: &registry,
        stop: &stop,
        policy: RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_millis(200),
            ..Default::default()
        },
        price: None,
        answer: None,
        sandbox: None,
        text_answer: false,
    };
    let mut events = Vec::new();
    let started = Instant::now();
    let outcome = agent::run(&spec, &mut |e| events.push(e.clone())).unwrap();
    eprintln!(
        "{}: {:?} after {} turns in {:.1}s ({} in / {} out tokens): {}",
        provider.as_str(),
        outcome.state,
        outcome.turns,
        started.elapsed().as_secs_f64(),
        outcome.usage.input_tokens,
        outcome.usage.output_tokens,
        outcome.reason
    );
    let trace = format!("{outcome:#?}\n{events:#?}");

    // Turn 1: a model call, then the expected tool call, which ran and succeeded.
    let first_call = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ModelCall { turn: 1, .. }))
        .unwrap_or_else(|| panic!("no first model call:\n{trace}"));
    match events[first_call + 1..]
        .iter()
        .find(|e| matches!(e, AgentEvent::ToolCall { .. }))
    {
        Some(AgentEvent::ToolCall {
            turn,
            name,
            ok,
            summary,
            ..
        }) => {
            assert_eq!(
                (*turn, name.as_str(), *ok),
                (1, "read_file", true),
                "{trace}"
            );
            // The result's first line is README.md's first line, numbered.
            assert!(summary.contains("# sample"), "{trace}");
        }
        _ => panic!("the first turn made no tool call:\n{trace}"),
    }
    // Turn 2: the conversation carrying the tool result was accepted by the server.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ModelCall { turn: 2, .. })),
        "the server did not answer the tool result:\n{trace}"
    );
    assert!(
        outcome.usage.input_tokens > 0,
        "no usage reported:\n{trace}"
    );
    // The end: an answer (completed, or blocked after the nudge), the stall guard or the turn
    // limit — never an error or a cancellation.
    assert!(
        matches!(outcome.state, WorkerState::Completed | WorkerState::Blocked),
        "{trace}"
    );
    assert!(outcome.turns <= role.max_turns, "{trace}");
}

#[test]
fn e2e_openai_compatible_client_drives_the_loop_against_a_local_server() {
    run_against_local_server(Provider::OpenaiCompatible);
}

#[test]
fn e2e_anthropic_client_drives_the_loop_against_a_local_server() {
    run_against_local_server(Provider::Anthropic);
}

#[test]
fn e2e_the_planner_of_start_reads_the_code_with_a_tool_before_it_plans() {
    let Some(url) = server_url() else { return };
    let _turn = local_server_turn();
    let tmp = tempfile::tempdir().unwrap();
    let repo = git_orchestra::demo::create_sample(&tmp.path().join("greeter")).unwrap();
    std::fs::create_dir_all(repo.join(".orchestra")).unwrap();
    std::fs::write(
        repo.join(".orchestra/config.toml"),
        format!(
            "[profiles.default]\nprovider = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"local-qwen\"\ntemperature = 0.0\nmax_tokens = 256\n"
        ),
    )
    .unwrap();
    crate::support::git(&repo, &["add", "-A"]);
    crate::support::git(&repo, &["commit", "-qm", "profile"]);
    crate::support::trust(&repo);
    // The token budget lets the planner's first model call through and stops the run before
    // the second: enough to see what the real model does first, in bounded time.
    let started = Instant::now();
    let out = crate::support::orchestra(
        &repo,
        &[
            "start",
            "--no-clarify",
            "--budget-tokens",
            "3000",
            "Add a farewell function next to greet",
        ],
    );
    let all = crate::support::text(&out);
    eprintln!(
        "start ended after {:.0}s: {all}",
        started.elapsed().as_secs_f64()
    );
    assert!(!all.contains("panicked"), "{all}");
    let runs = git_orchestra::orchestrator::StartJournal::runs(&repo.join(".git")).unwrap();
    let log = git_orchestra::exec::run_dir(&repo.join(".git"), &runs[0]).join("logs/planner-1.log");
    let transcript = std::fs::read_to_string(&log).unwrap_or_default();
    let tool_calls: Vec<&str> = transcript
        .lines()
        .filter(|l| l.contains("\"type\":\"tool_call\""))
        .collect();
    assert!(
        !tool_calls.is_empty(),
        "the planner made no tool call before planning:\n{transcript}\n{all}"
    );
    assert!(
        all.contains("budget"),
        "the run stopped on its budget: {all}"
    );
}

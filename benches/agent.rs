//! Runtime overhead of the agent loop with a scripted model on loopback: time per turn (one
//! model call + one tool call, model time ≈ 0) and peak RSS of 16 agents running at once.
//!
//! `cargo bench --bench agent`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/agent/mock.rs"]
mod mock;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::agent::tools::Registry;
use git_orchestra::agent::{self, Roles, WorkerState};
use git_orchestra::confine::ConfinedRoot;
use git_orchestra::llm::{self, Profile, Provider, RetryPolicy};
use serde_json::{Value, json};

#[path = "support/mod.rs"]
mod support;

const TURNS: usize = 60;

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"sse": [
        {"model": "bench", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}, "finish_reason": null}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        "[DONE]"
    ]})
}

fn script() -> Vec<Value> {
    let mut v: Vec<Value> = (0..TURNS)
        .map(|i| {
            call(
                &format!("c{i}"),
                "read_file",
                json!({"path": "src/lib.rs", "start_line": 1 + i % 50, "end_line": 60}),
            )
        })
        .collect();
    v.push(call("done", "complete", json!({"summary": "read"})));
    v
}

fn run_one(dir: &std::path::Path) -> Duration {
    let server = mock::MockServer::start(script());
    let profile = Profile::new("bench", Provider::OpenaiCompatible, "bench", &server.url);
    let model = llm::connect(&profile).unwrap();
    let roles = Roles::builtin().unwrap();
    let mut role = roles.get("coder").unwrap().clone();
    role.max_turns = 1000;
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(dir).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        context_tokens: 200_000,
        task: "read".into(),
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
    let t = Instant::now();
    let out = agent::run(&spec, &mut |_| {}).unwrap();
    let elapsed = t.elapsed();
    // The figure counts turns: every scripted reply must have been asked for and answered.
    assert_eq!(
        out.state,
        WorkerState::Completed,
        "the agent did not complete"
    );
    assert_eq!(
        server.requests().len(),
        TURNS + 1,
        "the agent made a different number of model calls than scripted"
    );
    elapsed
}

fn main() {
    mock::forget_bodies();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let body: String = (0..200)
        .map(|i| format!("pub fn f{i}() -> u32 {{ {i} }}\n"))
        .collect();
    std::fs::write(dir.path().join("src/lib.rs"), body).unwrap();
    run_one(dir.path());
    let single = run_one(dir.path());
    println!(
        "one agent: {} turns in {:.1} ms → {:.0} µs per turn (model call over loopback + SSE parse + tool call)",
        TURNS + 1,
        single.as_secs_f64() * 1e3,
        single.as_secs_f64() * 1e6 / (TURNS + 1) as f64
    );
    let before = support::peak_rss_kib("self").unwrap_or(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| run_one(dir.path()));
        }
    });
    println!(
        "16 agents at once: {:.1} ms wall; peak RSS {} MB (before: {} MB; includes the 16 mock servers, which keep no bodies)",
        t.elapsed().as_secs_f64() * 1e3,
        support::peak_rss_kib("self").unwrap_or(0) / 1024,
        before / 1024
    );
}

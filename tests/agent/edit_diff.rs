//! edit_file's unified-diff mode through the agent loop: a hunk that does not apply comes
//! back as an error the model can act on and changes nothing; a good diff is applied.

use std::sync::atomic::AtomicBool;

use git_orchestra::agent::tools::Registry;
use git_orchestra::agent::{self, AgentEvent, Roles, WorkerState};
use git_orchestra::confine::ConfinedRoot;
use git_orchestra::llm::{self, Provider, RetryPolicy};
use serde_json::{Value, json};

use crate::agent::llm::profile;
use crate::agent::mock::MockServer;
use crate::support::TestRepo;

/// A streamed answer calling `tool` with `args`.
pub fn calls(tool: &str, args: Value) -> Value {
    json!({"sse": [
        {"id": "c", "model": "mock-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
            "tool_calls": [{"index": 0, "id": format!("id-{tool}"), "type": "function", "function": {"name": tool, "arguments": args.to_string()}}]}, "finish_reason": null}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
        "[DONE]"
    ]})
}

#[test]
fn a_unified_diff_applies_and_a_stale_one_is_refused_with_the_reason() {
    let bad = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-pub fn add(a: i32, b: i32) -> i32 { a - b }\n+pub fn add(a: i32, b: i32) -> i32 { b + a }\n";
    let good = bad.replace("a - b", "a + b");
    let server = MockServer::start(vec![
        calls("edit_file", json!({"path": "src/lib.rs", "diff": bad})),
        calls("edit_file", json!({"path": "src/lib.rs", "diff": good})),
        calls("complete", json!({"summary": "swapped"})),
    ]);
    let repo = TestRepo::new();
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let role = Roles::builtin().unwrap().get("coder").unwrap().clone();
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        context_tokens: 32_000,
        task: "Swap the operands in add().".into(),
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
    let mut events = Vec::new();
    let outcome = agent::run(&spec, &mut |e| events.push(e.clone())).unwrap();
    assert_eq!(outcome.state, WorkerState::Completed, "{outcome:?}");
    let oks: Vec<bool> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { ok, .. } => Some(*ok),
            _ => None,
        })
        .collect();
    assert_eq!(oks, [false, true, true]);
    let second = &server.requests()[1].body["messages"];
    let refusal = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        refusal.contains("hunk 1")
            && refusal.contains("line 1 of `src/lib.rs`")
            && refusal.contains("Nothing was changed"),
        "{refusal}"
    );
    let lib = std::fs::read_to_string(repo.path.join("src/lib.rs")).unwrap();
    assert_eq!(lib, "pub fn add(a: i32, b: i32) -> i32 { b + a }\n");
}

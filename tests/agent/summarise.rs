//! Context summarisation: near the window, older turns are replaced by one summary message
//! written by the model, and the conversation goes on from it.

use std::sync::atomic::AtomicBool;

use git_orchestra::agent::tools::Registry;
use git_orchestra::agent::{self, AgentEvent, Roles, WorkerState};
use git_orchestra::confine::ConfinedRoot;
use git_orchestra::llm::{self, Provider, RetryPolicy};
use serde_json::{Value, json};

use crate::agent::edit_diff::calls;
use crate::agent::llm::profile;
use crate::agent::mock::MockServer;
use crate::support::TestRepo;

fn says(text: &str) -> Value {
    json!({"sse": [
        {"id": "c", "model": "mock-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}},
        "[DONE]"
    ]})
}

#[test]
fn older_turns_are_replaced_by_the_models_summary_near_the_window() {
    let mut replies: Vec<Value> = (1..=4)
        .map(|n| calls("read_file", json!({"path": "notes.txt", "start_line": n})))
        .collect();
    replies.push(says(
        "SUMMARY: read notes.txt four times; nothing changed yet.",
    ));
    replies.push(calls("complete", json!({"summary": "done"})));
    let server = MockServer::start(replies);
    let repo = TestRepo::new();
    let notes: String = (0..40)
        .map(|i| format!("{i:03} {}\n", "n".repeat(96)))
        .collect();
    repo.write("notes.txt", &notes);
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let role = Roles::builtin().unwrap().get("coder").unwrap().clone();
    let registry = Registry::builtin().for_role(&role);
    let root = ConfinedRoot::open(&repo.path).unwrap();
    let stop = AtomicBool::new(false);
    let spec = agent::AgentSpec {
        role: &role,
        models: vec![model.as_ref()],
        // About 9,000 characters fit in three quarters of this window: three reads of the
        // 4,000-character file overflow it.
        context_tokens: 3_000,
        task: "Study notes.txt.".into(),
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
    assert_eq!(
        outcome.state,
        WorkerState::Completed,
        "{outcome:?}\n{events:#?}"
    );
    assert!(
        events.contains(&AgentEvent::ContextSummarised {
            replaced_messages: 2,
            by_model: true
        }),
        "{events:#?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    // The summary call: no tools, the older turns rendered as text.
    let ask = &requests[4].body;
    assert!(
        ask.get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{ask}"
    );
    assert!(
        ask["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("calls read_file")
    );
    // The next turn carries the summary instead of the first read.
    let next = requests[5].body["messages"].as_array().unwrap().clone();
    let texts: Vec<String> = next
        .iter()
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("[Summary of the earlier conversation")
                && t.contains("SUMMARY: read notes.txt")),
        "{texts:#?}"
    );
    let tool_results = next.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(tool_results, 3, "the first read was summarised away");
    assert_eq!(next[0]["role"], "system");
    assert!(texts[1].contains("Study notes.txt."), "the task stays");
}

//! Questions to a person in single-agent mode: `git orchestra agent` waits for the answer,
//! given from another shell with `git orchestra answer`, and the agent goes on with it.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::agent::mock::{MockServer, approval};
use crate::support::{TestRepo, orchestra, orchestra_command, text};

/// Returns a streamed reply that calls tool `name` with `args`.
fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"sse": [
        {"id": "c", "model": "mock-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}, "finish_reason": null}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 12}},
        "[DONE]"
    ]})
}

/// Regression: the agent's `ask` failed the packet, and `git orchestra answer` said no agent
/// had asked.
#[test]
fn an_agent_run_waits_for_the_answer_from_another_shell_and_the_work_lands() {
    let repo = TestRepo::new();
    let question = "Which operand order should add() use?";
    let answer = "put b first: b + a";
    let server = MockServer::start(vec![
        call("c1", "ask", json!({"question": question})),
        call(
            "c2",
            "edit_file",
            json!({"path": "src/lib.rs", "search": "a + b", "replace": "b + a"}),
        ),
        call(
            "c3",
            "complete",
            json!({"summary": "Swapped the operands as asked.", "touched_files": ["src/lib.rs"]}),
        ),
        // The environment's profile is the model reviewer's too: it approves the packet.
        approval(),
    ]);
    let mut cmd = orchestra_command(&repo.path, &[]);
    cmd.args(["agent", "coder", "Swap the operands in add()"])
        .env("ORCHESTRA_PROVIDER", "openai-compatible")
        .env("ORCHESTRA_BASE_URL", &server.url)
        .env("ORCHESTRA_MODEL", "mock-model")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();

    // Another shell sees the question in `status`, then answers it.
    let began = Instant::now();
    loop {
        let status = orchestra(&repo.path, &["status"]);
        let shown = String::from_utf8_lossy(&status.stdout).to_string();
        if shown.contains(&format!("question  coder: {question}")) {
            assert!(shown.contains("git orchestra answer coder"), "{shown}");
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the question never showed: {}",
            text(&status)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        server.requests().len(),
        1,
        "the agent went on without an answer"
    );
    let out = orchestra(&repo.path, &["answer", "coder", answer]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(question), "{}", text(&out));

    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains(&format!("[coder] asks: {question}")),
        "{progress}"
    );
    // The answer reached the model as the result of its `ask`, in the very next request.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let tool_results: Vec<&Value> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_results.len(), 1, "{:?}", requests[1].body);
    assert_eq!(tool_results[0]["tool_call_id"], "c1");
    assert!(
        tool_results[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains(answer)),
        "{:?}",
        tool_results[0]
    );
    // The work landed on the packet's branch, committed by the engine.
    let status = orchestra(&repo.path, &["status", "--json"]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["run"]["state"], "completed", "{v}");
    assert_eq!(v["questions"], json!([]), "{v}");
    let branch = v["packets"][0]["branch"].as_str().unwrap().to_string();
    let lib = repo.git(&["show", &format!("{branch}:src/lib.rs")]);
    assert!(lib.contains("b + a"), "{lib}");
    // Nothing waits any more: a second answer is refused.
    let out = orchestra(&repo.path, &["answer", "coder", "again"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

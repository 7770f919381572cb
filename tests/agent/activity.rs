//! Agent activity in the run store: states with reasons, model calls with tokens and cost,
//! tool names, retries — journaled per packet and role, shown by `status`, and never a key.

use git_orchestra::store::Store;
use serde_json::Value;

use crate::agent::llm::{KEY_VAR, SECRET};
use crate::agent::mock::MockServer;
use crate::support::{TestRepo, orchestra_with_env, text};

#[test]
fn the_run_store_keeps_agent_states_tokens_cost_tools_and_retries_but_no_key() {
    let repo = TestRepo::new();
    // The provider first fails with a message echoing the key, then serves the conversation.
    let mut replies = vec![serde_json::json!({
        "status": 500,
        "json": {"error": {"message": format!("upstream failure for key {SECRET}")}}
    })];
    replies.extend(crate::agent::mock::fixture_replies("openai/agent_edit"));
    // The reviewer role resolves to the same default profile.
    replies.push(crate::agent::mock::approval());
    let server = MockServer::start(replies);
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[profiles.default]\nprovider = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"mock-model\"\napi_key_env = \"{KEY_VAR}\"\n\n[prices.\"mock-model\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
            server.url
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    repo.trust();
    let env = [(KEY_VAR, SECRET)];
    let out = orchestra_with_env(
        &repo.path,
        &["agent", "coder", "Swap the operands in add()", "--json"],
        &env,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains(SECRET), "the key leaked to the output: {all}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = v["run"]["id"].as_str().unwrap().to_string();
    let agent = &v["agents"][0];
    assert_eq!(agent["role"], "coder", "{v}");
    assert_eq!(agent["state"], "completed", "{v}");
    assert_eq!(
        (
            &agent["model_calls"],
            &agent["input_tokens"],
            &agent["output_tokens"]
        ),
        (&Value::from(6), &Value::from(300), &Value::from(72)),
        "{v}"
    );
    // 300 input tokens at 1 and 72 output tokens at 2 per million.
    assert_eq!(agent["cost_nanos"], 444_000, "{v}");
    assert_eq!(
        (&agent["tool_calls"], &agent["tool_errors"]),
        (&Value::from(6), &Value::from(3))
    );
    assert_eq!(agent["retries"], 1, "{v}");

    assert_journal_holds_states_tools_and_retries_but_no_key(&repo, &run_id);
    assert_status_shows_usage_and_transcripts_hold_no_key(&repo, &env);
}

/// Checks the journal of run `run_id`: every agent event names packet and role; states carry
/// reasons; tool calls carry the name only; no event holds the key.
fn assert_journal_holds_states_tools_and_retries_but_no_key(repo: &TestRepo, run_id: &str) {
    let common = repo.git(&["rev-parse", "--git-common-dir"]);
    let store = Store::open(&repo.path.join(common)).unwrap();
    let journal = store.events(run_id, 0).unwrap();
    let payloads: Vec<Value> = journal
        .iter()
        .map(|e| serde_json::to_value(&e.event).unwrap())
        .collect();
    for p in &payloads {
        assert!(
            !p.to_string().contains(SECRET),
            "the key leaked into an event: {p}"
        );
    }
    let of = |kind: &'static str| payloads.iter().filter(move |p| p["type"] == kind);
    let states: Vec<String> = of("agent_state")
        .map(|p| {
            format!(
                "{}→{}",
                p["from"].as_str().unwrap(),
                p["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            "initializing→running",
            "running→completing",
            "completing→completed"
        ],
        "{payloads:#?}"
    );
    assert!(of("agent_state").all(|p| !p["reason"].as_str().unwrap().is_empty()));
    let tools: Vec<&str> = of("agent_tool_call")
        .map(|p| p["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 6);
    assert_eq!(tools.first(), Some(&"read_file"));
    assert_eq!(tools.last(), Some(&"complete"));
    for p in of("agent_tool_call") {
        let keys: Vec<&String> = p
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "target")
            .collect();
        assert_eq!(
            keys,
            [
                "duration_ms",
                "ok",
                "packet",
                "role",
                "tool",
                "turn",
                "type"
            ],
            "tool events hold their key argument at most, no arguments or output: {p}"
        );
        assert!(p["target"].as_str().unwrap_or("").len() <= 101, "{p}");
    }
    let retry = of("agent_retry")
        .next()
        .expect("the 500 was journaled as a retry");
    assert!(
        retry["error"].as_str().unwrap().contains("<redacted>"),
        "{retry}"
    );
    assert_eq!(of("agent_model_call").count(), 6);
}

/// Checks that `status` shows tokens and cost per packet and role, and that the transcripts
/// are scrubbed of the key.
fn assert_status_shows_usage_and_transcripts_hold_no_key(repo: &TestRepo, env: &[(&str, &str)]) {
    let out = orchestra_with_env(&repo.path, &["status"], env);
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        shown.contains("300/72") && shown.contains("0.000444") && shown.contains("by role:"),
        "{shown}"
    );
    // The transcript has the detail, scrubbed too.
    let logs = walk(&repo.path.join(repo.git(&["rev-parse", "--git-common-dir"])));
    assert!(!logs.is_empty());
    for log in logs {
        let body = std::fs::read_to_string(&log).unwrap();
        assert!(!body.contains(SECRET), "{} holds the key", log.display());
    }
}

/// Returns the worker transcripts under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            found.extend(walk(&p));
        } else if p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("worker-"))
        {
            found.push(p);
        }
    }
    found
}

#[test]
fn an_agents_final_words_cannot_carry_the_key_into_the_journal_memory_or_report() {
    let repo = TestRepo::new();
    // The model repeats the key in its summary and its learnings, as one that read it
    // somewhere would; nothing it says at the end may keep it.
    let replies = vec![
        crate::agent::attacks::call(
            "w1",
            "write_file",
            serde_json::json!({"path": "src/lib.rs", "content": "// changed\n"}),
        ),
        crate::agent::attacks::call(
            "c1",
            "complete",
            serde_json::json!({
                "summary": format!("changed src/lib.rs; the key is {SECRET}"),
                "learnings": [format!("the provider key {SECRET} works")],
            }),
        ),
        crate::agent::mock::approval(),
    ];
    let server = MockServer::start(replies);
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[profiles.default]\nprovider = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"mock-model\"\napi_key_env = \"{KEY_VAR}\"\n",
            server.url
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    repo.trust();
    let env = [(KEY_VAR, SECRET)];
    let out = orchestra_with_env(
        &repo.path,
        &["agent", "coder", "Change src/lib.rs", "--json"],
        &env,
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains(SECRET), "the key reached the output: {all}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = v["run"]["id"].as_str().unwrap();
    let common = repo.path.join(repo.git(&["rev-parse", "--git-common-dir"]));
    let store = Store::open(&common).unwrap();
    let events: Vec<String> = store
        .events(run_id, 0)
        .unwrap()
        .iter()
        .map(|e| serde_json::to_string(&e.event).unwrap())
        .collect();
    let finished = events
        .iter()
        .find(|e| e.contains("\"worker_finished\""))
        .expect("the worker's end was journaled");
    assert!(
        finished.contains("changed src/lib.rs; the key is <redacted>"),
        "the summary is journaled, scrubbed: {finished}"
    );
    assert!(events.iter().all(|e| !e.contains(SECRET)), "{events:#?}");
    let learned: Vec<String> = store
        .learnings(10)
        .unwrap()
        .into_iter()
        .map(|l| l.text)
        .collect();
    assert_eq!(
        learned,
        ["the provider key <redacted> works"],
        "{learned:?}"
    );
    for log in walk(&common) {
        let body = std::fs::read_to_string(&log).unwrap();
        assert!(!body.contains(SECRET), "{} holds the key", log.display());
    }
    let shown = orchestra_with_env(&repo.path, &["status", run_id], &env);
    assert!(!text(&shown).contains(SECRET), "{}", text(&shown));
}

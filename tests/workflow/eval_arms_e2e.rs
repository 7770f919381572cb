//! End to end: `eval run` with an `agent:` arm and a `start` arm against a real local model
//! server (llama.cpp's `llama-server` with a small model) on the calculator history's
//! multiplication task.
//!
//! Opt-in: runs only when `ORCHESTRA_E2E_LLM_URL` holds the server's base URL (as printed by
//! `../shared/scripts/local-llm-server.sh`); otherwise it says it was skipped and passes. A
//! small model resolves what it resolves, so the test asserts only that the eval completes,
//! every attempt has a result (resolved, or a failure class), and the table prints.

use super::eval_fixtures::history;
use crate::support::{orchestra_with_env, text};

#[test]
fn an_eval_of_agent_and_start_arms_completes_against_a_local_model() {
    let Some(url) = std::env::var("ORCHESTRA_E2E_LLM_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("skipped: ORCHESTRA_E2E_LLM_URL not set");
        return;
    };
    let _turn = crate::agent::e2e::local_server_turn();
    let url = url.trim().trim_end_matches('/');
    let url = if url.ends_with("/v1") {
        url.to_string()
    } else {
        format!("{url}/v1")
    };
    let (repo, _) = history();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", url.as_str()),
        ("ORCHESTRA_MODEL", "local-qwen"),
        // Uncapped, the small model wrote answers of about 3,900 tokens at 13 a second: a
        // cap keeps the test's time predictable.
        ("ORCHESTRA_MAX_TOKENS", "1024"),
    ];
    let out = orchestra_with_env(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~3..HEAD~2",
            "--test",
            "sh run_tests.sh",
            "--timeout",
            "900",
            "--arm",
            "agent=agent:coder",
            "--arm",
            "full=start",
            "--json",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempts = json["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{json}");
    for a in attempts {
        assert!(
            a["resolved"] == true || a["failure"].is_string(),
            "an attempt without a result: {json}"
        );
    }
    let table = orchestra_with_env(&repo.path, &["eval", "report"], &env);
    assert!(table.status.success(), "{}", text(&table));
    println!("{}", String::from_utf8_lossy(&table.stdout));
}

//! `git orchestra eval run` measures: the time an attempt's agents wait on models, per attempt
//! and per arm (median and total) in the report's JSON.

use super::eval_fixtures::{coder_on, eval, history};
use super::eval_gave_up::{attempt, solve};
use crate::support::{orchestra, text};

#[test]
fn model_time_is_measured_per_attempt_and_summed_per_arm() {
    let (repo, _) = history();
    let mut replies = solve();
    for r in &mut replies {
        r["delay_ms"] = serde_json::json!(300);
    }
    let _model = coder_on(
        &repo,
        serde_json::json!([{"name": "slow", "match": ["# Coder", "Add multiplication"],
            "replies": replies}]),
    );
    let a = attempt(&repo);
    assert_eq!(a["resolved"], true, "{a}");
    assert!(a["model_ms"].as_u64().unwrap() >= 600, "{a}");
    let out = orchestra(&repo.path, &["eval", "report", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arm = &report["arms"][0];
    assert!(arm["model_p50"].as_f64().unwrap() >= 0.6, "{arm}");
    assert!(arm["model_total"].as_f64().unwrap() >= 0.6, "{arm}");
    assert!(
        arm["model_total"].as_f64().unwrap() <= arm["wall_p50"].as_f64().unwrap(),
        "{arm}"
    );
    let dir = repo.scratch().join("report");
    let out = orchestra(
        &repo.path,
        &["eval", "report", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for page in [&md, &html] {
        assert!(
            page.contains("model p50") && page.contains("model total"),
            "{page}"
        );
    }
}

/// Returns the attempt of `eval run --json` over the multiplication task with `arm`.
fn attempt_of(repo: &crate::support::TestRepo, arm: &str) -> serde_json::Value {
    let json = eval(repo, "HEAD~3..HEAD~2", &[arm], &[]);
    json["attempts"][0].clone()
}

#[test]
fn an_agent_arms_token_budget_stops_the_agent_mid_packet() {
    let (repo, _) = history();
    // Twelve turns each writing another file (no stall), then the solution and `complete`.
    const TURNS: u64 = 12;
    let mut replies: Vec<serde_json::Value> = (0..TURNS)
        .map(|i| {
            serde_json::json!({"calls": [{"name": "write_file",
                "args": {"path": format!("notes/{i}.txt"), "content": format!("note {i}\n")}}]})
        })
        .collect();
    replies.extend(solve());
    let model = coder_on(
        &repo,
        serde_json::json!([{"name": "spender", "match": ["# Coder", "Add multiplication"],
            "replies": replies}]),
    );
    let full = attempt_of(&repo, "full=agent:coder");
    assert_eq!(full["resolved"], true, "{full}");
    let spent = |a: &serde_json::Value| {
        a["tokens_in"].as_u64().unwrap() + a["tokens_out"].as_u64().unwrap()
    };
    let all = spent(&full);
    let calls = model.requests();
    assert!(calls > TURNS, "{calls} calls");
    // A quarter of what the whole work spends.
    let limit = all / 4;
    let capped = attempt_of(&repo, &format!("capped=agent:coder,tokens={limit}"));
    assert_eq!(capped["resolved"], false, "{capped}");
    assert_eq!(capped["failure"], "budget", "{capped}");
    // It stopped at the limit, not after the work: at most one turn (the largest, the last
    // of the whole work, under twice the mean) beyond it.
    let one_turn = 2 * all / (TURNS + 2);
    assert!(spent(&capped) >= limit, "{capped}");
    assert!(
        spent(&capped) <= limit + one_turn,
        "{capped} (limit {limit})"
    );
    assert!(
        model.requests() - calls < calls / 2,
        "the capped agent kept calling the model"
    );
}

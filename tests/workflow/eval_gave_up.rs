//! `git orchestra eval run`: an agent that stops short of completing (the stall guard, a
//! `blocked` signal) is classed `gave_up`, not `crash`; a question nobody is there to answer
//! gets "decide yourself" and the agent goes on.

use super::eval_fixtures::{coder_on, history};
use crate::support::{TestRepo, orchestra, text};

/// Returns the one attempt of `eval run --json` over the multiplication task with an
/// `agent:coder` arm.
pub(super) fn attempt(repo: &TestRepo) -> serde_json::Value {
    let out = orchestra(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~3..HEAD~2",
            "--test",
            "sh run_tests.sh",
            "--arm",
            "coder=agent:coder",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["attempts"][0].clone()
}

/// The multiplication written and completed, as a scripted coder's last two replies.
pub(super) fn solve() -> Vec<serde_json::Value> {
    vec![
        serde_json::json!({"calls": [{"name": "write_file", "args": {"path": "src/calc.sh",
            "content": "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n"}}]}),
        serde_json::json!({"calls": [{"name": "complete", "args": {"summary": "added mul"}}]}),
    ]
}

#[test]
fn an_agent_stopped_by_the_stall_guard_gave_up_and_did_not_crash() {
    let (repo, _) = history();
    let same =
        serde_json::json!({"calls": [{"name": "read_file", "args": {"path": "src/calc.sh"}}]});
    let _model = coder_on(
        &repo,
        serde_json::json!([{"name": "loop", "match": ["# Coder", "Add multiplication"],
            "replies": [same, same, same, same, same]}]),
    );
    let a = attempt(&repo);
    assert_eq!(a["resolved"], false, "{a}");
    assert_eq!(a["failure"], "gave_up", "{a}");
    assert!(
        a["detail"].as_str().unwrap_or_default().contains("stalled"),
        "{a}"
    );
}

#[test]
fn an_agent_that_signals_blocked_gave_up() {
    let (repo, _) = history();
    let _model = coder_on(
        &repo,
        serde_json::json!([{"name": "stuck", "match": ["# Coder", "Add multiplication"],
            "replies": [{"calls": [{"name": "signal_state",
                "args": {"state": "blocked", "reason": "I cannot tell which shell"}}]}]}]),
    );
    let a = attempt(&repo);
    assert_eq!(a["failure"], "gave_up", "{a}");
}

#[test]
fn a_question_in_an_attempt_is_answered_decide_yourself_and_the_agent_goes_on() {
    let (repo, _) = history();
    let mut replies = vec![serde_json::json!({"calls": [{"name": "ask",
        "args": {"question": "Should mul accept negative numbers?"}}]})];
    replies.extend(solve());
    let _model = coder_on(
        &repo,
        serde_json::json!([{"name": "asks", "match": ["# Coder", "Add multiplication"],
            "replies": replies}]),
    );
    let a = attempt(&repo);
    assert_eq!(a["resolved"], true, "{a}");
    assert_eq!(a["questions"], 1, "{a}");
}

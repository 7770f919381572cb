//! `git orchestra eval run`: an agent that stops short of completing (the stall guard, a
//! `blocked` signal) is classed `gave_up`, not `crash`; a question nobody is there to answer
//! gets "decide yourself" and the agent goes on, in a one-packet attempt as in a `start` one.

use super::eval_fixtures::{coder_on, eval, history};
use crate::support::{TestRepo, text};

/// Returns the one attempt of `eval run --json` over the multiplication task with an
/// `agent:coder` arm.
pub(super) fn attempt(repo: &TestRepo) -> serde_json::Value {
    let json = eval(repo, "HEAD~3..HEAD~2", &["coder=agent:coder"], &[]);
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
    assert!(
        a["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("I cannot tell which shell"),
        "{a}"
    );
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

/// Runs one `start` arm attempt of the calculator's multiplication task whose coder answers
/// with `coder`'s replies, and returns the attempt as `eval run --json` reports it.
fn start_attempt(coder: Vec<serde_json::Value>) -> serde_json::Value {
    let (repo, _) = history();
    let plan = "```toml\n[[packet]]\nid = \"mul-fn\"\ntitle = \"Write mul-fn\"\nrole = \"coder\"\ndescription = \"d\"\nfiles = [\"src/calc.sh\"]\n```";
    let scripts = serde_json::json!([
        {"name": "clarifier", "match": ["# Clarifier"], "replies": [{"text":
            "{\"outcome\": \"clear\", \"requirements\": [\"the tests pass\"], \"questions\": [], \"assumptions\": []}"}]},
        {"name": "plan", "match": ["# Planner", "Add multiplication"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]},
        {"name": "coder", "match": ["# Coder", "# Write mul-fn"], "replies": coder}
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let out = crate::support::orchestra_with_env(
        &repo.path,
        &[
            "eval",
            "run",
            "--from-history",
            "HEAD~3..HEAD~2",
            "--test",
            "sh run_tests.sh",
            "--arm",
            "full=start",
            "--json",
        ],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", model.url.as_str()),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["attempts"][0].clone()
}

#[test]
fn a_packet_agent_asking_the_same_question_over_and_over_in_a_start_attempt_gave_up() {
    // Each question gets "decide yourself"; asking it again and again trips the stall guard.
    let ask = serde_json::json!({"calls": [{"name": "ask", "args": {"question": "Which shell?"}}]});
    let a = start_attempt(vec![ask.clone(), ask.clone(), ask]);
    assert_eq!(a["resolved"], false, "{a}");
    assert_eq!(a["failure"], "gave_up", "{a}");
    assert!(
        a["detail"].as_str().unwrap_or_default().contains("stalled"),
        "{a}"
    );
    assert_eq!(a["questions"], 1, "{a}");
}

#[test]
fn a_packet_agent_asking_in_a_start_attempt_is_answered_decide_yourself_and_goes_on() {
    let mut coder = vec![serde_json::json!({"calls": [{"name": "ask",
        "args": {"question": "Should mul accept negative numbers?"}}]})];
    coder.extend(solve());
    let a = start_attempt(coder);
    assert_eq!(a["resolved"], true, "{a}");
    assert_eq!(a["questions"], 1, "{a}");
}

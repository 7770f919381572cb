//! `git orchestra eval run` arms beyond worker commands: an agent CLI (`cli:`), a profile
//! chosen per arm (`agent:<role>@<profile>`), a per-arm budget, the whole `start` flow, and
//! the refusals of bad arm options.

use super::eval_fixtures::{attempt, eval};
use std::path::PathBuf;

use super::eval_fixtures::{assert_arms_refused, history};
use crate::support::{TestRepo, refs};

/// A stand-in agent CLI speaking Claude Code's stream-json: it reads the prompt on stdin and
/// adds the function the objective names, for multiplication and negation only.
const FAKE_CLI: &str = r#"#!/bin/sh
prompt=$(cat)
case "$prompt" in *multiplication*) echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh;; esac
case "$prompt" in *negation*) echo 'neg() { echo $((0 - $1)); }' >> src/calc.sh;; esac
echo '{"type":"system","subtype":"init","session_id":"fake-1","model":"fake-model"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"fake-1","num_turns":1,"total_cost_usd":0.01,"usage":{"input_tokens":120,"output_tokens":8}}'
"#;

/// Writes the fake CLI into `repo`'s scratch space and returns its path.
fn fake_cli(repo: &TestRepo) -> PathBuf {
    let bin = repo.scratch().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("fake-agent");
    std::fs::write(&script, FAKE_CLI).unwrap();
    crate::support::make_executable(&script);
    script
}

#[test]
fn a_cli_arm_resolves_what_its_agent_cli_solves() {
    let (repo, commits) = history();
    let cli = fake_cli(&repo);
    repo.user_config(&format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n[agents.cli.fake]\ncommand = \"{}\"\nprompt = \"stdin\"\noutput = \"claude\"\n",
        cli.parent().unwrap().display(),
        cli.display()
    ));
    let json = eval(&repo, "HEAD~3..HEAD", &["fake=cli:fake"], &[]);
    assert_eq!(json["arms"][0]["attempts"], 3, "{json}");
    assert_eq!(json["arms"][0]["resolved"], 2, "{json}");
    assert_eq!(
        attempt(&json, "fake", &commits[0])["resolved"],
        true,
        "{json}"
    );
    assert_eq!(
        attempt(&json, "fake", &commits[1])["failure"],
        "no_change",
        "{json}"
    );
    assert_eq!(
        attempt(&json, "fake", &commits[2])["resolved"],
        true,
        "{json}"
    );
    assert_eq!(attempt(&json, "fake", &commits[2])["packets"], 1, "{json}");
}

/// The scripted coder: it writes multiplication when asked, and gives up otherwise.
fn coder_scripts() -> serde_json::Value {
    serde_json::json!([
        {"name": "mul", "match": ["# Coder", "Add multiplication"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "src/calc.sh",
                "content": "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "added mul"}}]}]}
    ])
}

/// Writes a user configuration with profiles `big` and `small` on the two servers, the coder
/// on `big`, and both models (the mock servers answer as the model asked for) priced at `price`
/// per million tokens.
fn two_profiles(repo: &TestRepo, big: &str, small: &str, price: f64) {
    repo.user_config(&format!(
        "[profiles.big]\nprovider = \"openai-compatible\"\nmodel = \"big-model\"\nbase_url = \"{big}\"\n\n\
         [profiles.small]\nprovider = \"openai-compatible\"\nmodel = \"small-model\"\nbase_url = \"{small}\"\n\n\
         [roles.coder]\nprofile = \"big\"\n\n\
         [prices.small-model]\ninput_per_mtok = {price}\noutput_per_mtok = {price}\n\n\
         [prices.big-model]\ninput_per_mtok = {price}\noutput_per_mtok = {price}\n"
    ));
}

fn mock(scripts: &serde_json::Value) -> git_orchestra::demo::MockModel {
    git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap()
}

#[test]
fn an_arm_profile_picks_that_profiles_model_and_its_budget_caps_the_attempt() {
    let (repo, commits) = history();
    let (big, small) = (mock(&coder_scripts()), mock(&coder_scripts()));
    two_profiles(&repo, &big.url, &small.url, 1.0);
    // The multiplication task only.
    let json = eval(&repo, "HEAD~3..HEAD~2", &["cheap=agent:coder@small"], &[]);
    assert_eq!(json["arms"][0]["resolved"], 1, "{json}");
    assert!(
        small.requests() >= 2,
        "the small profile's server was not called"
    );
    assert_eq!(big.requests(), 0, "the role's own profile was called");
    let cost = attempt(&json, "cheap", &commits[0])["cost"]
        .as_f64()
        .unwrap_or_else(|| panic!("no cost: {json}"));
    assert!(cost > 0.0, "{json}");
    // The same work over a budget below what it costs: not resolved, failure class budget.
    let budget = format!("poor=agent:coder@small,budget={}", cost / 2.0);
    let json = eval(
        &repo,
        "HEAD~3..HEAD~2",
        &[&budget, "rich=agent:coder@small,budget=5"],
        &[],
    );
    let poor = attempt(&json, "poor", &commits[0]);
    assert_eq!(poor["resolved"], false, "{json}");
    assert_eq!(poor["failure"], "budget", "{json}");
    assert!(
        poor["detail"].as_str().unwrap().contains("budget"),
        "{json}"
    );
    assert_eq!(
        attempt(&json, "rich", &commits[0])["resolved"],
        true,
        "{json}"
    );
    assert_eq!(big.requests(), 0);
}

#[test]
fn bad_arm_options_are_refused_by_arm_name_before_anything_runs() {
    let (repo, _) = history();
    repo.user_config(
        "[profiles.small]\nprovider = \"openai-compatible\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9\"\n",
    );
    let before = refs(&repo.path);
    assert_arms_refused(
        &repo,
        &before,
        &[
            ("x=agent:coder@", "arm `x`: `@` needs a profile name"),
            (
                "x=agent:coder@huge",
                "arm `x`: profile `huge` is not defined",
            ),
            ("x=start@huge", "arm `x`: profile `huge` is not defined"),
            (
                "x=agent:coder,budget=cheap",
                "arm `x`: option `budget=cheap` needs a positive cost",
            ),
            ("x=agent:coder,budget=0", "needs a positive cost"),
            (
                "x=start,tokens=-3",
                "arm `x`: option `tokens=-3` needs a positive whole number",
            ),
            (
                "x=start,colour=red",
                "arm `x`: option `colour=red` is not one of",
            ),
            (
                "x=cli:claude@small",
                "arm `x`: `cli:` arms take no `@<profile>`",
            ),
            ("x=cli:", "arm `x`: `cli:` needs an agent CLI name"),
            ("x=cli:nosuchcli", "arm `x`"),
            (
                "x=start,profile.planner=huge",
                "profile `huge` is not defined",
            ),
            (
                "x=agent:coder,model.coder=tiny",
                "arm `x`: `model.coder` changes the model of role `coder`'s profile",
            ),
            (
                "x=start,model.coder=",
                "arm `x`: option `model.coder=` needs a role and a model",
            ),
        ],
    );
}

/// Returns a plan of `packets` (id, file, content) for the scripted planner, and the coder
/// scripts that write each packet's file.
fn start_task(
    objective: &str,
    packets: &[(&str, &str, &str)],
) -> (serde_json::Value, Vec<serde_json::Value>) {
    let mut plan = String::from("```toml\n");
    let mut coders = Vec::new();
    for (id, file, content) in packets {
        plan.push_str(&format!(
            "[[packet]]\nid = \"{id}\"\ntitle = \"Write {id}\"\nrole = \"coder\"\ndescription = \"d\"\nfiles = [\"{file}\"]\nvalidation = [\"sh run_tests.sh\"]\n\n"
        ));
        coders.push(serde_json::json!({"name": id, "match": ["# Coder", format!("# Write {id}")], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": file, "content": content}}]},
            {"calls": [{"name": "complete", "args": {"summary": format!("wrote {file}")}}]}]}));
    }
    plan.push_str("```");
    let planner = serde_json::json!({"name": format!("plan {objective}"),
        "match": ["# Planner", objective], "replies": [{"text": plan}]});
    (planner, coders)
}

#[test]
fn a_start_arm_plans_works_and_merges_each_task_unattended() {
    let (repo, commits) = history();
    let add = "add() { echo $(($1 + $2)); }\n";
    // Multiplication in two packets (the function, a note), subtraction in one, and a negation
    // in two that merge cleanly but negate nothing: two of three resolve, the third is a
    // semantic conflict.
    let (mul_plan, mut coders) = start_task(
        "Add multiplication",
        &[
            (
                "mul-fn",
                "src/calc.sh",
                &format!("{add}mul() {{ echo $(($1 * $2)); }}\n"),
            ),
            ("mul-note", "NOTES.md", "mul multiplies\n"),
        ],
    );
    let (sub_plan, sub) = start_task(
        "Add subtraction",
        &[(
            "sub-fn",
            "src/calc.sh",
            &format!("{add}mul() {{ echo $(($1 * $2)); }}\nsub() {{ echo $(($1 - $2)); }}\n"),
        )],
    );
    let (neg_plan, neg) = start_task(
        "Add negation",
        &[
            (
                "neg-fn",
                "src/calc.sh",
                &format!(
                    "{add}mul() {{ echo $(($1 * $2)); }}\nsub() {{ echo $(($1 - $2)); }}\nneg() {{ echo $1; }}\n"
                ),
            ),
            ("neg-note", "NOTES.md", "neg negates\n"),
        ],
    );
    coders.extend(sub);
    coders.extend(neg);
    let mut scripts = vec![
        serde_json::json!({"name": "clarifier", "match": ["# Clarifier"], "replies": [{"text":
            "{\"outcome\": \"questions\", \"requirements\": [\"the tests pass\"], \"questions\": [\"Which shell?\"], \"assumptions\": [\"POSIX sh\"]}"}]}),
        mul_plan,
        sub_plan,
        neg_plan,
        serde_json::json!({"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}),
        serde_json::json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}),
    ];
    scripts.extend(coders);
    let model = mock(&serde_json::Value::Array(scripts));
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let json = eval(&repo, "HEAD~3..HEAD", &["full=start"], &env);
    assert_eq!(json["arms"][0]["attempts"], 3, "{json}");
    assert_eq!(json["arms"][0]["resolved"], 2, "{json}");
    let mul = attempt(&json, "full", &commits[0]);
    assert_eq!(mul["resolved"], true, "{json}");
    assert_eq!(mul["packets"], 2, "{json}");
    assert_eq!(mul["questions"], 1, "{json}");
    assert!(mul["tokens_in"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(
        attempt(&json, "full", &commits[1])["resolved"],
        true,
        "{json}"
    );
    let neg = attempt(&json, "full", &commits[2]);
    assert_eq!(neg["resolved"], false, "{json}");
    assert_eq!(neg["packets"], 2, "{json}");
    assert_eq!(neg["failure"], "semantic_conflict", "{json}");
    assert_eq!(neg["questions"], 1, "{json}");
}

#[test]
fn a_one_packet_attempt_passes_the_reviewer_as_run_does() {
    let (repo, commits) = history();
    // The coder writes multiplication, then answers every fix round without changing more;
    // the reviewer rejects whatever it sees.
    let mut replies = vec![
        serde_json::json!({"calls": [{"name": "write_file", "args": {"path": "src/calc.sh",
            "content": "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n"}}]}),
    ];
    for _ in 0..12 {
        replies.push(
            serde_json::json!({"calls": [{"name": "complete", "args": {"summary": "added mul"}}]}),
        );
    }
    let scripts = serde_json::json!([
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text":
            "{\"verdict\": \"reject\", \"findings\": [{\"severity\": \"blocker\", \"category\": \"correctness\", \"file\": \"src/calc.sh\", \"line\": 2, \"evidence\": \"mul is untested\", \"suggestion\": \"add a test\"}]}"}]},
        {"name": "mul", "match": ["# Coder", "Add multiplication"], "replies": replies}
    ]);
    let model = mock(&scripts);
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let json = eval(&repo, "HEAD~3..HEAD~2", &["ours=agent:coder"], &env);
    let mul = attempt(&json, "ours", &commits[0]);
    assert_eq!(mul["resolved"], false, "{json}");
    assert_eq!(mul["failure"], "gate_rejected", "{json}");
    assert!(mul["detail"].as_str().unwrap().contains("review"), "{json}");
    assert!(mul["fix_rounds"].as_u64().unwrap() >= 1, "{json}");
}

#[test]
fn a_start_arm_stops_at_its_token_budget_and_fails_as_budget() {
    let (repo, commits) = history();
    let (plan, coders) = start_task(
        "Add multiplication",
        &[(
            "mul-fn",
            "src/calc.sh",
            "add() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n",
        )],
    );
    let mut scripts = vec![
        serde_json::json!({"name": "clarifier", "match": ["# Clarifier"], "replies": [{"text":
            "{\"outcome\": \"clear\", \"requirements\": [\"the tests pass\"], \"questions\": [], \"assumptions\": []}"}]}),
        plan,
        serde_json::json!({"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}),
        serde_json::json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}),
    ];
    scripts.extend(coders);
    let model = mock(&serde_json::Value::Array(scripts));
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let json = eval(
        &repo,
        "HEAD~3..HEAD~2",
        &["full=start", "tight=start,tokens=10"],
        &env,
    );
    assert_eq!(
        attempt(&json, "full", &commits[0])["resolved"],
        true,
        "{json}"
    );
    let tight = attempt(&json, "tight", &commits[0]);
    assert_eq!(tight["resolved"], false, "{json}");
    assert_eq!(tight["failure"], "budget", "{json}");
    // The run itself stopped at the limit (not only a judgement of its spend afterwards), and
    // the detail names the arm's option, not `start`'s flag.
    assert!(
        tight["detail"]
            .as_str()
            .unwrap()
            .ends_with("of 10 tokens used (the arm's `tokens=` or `budget=`)"),
        "{json}"
    );
}

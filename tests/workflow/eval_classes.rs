//! The eval's failure classes a failing integration and a failing program reach through
//! `git orchestra eval run`: a `start` arm whose packets change the same lines differently is
//! a `merge_conflict`, and a `cli:` arm whose agent CLI cannot be started is a `crash`, after
//! which the eval goes on with the next attempt.

use super::eval_fixtures::history;
use super::eval_fixtures::{arm, attempt, eval};

#[test]
fn a_start_arm_whose_packets_conflict_fails_as_merge_conflict() {
    let (repo, commits) = history();
    let add = "add() { echo $(($1 + $2)); }\n";
    // Two independent packets rewrite the same line of src/calc.sh differently: the first
    // lands a wrong `mul`, the second (the right one) conflicts with it and its agent does not
    // resolve the conflict, so the landed tree fails the hidden test because of the conflict.
    let mut plan = String::from("```toml\n");
    for (id, title) in [("mul-a", "Write mul-a"), ("mul-b", "Write mul-b")] {
        plan.push_str(&format!(
            "[[packet]]\nid = \"{id}\"\ntitle = \"{title}\"\nrole = \"coder\"\ndescription = \"d\"\nfiles = [\"src/calc.sh\"]\nvalidation = [\"sh run_tests.sh\"]\n\n"
        ));
    }
    plan.push_str("```");
    let write = |id: &str, content: String| {
        serde_json::json!({"name": id, "match": ["# Coder", format!("# Write {id}")], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "src/calc.sh", "content": content}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote src/calc.sh"}}]}]})
    };
    let scripts = serde_json::json!([
        {"name": "clarifier", "match": ["# Clarifier"], "replies": [{"text":
            "{\"outcome\": \"clear\", \"requirements\": [\"the tests pass\"], \"questions\": [], \"assumptions\": []}"}]},
        {"name": "plan", "match": ["# Planner", "Add multiplication"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]},
        write("mul-a", format!("{add}mul() {{ echo 0; }}\n")),
        write("mul-b", format!("{add}mul() {{ echo $(($1 * $2)); }}\n")),
    ]);
    let model = git_orchestra::demo::MockModel::start(
        git_orchestra::demo::parse_scripts(&scripts.to_string()).unwrap(),
    )
    .unwrap();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let json = eval(&repo, "HEAD~3..HEAD~2", &["full=start"], &env);
    let mul = attempt(&json, "full", &commits[0]);
    assert_eq!(mul["resolved"], false, "{json}");
    assert_eq!(mul["failure"], "merge_conflict", "{json}");
    assert_eq!(mul["packets"], 2, "{json}");
    let detail = mul["detail"].as_str().unwrap();
    assert!(detail.starts_with("packet mul-b: "), "{json}");
    assert!(detail.contains("conflicts with"), "{json}");
    assert!(detail.contains("src/calc.sh"), "{json}");
    let full = arm(&json, "full");
    assert_eq!(full["attempts"], 1, "{json}");
    assert_eq!(full["failures"]["merge_conflict"], 1, "{json}");
}

#[test]
fn a_cli_arm_whose_agent_cli_cannot_start_crashes_and_the_eval_goes_on() {
    let (repo, commits) = history();
    // The agent CLI exists but is not executable: the program cannot start it, which is
    // neither the agent giving up nor a timeout. A worker command beside it still works.
    let bin = repo.scratch().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cli = bin.join("broken-agent");
    std::fs::write(&cli, "#!/bin/sh\nexit 0\n").unwrap();
    repo.user_config(&format!(
        "[sandbox]\nif_unavailable = \"warn\"\nread = [\"{}\"]\n\n[agents.cli.broken]\ncommand = \"{}\"\nprompt = \"stdin\"\noutput = \"claude\"\n",
        bin.display(),
        cli.display()
    ));
    let json = eval(
        &repo,
        "HEAD~3..HEAD~1",
        &[
            "broken=cli:broken",
            "cmd=cmd:echo 'mul() { echo $(($1 * $2)); }' >> src/calc.sh",
        ],
        &[],
    );
    for task in &commits[..2] {
        let a = attempt(&json, "broken", task);
        assert_eq!(a["resolved"], false, "{json}");
        assert_eq!(a["failure"], "crash", "{json}");
        let detail = a["detail"].as_str().unwrap();
        assert!(detail.contains("broken-agent: Permission denied"), "{json}");
    }
    let broken = arm(&json, "broken");
    assert_eq!(broken["attempts"], 2, "{json}");
    assert_eq!(broken["failures"]["crash"], 2, "{json}");
    // Every attempt after the first crash ran to its end.
    assert_eq!(
        attempt(&json, "cmd", &commits[0])["resolved"],
        true,
        "{json}"
    );
    assert_eq!(
        attempt(&json, "cmd", &commits[1])["failure"],
        "tests_fail",
        "{json}"
    );
    assert_eq!(json["done"], 4, "{json}");
}

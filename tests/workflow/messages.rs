//! What `start` tells the user when things go wrong or are left to do: next steps that are
//! commands or sentences rather than the orchestrator's tool names.

use git_orchestra::demo;

use crate::start::start_plain;
use crate::support::{hermetic, text};

/// Regression: the orchestrator's advice `complete` and `plan` were listed as next steps.
#[test]
fn next_steps_are_commands_or_sentences_never_bare_tool_names() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write notes\"\ndescription = \"d\"\nfiles = [\"NOTES.md\"]\n```";
    let advice =
        r#"{"next_steps": ["complete", "plan", "status", "Tell the team about NOTES.md"]}"#;
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": advice}]},
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "NOTES.md", "content": "notes\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "wrote notes"}}]}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let out = start_plain(&repo, &model);
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    let steps = report
        .split("## Next steps\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no next steps: {report}"));
    let items: Vec<&str> = steps.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    assert_eq!(
        items,
        ["run `git orchestra status`", "Tell the team about NOTES.md"],
        "{report}"
    );
}

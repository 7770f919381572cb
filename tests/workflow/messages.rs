//! What `start` tells the user when things go wrong or are left to do: why each planner round
//! was rejected, the offending plan lines instead of a file nobody can open, and next steps
//! that are commands or sentences rather than the orchestrator's tool names.

use git_orchestra::demo;

use crate::support::{hermetic, text};
use crate::workflow::start::{invalid_first_plan, start_plain};

/// Regression: the rounds were rejected silently, and the final error cited `plan.toml:7:15`,
/// a file that exists only in the run's journal.
#[test]
fn every_rejected_planner_round_says_why_and_quotes_the_offending_line() {
    let (_tmp, repo, model) = invalid_first_plan(false);
    let out = start_plain(&repo, &model);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let progress = String::from_utf8_lossy(&out.stderr).to_string();
    for round in 1..=3 {
        let said = progress
            .split(&format!("plan of round {round} rejected:"))
            .nth(1)
            .unwrap_or_else(|| panic!("round {round} rejected silently:\n{progress}"));
        let reason = said.lines().nth(1).unwrap_or("");
        assert!(
            reason.contains("`depends_on = [\"ghost\"]`") && reason.contains("ghost"),
            "round {round}: {reason}\n{progress}"
        );
    }
    assert!(!progress.contains("plan.toml:"), "{progress}");
    // The final error lists each round's problems and where the last proposal can be read.
    let error = progress
        .split("did not produce a valid plan in 3 rounds")
        .nth(1)
        .unwrap_or_else(|| panic!("no final error: {progress}"));
    for round in 1..=3 {
        assert!(error.contains(&format!("round {round}:")), "{error}");
    }
    let saved = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("the last proposal: "))
        .unwrap_or_else(|| panic!("no saved proposal named: {error}"));
    let plan = std::fs::read_to_string(saved).unwrap();
    assert!(plan.contains("depends_on = [\"ghost\"]"), "{plan}");
}

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
        // The orchestrator reads the integrated result before it advises.
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [
            {"calls": [{"name": "read_file", "args": {"path": "NOTES.md"}}]},
            {"text": advice}]},
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
    let runs = git_orchestra::orchestrator::StartJournal::runs(&repo.join(".git")).unwrap();
    let log =
        git_orchestra::exec::run_dir(&repo.join(".git"), &runs[0]).join("logs/orchestrator.log");
    let transcript = std::fs::read_to_string(&log).unwrap();
    assert!(
        transcript.contains("\"tool_call\"") && transcript.contains("\"read_file\""),
        "{transcript}"
    );
}

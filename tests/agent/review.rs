//! The model reviewer: JSON findings from the scripted reviewer agent join the verdict in git;
//! only evidenced blocker/major findings reject; a malformed answer gets one retry, then a clear
//! error; `git orchestra review` uses it when `[roles.reviewer]` names a profile.

use git_orchestra::agent::ModelReviewer;
use git_orchestra::config::RepoConfig;
use git_orchestra::gate::{self, Decision, DeterministicReviewer, Reviewer};
use git_orchestra::git::RepoInfo;
use serde_json::{Value, json};

use crate::llm::{KEY_VAR, SECRET, export_key};
use crate::mock::MockServer;
use crate::support::{TestRepo, orchestra_with_env, text};

/// A model reply that completes with `summary`.
fn completes_with(summary: &str) -> Value {
    json!({"json": {"model": "mock-model", "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "complete",
            "arguments": json!({"summary": summary}).to_string()}}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}})
}

/// A repository whose `feature` branch changes `add`, configured with a reviewer profile
/// pointing at `server`.
fn repo_with_reviewer(server: &MockServer) -> TestRepo {
    export_key();
    let repo = TestRepo::new();
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[profiles.mock]\nprovider = \"openai-compatible\"\nmodel = \"mock-model\"\nbase_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\ntimeout_secs = 5\n\n[roles.reviewer]\nprofile = \"mock\"\n",
            server.url
        ),
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "config"]);
    repo.git(&["checkout", "-qb", "feature"]);
    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a - b }\n",
    );
    repo.git(&["commit", "-qam", "change add"]);
    repo
}

fn review(repo: &TestRepo) -> Result<gate::Verdict, gate::GateError> {
    let info = RepoInfo::discover(&repo.path).unwrap();
    let config = RepoConfig::load(&info.toplevel).unwrap();
    assert!(ModelReviewer::configured(&config));
    let mut model = ModelReviewer::new(&info.toplevel, config).unwrap();
    model.launcher = None;
    let det = DeterministicReviewer {
        options: gate::CheckOptions {
            max_file_size: gate::DEFAULT_MAX_FILE_SIZE,
        },
        validation: Vec::new(),
        timeout: std::time::Duration::from_secs(30),
    };
    let reviewers: [&dyn Reviewer; 2] = [&det, &model];
    gate::review(&info, "main", "feature", None, &reviewers)
}

#[test]
fn evidenced_major_findings_reject_and_are_stored_in_git() {
    let answer = json!({"verdict": "reject", "findings": [
        {"severity": "major", "category": "correctness", "file": "src/lib.rs", "line": 1,
         "evidence": "`a - b` subtracts in add()", "suggestion": "use a + b"},
        {"severity": "nit", "category": "style", "evidence": "", "suggestion": "doc comment"}]});
    let server = MockServer::start(vec![completes_with(&answer.to_string())]);
    let repo = repo_with_reviewer(&server);
    let verdict = review(&repo).unwrap();
    assert_eq!(verdict.verdict, Decision::Reject);
    assert_eq!(
        verdict.reviewer,
        "deterministic+reviewer:openai-compatible:mock-model"
    );
    assert!(verdict.checks.contains(&"model-review".to_string()));
    assert_eq!(verdict.findings[0].file.as_deref(), Some("src/lib.rs"));
    // The reviewer saw the diff and the answer format.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let task = reqs[0].body.to_string();
    assert!(
        task.contains("a - b") && task.contains("\\\"severity\\\""),
        "{task}"
    );
    assert_eq!(
        reqs[0].header("authorization"),
        Some(&*format!("Bearer {SECRET}"))
    );
    // Stored in git like any verdict.
    let info = RepoInfo::discover(&repo.path).unwrap();
    let stored = gate::read_verdict(&info.git(), &verdict.commit)
        .unwrap()
        .unwrap();
    assert_eq!(stored, verdict);
}

#[test]
fn a_blocker_without_evidence_does_not_block() {
    let answer = json!({"verdict": "reject", "findings": [
        {"severity": "blocker", "category": "correctness", "evidence": "", "suggestion": "?"}]});
    let server = MockServer::start(vec![completes_with(&answer.to_string())]);
    let repo = repo_with_reviewer(&server);
    let verdict = review(&repo).unwrap();
    assert_eq!(verdict.verdict, Decision::Approve);
    assert_eq!(verdict.findings[0].severity, gate::Severity::Minor);
}

#[test]
fn a_malformed_answer_gets_one_retry_then_a_clear_error() {
    let ok = json!({"verdict": "approve", "findings": []}).to_string();
    let server = MockServer::start(vec![completes_with("LGTM!"), completes_with(&ok)]);
    let repo = repo_with_reviewer(&server);
    let verdict = review(&repo).unwrap();
    assert_eq!(verdict.verdict, Decision::Approve);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1]
            .body
            .to_string()
            .contains("could not be read: no JSON object")
    );

    let server = MockServer::start(vec![
        completes_with("LGTM!"),
        completes_with("{\"verdict\": 1}"),
    ]);
    let repo = repo_with_reviewer(&server);
    let err = review(&repo).unwrap_err().to_string();
    assert!(err.contains("not the JSON asked for, twice"), "{err}");
    // Nothing was stored.
    let info = RepoInfo::discover(&repo.path).unwrap();
    let tip = info.git().run(["rev-parse", "feature"]).unwrap();
    assert!(gate::read_verdict(&info.git(), &tip).unwrap().is_none());
}

#[test]
fn the_review_command_uses_the_configured_reviewer() {
    let answer = json!({"verdict": "reject", "findings": [
        {"severity": "blocker", "category": "correctness", "file": "src/lib.rs", "line": 1,
         "evidence": "subtraction", "suggestion": "add"}]});
    let server = MockServer::start(vec![completes_with(&answer.to_string())]);
    let repo = repo_with_reviewer(&server);
    let out = orchestra_with_env(
        &repo.path,
        &["review", "main..feature", "--json"],
        &[(KEY_VAR, SECRET)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "reject");
    assert_eq!(v["findings"][0]["evidence"], "subtraction");
    assert!(!text(&out).contains(SECRET));
    // --no-model: deterministic checks only, and they approve.
    let out = orchestra_with_env(
        &repo.path,
        &["review", "main..feature", "--again", "--no-model", "--json"],
        &[(KEY_VAR, SECRET)],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.requests().len(), 1);
}

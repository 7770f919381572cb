//! A run that failed on a model's error says why and what continues it — in the report,
//! `status` (text and JSON) — for `start` runs and for `agent` runs alike.

use git_orchestra::demo;

use crate::support::{
    REFUSAL, hermetic, orchestra, orchestra_with_env, refusing_model, status_json, text,
};

/// Runs `start` on the demo's sample repository against the refusing model; returns the
/// repository (in `tmp`) and the run's id.
pub fn failed_start(tmp: &std::path::Path) -> (std::path::PathBuf, String) {
    hermetic();
    let repo = demo::create_sample(&tmp.join("greeter")).unwrap();
    let url = refusing_model();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let root = tmp.join("worktrees");
    let out = orchestra_with_env(
        &repo,
        &[
            "start",
            "--yes",
            "--worktree-root",
            root.to_str().unwrap(),
            demo::OBJECTIVE,
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = orchestra(&repo, &["status", "--all", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    let id = v["runs"][0]["id"].as_str().unwrap().to_string();
    (repo, id)
}

#[test]
fn a_start_run_failed_on_a_model_error_says_why_and_what_continues_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, id) = failed_start(tmp.path());
    let resume = format!("git orchestra resume {id}");
    // The report: its headline gives the reason, its next steps the command.
    let out = orchestra(&repo, &["status", "--report", &id]);
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    let headline = report
        .lines()
        .find(|l| l.starts_with("Run `"))
        .unwrap_or_default();
    assert!(
        headline.contains(REFUSAL),
        "no reason in the headline: {report}"
    );
    assert!(report.contains(&resume), "no next step: {report}");
    // `status`, as text.
    let out = orchestra(&repo, &["status", &id]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains(REFUSAL), "{said}");
    assert!(said.contains(&resume), "{said}");
    // `status --json`.
    let v = status_json(&repo);
    let failure = &v["start"]["failure"];
    assert!(
        failure["reason"]
            .as_str()
            .unwrap_or_default()
            .contains(REFUSAL),
        "{v}"
    );
    assert_eq!(failure["next"], resume.as_str(), "{v}");
}

#[test]
fn an_agent_run_failed_on_a_model_error_says_why_and_what_continues_it() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let url = refusing_model();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let out = orchestra_with_env(&repo, &["agent", "coder", "Greet in French"], &env);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v = status_json(&repo);
    let id = v["run"]["id"].as_str().unwrap().to_string();
    let retry = format!("git orchestra retry {id}");
    // The final summary says it as `status` does.
    let summary = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(summary.contains(&format!("next      {retry}")), "{summary}");
    assert!(
        v["failure"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains(REFUSAL),
        "{v}"
    );
    assert_eq!(v["failure"]["next"], retry.as_str(), "{v}");
    let out = orchestra(&repo, &["status"]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains(&retry), "{said}");
    let reason_line = said
        .lines()
        .find(|l| l.starts_with("reason"))
        .unwrap_or_default();
    assert!(reason_line.contains(REFUSAL), "{said}");
}

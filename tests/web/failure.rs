//! The run page of a run that failed on a model's error says why and what continues it, as
//! `status` does.

use git_orchestra::demo;

use crate::support::{REFUSAL, hermetic, orchestra_with_env, refusing_model, text};
use crate::web::view::{send, session, ui};

/// GETs `path` from a fresh view of `repo` the way its page does; returns the JSON answer.
fn api(repo: &std::path::Path, path: &str) -> serde_json::Value {
    let ui = ui(repo);
    let page = session(&ui.url);
    let (status, answer) = send(
        &page.addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            page.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap()
}

#[test]
fn the_run_page_of_a_start_run_failed_on_a_model_error_says_why_and_what_continues_it() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let url = refusing_model();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
    ];
    let root = tmp.path().join("worktrees");
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
    let list = api(&repo, "/api/runs");
    let id = list["runs"][0]["id"].as_str().unwrap().to_string();
    let page = api(&repo, &format!("/api/run/{id}"));
    let failure = &page["status"]["start"]["failure"];
    assert!(
        failure["reason"]
            .as_str()
            .unwrap_or_default()
            .contains(REFUSAL),
        "{page}"
    );
    assert_eq!(
        failure["next"],
        format!("git orchestra resume {id}"),
        "{page}"
    );
    // The report on the page leads with the reason too.
    assert!(
        page["report"]
            .as_str()
            .unwrap_or_default()
            .contains(REFUSAL),
        "{page}"
    );
}

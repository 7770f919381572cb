//! What the pre-push gate tells the person pushing: why a rejected tree was rejected, a review
//! command that works on a first push to an empty remote, and ways around the model reviewer
//! that `git push` can take.

use std::io::{Read, Write};
use std::path::PathBuf;

use crate::gates::hook::{commit_on_feature, git_out, install, remote_has, with_remote};
use crate::support::*;

/// Regression: a push of a tree whose stored review rejected it said only that it had "no
/// approving review", not that it was rejected, nor why.
#[test]
fn a_push_of_a_rejected_tree_says_it_was_rejected_and_why_without_the_secret() {
    let (repo, remote) = with_remote();
    install(&repo);
    let key = "AKIAQWERTYUIOPASDFGH";
    commit_on_feature(&repo, "deploy.env", &format!("AWS_ACCESS_KEY_ID={key}\n"));
    let review = orchestra(&repo.path, &["review"]);
    assert_eq!(review.status.code(), Some(1), "{}", text(&review));

    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(!out.status.success(), "{}", text(&out));
    let err = text(&out);
    let refusal = err
        .lines()
        .find(|l| l.contains("push refused"))
        .unwrap_or_else(|| panic!("no refusal line: {err}"));
    assert!(refusal.contains("rejected by review"), "{refusal}");
    assert!(
        refusal.contains("reviewed by deterministic at "),
        "{refusal}"
    );
    assert!(
        refusal.contains("[blocker] secret deploy.env:1"),
        "{refusal}"
    );
    assert!(!err.contains("has no approving review"), "{err}");
    assert!(err.contains("REJECTED"), "the findings are shown: {err}");
    assert!(!err.contains(key), "{err}");
    assert!(!remote_has(&remote, "feature"));
}

/// Regression: on a first push to an empty remote the gate suggested
/// `git orchestra review <empty tree>..<tip>`, which failed with "does not name a commit".
#[test]
fn the_review_suggested_on_a_first_push_to_an_empty_remote_works_as_given() {
    let repo = TestRepo::new();
    let remote = repo.tmp.path().join("empty.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    install(&repo);
    let out = git_out(&repo.path, &["push", "origin", "main"], true);
    assert!(!out.status.success(), "{}", text(&out));
    let err = text(&out);
    let command = err
        .split('`')
        .find(|c| c.starts_with("git orchestra review "))
        .unwrap_or_else(|| panic!("no review command suggested: {err}"))
        .to_string();
    let empty_tree = repo.git(&["hash-object", "-t", "tree", "/dev/null"]);
    let tip = repo.git(&["rev-parse", "main"]);
    assert_eq!(command, format!("git orchestra review {empty_tree}..{tip}"));

    let args: Vec<&str> = command.split(' ').skip(2).collect();
    let out = orchestra(&repo.path, &args);
    assert!(out.status.success(), "`{command}`: {}", text(&out));
    let out = git_out(&repo.path, &["push", "origin", "main"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert!(remote_has(&remote, "main"));
}

/// Serves one loopback port that refuses every request with HTTP 401.
fn refusing_model() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = read_request(&stream);
            let body = r#"{"error":{"message":"bad key"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.flush();
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        }
    });
    url
}

/// Runs `git` with the binary on PATH and `env` set, as a person pushing would.
fn git_env(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    hermetic();
    let bin: PathBuf = std::path::Path::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("git");
    cmd.arg("-C").arg(dir).args(args).env("PATH", path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Regression: with `orchestra.gate.review auto`, a model reviewer that could not be set up or
/// failed made the hook suggest `--no-model`, which `git push` does not take.
#[test]
fn with_auto_review_the_hints_about_the_model_reviewer_work_from_git_push() {
    let (repo, remote) = with_remote();
    install(&repo);
    repo.git(&["config", "orchestra.gate.review", "auto"]);
    let url = refusing_model();
    repo.write(
        ".orchestra/config.toml",
        &format!(
            "[profiles.remote]\nprovider = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\napi_key_env = \"ORCHESTRA_TEST_REVIEW_KEY\"\n\n[roles.reviewer]\nprofile = \"remote\"\n"
        ),
    );
    std::fs::write(repo.path.join(".git/info/exclude"), ".orchestra/\n").unwrap();
    // The hook runs with the shared test home's configuration: the pin goes there.
    crate::support::trust(&repo.path);
    commit_on_feature(&repo, "src/a.rs", "pub fn a() {}\n");
    let workaround = "git -c orchestra.gate.model=false push";
    // The reviewer's key is not set: the model reviewer cannot be set up.
    let out = git_env(&repo.path, &["push", "origin", "feature"], &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("--no-model"), "{}", text(&out));
    assert!(text(&out).contains(workaround), "{}", text(&out));
    // The key is set but the server refuses it: the model review fails.
    let key = [("ORCHESTRA_TEST_REVIEW_KEY", "sk-review-SECRET-0123456789")];
    let out = git_env(&repo.path, &["push", "origin", "feature"], &key);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("--no-model"), "{}", text(&out));
    assert!(text(&out).contains(workaround), "{}", text(&out));
    assert!(!text(&out).contains("sk-review-SECRET"), "{}", text(&out));
    assert!(!remote_has(&remote, "feature"));
    // The hint, as given, gets the push through the deterministic checks.
    let out = git_env(
        &repo.path,
        &[
            "-c",
            "orchestra.gate.model=false",
            "push",
            "origin",
            "feature",
        ],
        &key,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("reviewed now and approved"),
        "{}",
        text(&out)
    );
    assert!(remote_has(&remote, "feature"));
}

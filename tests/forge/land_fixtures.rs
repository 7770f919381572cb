//! Setup and checks the landing tests share: pull request #1 opened through a forge client, a
//! plan published with `--pr` and the landing configured, the summary comment written again
//! and again, and what a landing wrote.

use std::path::Path;

use serde_json::Value;

use git_orchestra::forge::{Forge, MergeOutcome, NewPullRequest, SUMMARY_MARKER, SummaryAction};

use crate::forge::forge_mock::{FakeForge, Req};
use crate::forge::pull_requests::{run_env, write_plan};
use crate::support::*;

/// Opens pull request #1 (`feature` into `main`) through `client` and puts its head at `sha`,
/// mergeable.
pub(super) fn open_feature(fake: &FakeForge, client: &dyn Forge, sha: &str) {
    client
        .create(&NewPullRequest {
            title: "Add feature".into(),
            body: String::new(),
            head: "feature".into(),
            base: "main".into(),
            draft: false,
        })
        .unwrap();
    fake.set_head(1, sha, Some(true));
}

/// Writes `body` as `repo`'s `.orchestra/config.toml`.
pub(super) fn configure(repo: &TestRepo, body: &str) {
    std::fs::create_dir_all(repo.path.join(".orchestra")).unwrap();
    std::fs::write(repo.path.join(".orchestra/config.toml"), body).unwrap();
}

/// Runs the plan of `packets` with `--pr`, `worker` and `env` (it must succeed), worktrees
/// under the scratch directory, then configures `[land] poll_secs = 1`.
pub(super) fn publish_with(repo: &TestRepo, packets: &str, worker: &str, env: &[(&str, &str)]) {
    let plan = write_plan(repo, packets);
    let out = run_pr(repo, &plan, worker, env);
    assert!(out.status.success(), "{}", text(&out));
    configure(repo, "[land]\npoll_secs = 1\n");
}

/// Runs `plan` with `--pr`, `worker` and `env`, worktrees under the scratch directory.
pub(super) fn run_pr(
    repo: &TestRepo,
    plan: &Path,
    worker: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    let root = repo.scratch().join("wt");
    run_env(
        repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
            "--pr",
        ],
        env,
    )
}

/// Writes the summary of pull request #1 through `client` three times (once, the same again,
/// then changed), beside one comment of someone else's already there: it is created, left
/// unchanged, then edited, and there is one.
pub(super) fn summary_written_three_times(fake: &FakeForge, client: &dyn Forge) {
    assert_eq!(
        client.upsert_summary(1, "round 0").unwrap(),
        SummaryAction::Created
    );
    assert_eq!(
        client.upsert_summary(1, "round 0").unwrap(),
        SummaryAction::Unchanged
    );
    assert_eq!(
        client.upsert_summary(1, "round 1").unwrap(),
        SummaryAction::Updated
    );
    let comments = fake.comments_of(1);
    let ours: Vec<&str> = comments
        .iter()
        .filter_map(|c| c["body"].as_str())
        .filter(|b| b.contains(SUMMARY_MARKER))
        .collect();
    assert_eq!(ours.len(), 1, "{comments:?}");
    assert!(ours[0].ends_with("round 1"), "{}", ours[0]);
    assert_eq!(comments.len(), 2);
}

/// Asserts that each of pull requests 1 and 2 on `forge` carries one summary comment, saying
/// it merged; `kind` names them in a failure.
pub(super) fn one_merged_summary_each(forge: &FakeForge, kind: &str) {
    for n in [1, 2] {
        let ours: Vec<Value> = forge
            .comments_of(n)
            .into_iter()
            .filter(|c| {
                c["body"]
                    .as_str()
                    .is_some_and(|b| b.contains(SUMMARY_MARKER))
            })
            .collect();
        assert_eq!(ours.len(), 1, "{kind} {n}: {ours:?}");
        assert!(ours[0]["body"].as_str().unwrap().contains("merged"));
    }
}

/// Asserts that `forge` received two merge calls in all.
pub(super) fn merged_once_each(forge: &FakeForge) {
    let merges = forge
        .calls()
        .iter()
        .filter(|c| c.ends_with("/merge"))
        .count();
    assert_eq!(merges, 2, "nothing is merged twice");
}

/// Returns the calls `forge` received from its `start`th on that are not reads and that
/// `keep` keeps.
pub(super) fn writes_since(
    forge: &FakeForge,
    start: usize,
    keep: impl Fn(&str) -> bool,
) -> Vec<String> {
    forge.calls()[start..]
        .iter()
        .filter(|c| !c.starts_with("GET") && keep(c))
        .cloned()
        .collect()
}

/// Returns GitLab's calls from the `start`th on that write anything but notes.
pub(super) fn gitlab_writes_since(forge: &FakeForge, start: usize) -> Vec<String> {
    writes_since(forge, start, |c| {
        !c.ends_with("/notes") && !c.contains("/notes/")
    })
}

/// Returns the role and text of every message of `body`, a chat request.
pub(super) fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Returns the last request `fake` received at a path ending with `suffix`.
pub(super) fn last_request_to(fake: &FakeForge, suffix: &str) -> Req {
    fake.requests()
        .into_iter()
        .rfind(|r| r.path.ends_with(suffix))
        .unwrap()
}

/// Asserts that `outcome` is a refusal whose reason says `why`.
pub(super) fn assert_refused(outcome: &MergeOutcome, why: &str) {
    assert!(
        matches!(outcome, MergeOutcome::Refused { reason } if reason.contains(why)),
        "{outcome:?}"
    );
}

/// Returns the request of `sent` with a user message that contains `needle`; `what` names
/// what it carries in a failure.
pub(super) fn request_saying<'a>(sent: &'a [Value], needle: &str, what: &str) -> &'a Value {
    sent.iter()
        .find(|b| {
            messages(b)
                .iter()
                .any(|(r, t)| r == "user" && t.contains(needle))
        })
        .unwrap_or_else(|| panic!("no request carried {what}: {sent:?}"))
}

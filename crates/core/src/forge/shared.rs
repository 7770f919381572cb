//! Request plumbing the forge clients share: reading a list of pull requests, picking the one
//! for a head branch, the fields of an update, and the label, reviewer and comment calls that
//! GitHub and Gitea answer with the same shapes.

use serde_json::{Map, Value, json};

use super::github::encode;
use super::http::Api;
use super::landing::PrStatus;
use super::{ForgeError, PrState, PullRequest, PullRequestUpdate};

/// Reads a pull request object of one forge's shape.
pub(super) type Parse = fn(&Value, &str, &str) -> Result<PullRequest, ForgeError>;

/// Returns the pull requests of a list answer, or a protocol error naming the request.
pub(super) fn pull_list(
    answer: &Value,
    method: &str,
    path: &str,
    parse: Parse,
) -> Result<Vec<PullRequest>, ForgeError> {
    answer
        .as_array()
        .ok_or_else(|| ForgeError::Protocol {
            method: method.into(),
            path: path.into(),
            message: "expected a list of pull requests".into(),
        })?
        .iter()
        .map(|v| parse(v, method, path))
        .collect()
}

/// Returns the pull request of `branch` among `found`: an open one if any, else the newest.
/// (Server-side head filters are checked again here.)
pub(super) fn pick_for_head(mut found: Vec<PullRequest>, branch: &str) -> Option<PullRequest> {
    found.retain(|p| p.head == branch);
    found.sort_by_key(|p| (p.state == PrState::Open, p.number));
    found.pop()
}

/// How a forge names an update's fields, and how it marks drafts.
pub(super) struct UpdateShape {
    pub body: &'static str,
    pub base: &'static str,
    /// Forges that mark drafts in the title (`WIP:`, `Draft:`) rewrite it with this; `None`
    /// when drafts are a separate flag.
    pub titled_draft: Option<fn(&str, bool) -> String>,
}

/// Returns the fields to send for `change` to `pr`; empty when nothing changes.
pub(super) fn update_fields(
    pr: &PullRequest,
    change: &PullRequestUpdate,
    shape: &UpdateShape,
) -> Map<String, Value> {
    let mut fields = Map::new();
    match shape.titled_draft {
        Some(with_draft) => {
            if change.title.is_some() || change.draft.is_some_and(|d| d != pr.draft) {
                let title = change.title.as_deref().unwrap_or(&pr.title);
                let draft = change.draft.unwrap_or(pr.draft);
                fields.insert("title".into(), json!(with_draft(title, draft)));
            }
        }
        None => {
            if let Some(t) = &change.title {
                fields.insert("title".into(), json!(t));
            }
        }
    }
    if let Some(b) = &change.body {
        fields.insert(shape.body.into(), json!(b));
    }
    if let Some(b) = &change.base {
        fields.insert(shape.base.into(), json!(b));
    }
    fields
}

/// Returns the title without a leading draft marker (one of `markers`) and whether it had
/// one: forges that mark drafts in the title (Gitea's `WIP:`, GitLab's `Draft:`).
pub(super) fn split_marked(title: &str, markers: &[&str]) -> (String, bool) {
    for prefix in markers {
        if let Some(rest) = title.strip_prefix(prefix) {
            return (rest.trim_start().to_string(), true);
        }
    }
    (title.to_string(), false)
}

/// Returns `title` with `marker` in front when `draft`.
pub(super) fn marked(marker: &str, title: &str, draft: bool) -> String {
    if draft {
        format!("{marker}{title}")
    } else {
        title.to_string()
    }
}

/// Sends `fields` with `method` to `path` and reads the updated pull request; `pr` as it is
/// when there is nothing to change.
pub(super) fn send_update(
    api: &Api,
    method: &str,
    path: &str,
    pr: &PullRequest,
    fields: Map<String, Value>,
    parse: Parse,
) -> Result<PullRequest, ForgeError> {
    if fields.is_empty() {
        return Ok(pr.clone());
    }
    let answer = api.request(method, path, Some(&Value::Object(fields)))?;
    parse(&answer, method, path)
}

/// One repository of a GitHub-shaped REST API (GitHub, Gitea): its client, owner and path,
/// and the issue-side calls both forges answer alike.
pub(super) struct RepoApi {
    pub api: Api,
    pub owner: String,
    /// `/repos/<owner>/<name>`, encoded.
    pub path: String,
}

impl RepoApi {
    pub(super) fn new(api: Api, owner: &str, name: &str) -> RepoApi {
        RepoApi {
            api,
            owner: owner.to_string(),
            path: format!("/repos/{}/{}", encode(owner), encode(name)),
        }
    }

    pub(super) fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        let path = format!("{}/issues/{number}/labels", self.path);
        self.api
            .request("POST", &path, Some(&json!({ "labels": labels })))?;
        Ok(())
    }

    pub(super) fn request_reviewers(
        &self,
        number: u64,
        reviewers: &[String],
    ) -> Result<(), ForgeError> {
        if reviewers.is_empty() {
            return Ok(());
        }
        let path = format!("{}/pulls/{number}/requested_reviewers", self.path);
        self.api
            .request("POST", &path, Some(&json!({ "reviewers": reviewers })))?;
        Ok(())
    }

    pub(super) fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError> {
        let path = format!("{}/issues/{number}/comments", self.path);
        self.api
            .request("POST", &path, Some(&json!({ "body": body })))?;
        Ok(())
    }

    /// Opens a pull request from `body` (the forge's fields) and reads it back with `parse`.
    pub(super) fn create_pull(
        &self,
        body: &Value,
        parse: Parse,
    ) -> Result<PullRequest, ForgeError> {
        let path = format!("{}/pulls", self.path);
        let answer = self.api.request("POST", &path, Some(body))?;
        parse(&answer, "POST", &path)
    }

    /// Reads pull request `number`'s live state, the pull request read by the forge's `parse`
    /// (GitHub and Gitea put the head commit and the mergeable flag in the same fields).
    pub(super) fn pr_status(&self, number: u64, parse: Parse) -> Result<PrStatus, ForgeError> {
        let path = format!("{}/pulls/{number}", self.path);
        let v = self.api.request("GET", &path, None)?;
        let pr = parse(&v, "GET", &path)?;
        Ok(PrStatus {
            number,
            state: pr.state,
            head: pr.head,
            head_sha: v["head"]["sha"]
                .as_str()
                .ok_or_else(|| missing(&path, "head.sha"))?
                .to_string(),
            base: pr.base,
            draft: pr.draft,
            mergeable: v["mergeable"].as_bool(),
        })
    }
}

/// Returns a protocol error for an answer to `GET path` that lacks `what`.
pub(super) fn missing(path: &str, what: &str) -> ForgeError {
    ForgeError::Protocol {
        method: "GET".into(),
        path: path.to_string(),
        message: format!("the answer has no {what}"),
    }
}

/// Implements, inside the `impl Forge` of a client whose `repo` field is a [`RepoApi`], the
/// calls GitHub and Gitea answer alike: labels, reviewers, comments, retargeting and the
/// summary comment; the live state of a pull request read by `$parse`; and the checks, the
/// allowed merge methods and the merge by the functions of the forge's landing module `$land`.
macro_rules! github_shaped_calls {
    ($parse:path, $land:ident) => {
        fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), ForgeError> {
            self.repo.add_labels(number, labels)
        }

        fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), ForgeError> {
            self.repo.request_reviewers(number, reviewers)
        }

        fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError> {
            self.repo.comment(number, body)
        }

        fn pr_status(&self, number: u64) -> Result<$crate::forge::PrStatus, ForgeError> {
            self.repo.pr_status(number, $parse)
        }

        fn checks(&self, sha: &str) -> Result<Vec<$crate::forge::Check>, ForgeError> {
            $land::checks(&self.repo, sha)
        }

        fn allowed_methods(&self) -> Result<Vec<$crate::forge::MergeMethod>, ForgeError> {
            $land::allowed_methods(&self.repo)
        }

        fn merge(
            &self,
            number: u64,
            method: $crate::forge::MergeMethod,
            head_sha: &str,
        ) -> Result<$crate::forge::MergeOutcome, ForgeError> {
            $land::merge(&self.repo, number, method, head_sha)
        }

        fn retarget(&self, number: u64, base: &str) -> Result<(), ForgeError> {
            // Gitea edits the base with the same call and field as GitHub.
            super::github_land::retarget(&self.repo, number, base)
        }

        fn upsert_summary(
            &self,
            number: u64,
            body: &str,
        ) -> Result<$crate::forge::SummaryAction, ForgeError> {
            // Gitea lists and edits the conversation's comments as GitHub does.
            super::github_land::upsert_summary(&self.repo, number, body)
        }
    };
}
pub(super) use github_shaped_calls;

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(number: u64, head: &str, state: PrState) -> PullRequest {
        PullRequest {
            number,
            url: String::new(),
            head: head.into(),
            base: "main".into(),
            title: "Add x".into(),
            body: String::new(),
            draft: false,
            state,
            node_id: None,
        }
    }

    #[test]
    fn an_open_pull_request_of_the_head_wins_over_newer_closed_ones() {
        let found = vec![
            pr(1, "a", PrState::Open),
            pr(2, "a", PrState::Closed),
            pr(3, "b", PrState::Open),
        ];
        assert_eq!(pick_for_head(found, "a").map(|p| p.number), Some(1));
        let closed = vec![pr(4, "a", PrState::Closed), pr(5, "a", PrState::Merged)];
        assert_eq!(pick_for_head(closed, "a").map(|p| p.number), Some(5));
        assert!(pick_for_head(vec![pr(6, "b", PrState::Open)], "a").is_none());
    }

    #[test]
    fn titled_drafts_rewrite_the_title_only_when_the_draft_state_changes() {
        let shape = UpdateShape {
            body: "description",
            base: "target_branch",
            titled_draft: Some(|t, d| {
                if d {
                    format!("Draft: {t}")
                } else {
                    t.to_string()
                }
            }),
        };
        let current = pr(1, "a", PrState::Open);
        let same = PullRequestUpdate {
            draft: Some(false),
            body: Some("b".into()),
            ..PullRequestUpdate::default()
        };
        let fields = update_fields(&current, &same, &shape);
        assert_eq!(fields.get("description"), Some(&json!("b")));
        assert!(fields.get("title").is_none());
        let drafted = PullRequestUpdate {
            draft: Some(true),
            ..PullRequestUpdate::default()
        };
        let fields = update_fields(&current, &drafted, &shape);
        assert_eq!(fields.get("title"), Some(&json!("Draft: Add x")));
    }
}

//! Gitea's and Forgejo's REST API (`/api/v1`) for pull requests. It mirrors GitHub's shapes
//! closely; the differences handled here are the `token` auth scheme, no server-side filter by
//! head branch, and drafts marked by a `WIP:` title prefix instead of a flag.

use serde_json::{Value, json};

use super::github::{encode, parse_pull};
use super::http::{Api, Token};
use super::limit::DEFAULT_WRITES_PER_MINUTE;
use super::{
    Forge, ForgeError, ForgeKind, NewPullRequest, PrState, PullRequest, PullRequestUpdate,
};

/// The title prefix Gitea treats as "work in progress" (its draft state).
const WIP: &str = "WIP: ";

/// Most pages of pull requests read while looking for a head branch.
const MAX_PAGES: usize = 20;

/// Pull requests of one Gitea or Forgejo repository.
pub struct Gitea {
    api: Api,
    owner: String,
    name: String,
}

impl Gitea {
    /// Returns a client for `owner/name` at `api_url` (`https://<host>/api/v1`).
    pub fn new(
        api_url: &str,
        owner: &str,
        name: &str,
        token: Option<Token>,
        writes_per_minute: Option<usize>,
    ) -> Gitea {
        Gitea {
            api: Api::new(
                api_url,
                token,
                "token",
                "application/json",
                writes_per_minute.unwrap_or(DEFAULT_WRITES_PER_MINUTE),
            ),
            owner: owner.to_string(),
            name: name.to_string(),
        }
    }

    fn repo_path(&self) -> String {
        format!("/repos/{}/{}", encode(&self.owner), encode(&self.name))
    }
}

/// Returns the title and draft flag a Gitea title encodes.
fn split_wip(title: &str) -> (String, bool) {
    for prefix in ["WIP:", "[WIP]"] {
        if let Some(rest) = title.strip_prefix(prefix) {
            return (rest.trim_start().to_string(), true);
        }
    }
    (title.to_string(), false)
}

fn with_wip(title: &str, draft: bool) -> String {
    if draft {
        format!("{WIP}{title}")
    } else {
        title.to_string()
    }
}

fn parse(v: &Value, method: &str, path: &str) -> Result<PullRequest, ForgeError> {
    let mut pr = parse_pull(v, method, path)?;
    let (title, draft) = split_wip(&pr.title);
    pr.title = title;
    pr.draft = draft;
    Ok(pr)
}

impl Forge for Gitea {
    fn kind(&self) -> ForgeKind {
        ForgeKind::Gitea
    }

    fn find_by_head(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError> {
        let mut found = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("{}/pulls?state=all&limit=50&page={page}", self.repo_path());
            let answer = self.api.request("GET", &path, None)?;
            let list = answer.as_array().ok_or_else(|| ForgeError::Protocol {
                method: "GET".into(),
                path: path.clone(),
                message: "expected a list of pull requests".into(),
            })?;
            for v in list {
                let pr = parse(v, "GET", &path)?;
                if pr.head == branch {
                    found.push(pr);
                }
            }
            if list.len() < 50 {
                break;
            }
        }
        found.sort_by_key(|p| (p.state == PrState::Open, p.number));
        Ok(found.pop())
    }

    fn create(&self, pr: &NewPullRequest) -> Result<PullRequest, ForgeError> {
        let path = format!("{}/pulls", self.repo_path());
        let body = json!({
            "title": with_wip(&pr.title, pr.draft),
            "head": pr.head,
            "base": pr.base,
            "body": pr.body,
        });
        let answer = self.api.request("POST", &path, Some(&body))?;
        parse(&answer, "POST", &path)
    }

    fn update(
        &self,
        pr: &PullRequest,
        change: &PullRequestUpdate,
    ) -> Result<PullRequest, ForgeError> {
        let mut fields = serde_json::Map::new();
        if change.title.is_some() || change.draft.is_some_and(|d| d != pr.draft) {
            let title = change.title.as_deref().unwrap_or(&pr.title);
            let draft = change.draft.unwrap_or(pr.draft);
            fields.insert("title".into(), json!(with_wip(title, draft)));
        }
        if let Some(b) = &change.body {
            fields.insert("body".into(), json!(b));
        }
        if let Some(b) = &change.base {
            fields.insert("base".into(), json!(b));
        }
        if fields.is_empty() {
            return Ok(pr.clone());
        }
        let path = format!("{}/pulls/{}", self.repo_path(), pr.number);
        let answer = self
            .api
            .request("PATCH", &path, Some(&Value::Object(fields)))?;
        parse(&answer, "PATCH", &path)
    }

    fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        let path = format!("{}/issues/{number}/labels", self.repo_path());
        self.api
            .request("POST", &path, Some(&json!({ "labels": labels })))?;
        Ok(())
    }

    fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), ForgeError> {
        if reviewers.is_empty() {
            return Ok(());
        }
        let path = format!("{}/pulls/{number}/requested_reviewers", self.repo_path());
        self.api
            .request("POST", &path, Some(&json!({ "reviewers": reviewers })))?;
        Ok(())
    }

    fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError> {
        let path = format!("{}/issues/{number}/comments", self.repo_path());
        self.api
            .request("POST", &path, Some(&json!({ "body": body })))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_round_trip_through_the_title() {
        assert_eq!(split_wip("WIP: Add x"), ("Add x".to_string(), true));
        assert_eq!(split_wip("[WIP] Add x"), ("Add x".to_string(), true));
        assert_eq!(split_wip("Add x"), ("Add x".to_string(), false));
        assert_eq!(with_wip("Add x", true), "WIP: Add x");
    }
}

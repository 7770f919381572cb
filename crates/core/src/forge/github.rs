//! GitHub's REST API (github.com and GitHub Enterprise Server) for pull requests, plus the one
//! GraphQL mutation REST lacks: switching a pull request between draft and ready.

use serde_json::{Value, json};

use super::github_land;
use super::http::{Api, Token};
use super::limit::DEFAULT_WRITES_PER_MINUTE;
use super::shared;
use super::{
    Check, Forge, ForgeError, ForgeKind, NewPullRequest, PrComment, PrState, PullRequest,
    PullRequestUpdate, Review,
};

/// The public GitHub API.
pub const GITHUB_API: &str = "https://api.github.com";

/// Pull requests of one GitHub repository.
pub struct GitHub {
    repo: shared::RepoApi,
}

impl GitHub {
    /// Returns a client for `owner/name` at `api_url` (`https://api.github.com`, or
    /// `https://<host>/api/v3` for Enterprise).
    pub fn new(
        api_url: &str,
        owner: &str,
        name: &str,
        token: Option<Token>,
        writes_per_minute: Option<usize>,
    ) -> GitHub {
        GitHub {
            repo: shared::RepoApi::new(
                Api::new(
                    api_url,
                    token,
                    "Bearer",
                    "application/vnd.github+json",
                    writes_per_minute.unwrap_or(DEFAULT_WRITES_PER_MINUTE),
                ),
                owner,
                name,
            ),
        }
    }

    /// Returns the GraphQL endpoint that belongs to the REST base.
    fn graphql_url(&self) -> String {
        let base = self.repo.api.base();
        match base.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{base}/graphql"),
        }
    }

    fn set_draft(&self, pr: &PullRequest, draft: bool) -> Result<(), ForgeError> {
        let id = pr.node_id.clone().ok_or_else(|| ForgeError::Protocol {
            method: "GET".into(),
            path: format!("{}/pulls/{}", self.repo.path, pr.number),
            message: "the pull request has no node_id".into(),
        })?;
        let mutation = if draft {
            "convertPullRequestToDraft"
        } else {
            "markPullRequestReadyForReview"
        };
        let query = format!(
            "mutation($id: ID!) {{ {mutation}(input: {{pullRequestId: $id}}) {{ pullRequest {{ isDraft }} }} }}"
        );
        let url = self.graphql_url();
        let answer = self.repo.api.request(
            "POST",
            &url,
            Some(&json!({ "query": query, "variables": { "id": id } })),
        )?;
        if let Some(errors) = answer.get("errors").filter(|e| !e.is_null()) {
            return Err(ForgeError::Protocol {
                method: "POST".into(),
                path: url,
                message: format!("GraphQL errors: {errors}"),
            });
        }
        Ok(())
    }
}

impl Forge for GitHub {
    shared::github_shaped_calls!(parse_pull, github_land);

    fn kind(&self) -> ForgeKind {
        ForgeKind::GitHub
    }

    fn find_by_head(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError> {
        let path = format!(
            "{}/pulls?head={}:{}&state=all&per_page=100",
            self.repo.path,
            encode(&self.repo.owner),
            encode(branch)
        );
        let answer = self.repo.api.request("GET", &path, None)?;
        let found = shared::pull_list(&answer, "GET", &path, parse_pull)?;
        Ok(shared::pick_for_head(found, branch))
    }

    fn create(&self, pr: &NewPullRequest) -> Result<PullRequest, ForgeError> {
        self.repo.create_pull(
            &json!({
                "title": pr.title,
                "head": pr.head,
                "base": pr.base,
                "body": pr.body,
                "draft": pr.draft,
            }),
            parse_pull,
        )
    }

    fn update(
        &self,
        pr: &PullRequest,
        change: &PullRequestUpdate,
    ) -> Result<PullRequest, ForgeError> {
        let mut current = pr.clone();
        let fields = shared::update_fields(
            pr,
            change,
            &shared::UpdateShape {
                body: "body",
                base: "base",
                titled_draft: None,
            },
        );
        if !fields.is_empty() {
            let path = format!("{}/pulls/{}", self.repo.path, pr.number);
            current = shared::send_update(&self.repo.api, "PATCH", &path, pr, fields, parse_pull)?;
            if current.node_id.is_none() {
                current.node_id = pr.node_id.clone();
            }
        }
        if let Some(draft) = change.draft
            && draft != current.draft
        {
            self.set_draft(&current, draft)?;
            current.draft = draft;
        }
        Ok(current)
    }

    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        github_land::reviews(&self.repo, number)
    }

    fn review_comments(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        let path = format!("{}/pulls/{number}/comments?per_page=100", self.repo.path);
        github_land::comments(&self.repo, &path)
    }

    fn conversation(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        let path = format!("{}/issues/{number}/comments?per_page=100", self.repo.path);
        github_land::comments(&self.repo, &path)
    }

    fn rerun(&self, check: &Check) -> Result<bool, ForgeError> {
        github_land::rerun(&self.repo, check)
    }

    fn reply_to_review_comment(
        &self,
        number: u64,
        comment: u64,
        body: &str,
    ) -> Result<(), ForgeError> {
        let path = format!(
            "{}/pulls/{number}/comments/{comment}/replies",
            self.repo.path
        );
        self.repo
            .api
            .request("POST", &path, Some(&serde_json::json!({ "body": body })))
            .map(drop)
    }
}

/// Reads a pull request object (the shape GitHub and Gitea share).
pub(super) fn parse_pull(v: &Value, method: &str, path: &str) -> Result<PullRequest, ForgeError> {
    let bad = |what: &str| ForgeError::Protocol {
        method: method.to_string(),
        path: path.to_string(),
        message: format!("the pull request has no {what}"),
    };
    let number = v["number"].as_u64().ok_or_else(|| bad("number"))?;
    let merged = v["merged"].as_bool() == Some(true)
        || v["merged_at"].as_str().is_some_and(|s| !s.is_empty());
    let state = match (v["state"].as_str(), merged) {
        (_, true) => PrState::Merged,
        (Some("open"), false) => PrState::Open,
        (Some(_), false) => PrState::Closed,
        (None, false) => return Err(bad("state")),
    };
    Ok(PullRequest {
        number,
        url: v["html_url"].as_str().unwrap_or_default().to_string(),
        head: v["head"]["ref"]
            .as_str()
            .ok_or_else(|| bad("head.ref"))?
            .to_string(),
        base: v["base"]["ref"]
            .as_str()
            .ok_or_else(|| bad("base.ref"))?
            .to_string(),
        title: v["title"].as_str().unwrap_or_default().to_string(),
        body: v["body"].as_str().unwrap_or_default().to_string(),
        draft: v["draft"].as_bool().unwrap_or(false),
        state,
        node_id: v["node_id"].as_str().map(str::to_string),
    })
}

/// Percent-encodes everything but unreserved characters, for path segments and query values.
pub(super) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_branch_names_and_finds_the_graphql_endpoint() {
        assert_eq!(encode("orchestra/run-1/p1"), "orchestra%2Frun-1%2Fp1");
        let gh = GitHub::new(GITHUB_API, "o", "r", None, None);
        assert_eq!(gh.graphql_url(), "https://api.github.com/graphql");
        let ghe = GitHub::new("https://ghe.example/api/v3/", "o", "r", None, None);
        assert_eq!(ghe.graphql_url(), "https://ghe.example/api/graphql");
    }

    #[test]
    fn reads_states_and_refuses_incomplete_objects() {
        let v = json!({"number": 3, "state": "closed", "merged_at": "2026-01-01T00:00:00Z",
            "head": {"ref": "a"}, "base": {"ref": "main"}, "title": "t", "body": null});
        let pr = parse_pull(&v, "GET", "/x").unwrap();
        assert_eq!((pr.state, pr.body.as_str()), (PrState::Merged, ""));
        let err = parse_pull(&json!({"number": 1, "state": "open"}), "GET", "/x").unwrap_err();
        assert!(err.to_string().contains("head.ref"), "{err}");
    }
}

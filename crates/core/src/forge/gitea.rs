//! Gitea's and Forgejo's REST API (`/api/v1`) for pull requests. It mirrors GitHub's shapes
//! closely; the differences handled here are the `token` auth scheme, no server-side filter by
//! head branch, and drafts marked by a `WIP:` title prefix instead of a flag.

use serde_json::{Value, json};

use super::gitea_land;
use super::github::parse_pull;
use super::http::{Api, Token};
use super::landing::{Check, PrComment, Review};
use super::limit::DEFAULT_WRITES_PER_MINUTE;
use super::shared;
use super::{Forge, ForgeError, ForgeKind, NewPullRequest, PullRequest, PullRequestUpdate};

/// The title prefix Gitea treats as "work in progress" (its draft state).
const WIP: &str = "WIP: ";

/// Most pages of pull requests read while looking for a head branch.
const MAX_PAGES: usize = 20;

/// Pull requests of one Gitea or Forgejo repository.
pub struct Gitea {
    repo: shared::RepoApi,
    /// Each account's relation to the repository, read once.
    who: super::gitea_land::Associations,
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
            repo: shared::RepoApi::new(
                Api::new(
                    api_url,
                    token,
                    "token",
                    "application/json",
                    writes_per_minute.unwrap_or(DEFAULT_WRITES_PER_MINUTE),
                ),
                owner,
                name,
            ),
            who: super::gitea_land::Associations::default(),
        }
    }
}

/// Returns the title and draft flag a Gitea title encodes.
fn split_wip(title: &str) -> (String, bool) {
    shared::split_marked(title, &["WIP:", "[WIP]"])
}

fn with_wip(title: &str, draft: bool) -> String {
    shared::marked(WIP, title, draft)
}

/// Reads a Gitea pull request, its draft state from the title.
pub(super) fn parse(v: &Value, method: &str, path: &str) -> Result<PullRequest, ForgeError> {
    let mut pr = parse_pull(v, method, path)?;
    let (title, draft) = split_wip(&pr.title);
    pr.title = title;
    pr.draft = draft;
    Ok(pr)
}

impl Forge for Gitea {
    shared::github_shaped_calls!(parse, gitea_land);

    fn kind(&self) -> ForgeKind {
        ForgeKind::Gitea
    }

    fn find_by_head(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError> {
        // No server-side head filter: page through every pull request.
        let mut found = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("{}/pulls?state=all&limit=50&page={page}", self.repo.path);
            let answer = self.repo.api.request("GET", &path, None)?;
            let list = shared::pull_list(&answer, "GET", &path, parse)?;
            let last = list.len() < 50;
            found.extend(list.into_iter().filter(|p| p.head == branch));
            if last {
                break;
            }
        }
        Ok(shared::pick_for_head(found, branch))
    }

    fn create(&self, pr: &NewPullRequest) -> Result<PullRequest, ForgeError> {
        self.repo.create_pull(
            &json!({
                "title": with_wip(&pr.title, pr.draft),
                "head": pr.head,
                "base": pr.base,
                "body": pr.body,
            }),
            parse,
        )
    }

    fn update(
        &self,
        pr: &PullRequest,
        change: &PullRequestUpdate,
    ) -> Result<PullRequest, ForgeError> {
        let fields = shared::update_fields(
            pr,
            change,
            &shared::UpdateShape {
                body: "body",
                base: "base",
                titled_draft: Some(with_wip),
            },
        );
        let path = format!("{}/pulls/{}", self.repo.path, pr.number);
        shared::send_update(&self.repo.api, "PATCH", &path, pr, fields, parse)
    }

    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        gitea_land::reviews(&self.repo, &self.who, number)
    }

    fn review_comments(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        gitea_land::review_comments(&self.repo, &self.who, number)
    }

    fn conversation(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        gitea_land::conversation(&self.repo, &self.who, number)
    }

    fn rerun(&self, check: &Check) -> Result<bool, ForgeError> {
        // Gitea's API re-runs nothing: its checks are commit statuses.
        let _ = check;
        Ok(false)
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

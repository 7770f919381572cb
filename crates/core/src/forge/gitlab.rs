//! GitLab's REST API (`/api/v4`) for merge requests, GitLab's pull requests. The same
//! interface maps onto different names: `iid` is the number, source and target branches are
//! head and base, drafts are a `Draft:` title prefix, labels and reviewers are set with a
//! `PUT` (reviewers by user id, looked up by name).

use serde_json::{Value, json};

use super::github::encode;
use super::gitlab_land;
use super::http::{Api, Token};
use super::landing::{
    Check, MergeMethod, MergeOutcome, PrComment, PrStatus, Review, SummaryAction,
};
use super::limit::DEFAULT_WRITES_PER_MINUTE;
use super::shared;
use super::{
    Forge, ForgeError, ForgeKind, NewPullRequest, PrState, PullRequest, PullRequestUpdate,
};

const DRAFT: &str = "Draft: ";

/// Merge requests of one GitLab project.
pub struct GitLab {
    api: Api,
    /// The project's URL-encoded full path (`group%2Fsub%2Fname`).
    project: String,
    /// Each account's relation to the project, read once.
    who: gitlab_land::Associations,
}

impl GitLab {
    /// Returns a client for the project at `path` (`group/…/name`) at `api_url`
    /// (`https://<host>/api/v4`).
    pub fn new(
        api_url: &str,
        path: &str,
        token: Option<Token>,
        writes_per_minute: Option<usize>,
    ) -> GitLab {
        GitLab {
            api: Api::new(
                api_url,
                token,
                "Bearer",
                "application/json",
                writes_per_minute.unwrap_or(DEFAULT_WRITES_PER_MINUTE),
            ),
            project: encode(path),
            who: gitlab_land::Associations::default(),
        }
    }

    /// Returns the project's landing calls.
    fn land(&self) -> gitlab_land::Project<'_> {
        gitlab_land::Project {
            api: &self.api,
            path: format!("/projects/{}", self.project),
            who: &self.who,
        }
    }

    fn mr_path(&self) -> String {
        format!("/projects/{}/merge_requests", self.project)
    }
}

fn split_draft(title: &str) -> (String, bool) {
    shared::split_marked(title, &["Draft:", "[Draft]", "(Draft)", "WIP:", "[WIP]"])
}

fn with_draft(title: &str, draft: bool) -> String {
    shared::marked(DRAFT, title, draft)
}

fn parse(v: &Value, method: &str, path: &str) -> Result<PullRequest, ForgeError> {
    let bad = |what: &str| ForgeError::Protocol {
        method: method.to_string(),
        path: path.to_string(),
        message: format!("the merge request has no {what}"),
    };
    let (title, prefixed) = split_draft(v["title"].as_str().unwrap_or_default());
    Ok(PullRequest {
        number: v["iid"].as_u64().ok_or_else(|| bad("iid"))?,
        url: v["web_url"].as_str().unwrap_or_default().to_string(),
        head: v["source_branch"]
            .as_str()
            .ok_or_else(|| bad("source_branch"))?
            .to_string(),
        base: v["target_branch"]
            .as_str()
            .ok_or_else(|| bad("target_branch"))?
            .to_string(),
        title,
        body: v["description"].as_str().unwrap_or_default().to_string(),
        draft: v["draft"].as_bool().unwrap_or(false) || prefixed,
        state: match v["state"].as_str() {
            Some("opened") => PrState::Open,
            Some("merged") => PrState::Merged,
            Some(_) => PrState::Closed,
            None => return Err(bad("state")),
        },
        node_id: None,
    })
}

impl Forge for GitLab {
    fn kind(&self) -> ForgeKind {
        ForgeKind::GitLab
    }

    fn find_by_head(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError> {
        let path = format!(
            "{}?source_branch={}&state=all&per_page=100",
            self.mr_path(),
            encode(branch)
        );
        let answer = self.api.request("GET", &path, None)?;
        let found = shared::pull_list(&answer, "GET", &path, parse)?;
        Ok(shared::pick_for_head(found, branch))
    }

    fn create(&self, pr: &NewPullRequest) -> Result<PullRequest, ForgeError> {
        let path = self.mr_path();
        let body = json!({
            "source_branch": pr.head,
            "target_branch": pr.base,
            "title": with_draft(&pr.title, pr.draft),
            "description": pr.body,
        });
        let answer = self.api.request("POST", &path, Some(&body))?;
        parse(&answer, "POST", &path)
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
                body: "description",
                base: "target_branch",
                titled_draft: Some(with_draft),
            },
        );
        let path = format!("{}/{}", self.mr_path(), pr.number);
        shared::send_update(&self.api, "PUT", &path, pr, fields, parse)
    }

    fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), ForgeError> {
        if labels.is_empty() {
            return Ok(());
        }
        let path = format!("{}/{number}", self.mr_path());
        self.api.request(
            "PUT",
            &path,
            Some(&json!({ "add_labels": labels.join(",") })),
        )?;
        Ok(())
    }

    fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), ForgeError> {
        let mut ids = Vec::new();
        for name in reviewers {
            let path = format!("/users?username={}", encode(name));
            let answer = self.api.request("GET", &path, None)?;
            match answer.get(0).and_then(|u| u["id"].as_u64()) {
                Some(id) => ids.push(id),
                None => {
                    return Err(ForgeError::Config(format!(
                        "GitLab has no user `{name}` (orchestra.pr.reviewers)"
                    )));
                }
            }
        }
        if ids.is_empty() {
            return Ok(());
        }
        let path = format!("{}/{number}", self.mr_path());
        self.api
            .request("PUT", &path, Some(&json!({ "reviewer_ids": ids })))?;
        Ok(())
    }

    fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError> {
        let path = format!("{}/{number}/notes", self.mr_path());
        self.api
            .request("POST", &path, Some(&json!({ "body": body })))?;
        Ok(())
    }

    fn pr_status(&self, number: u64) -> Result<PrStatus, ForgeError> {
        self.land().pr_status(number, parse)
    }

    fn checks(&self, sha: &str) -> Result<Vec<Check>, ForgeError> {
        self.land().checks(sha)
    }

    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        self.land().reviews(number)
    }

    fn review_comments(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        self.land().notes(number, true)
    }

    fn conversation(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        self.land().notes(number, false)
    }

    fn allowed_methods(&self) -> Result<Vec<MergeMethod>, ForgeError> {
        self.land().allowed_methods()
    }

    fn merge(
        &self,
        number: u64,
        method: MergeMethod,
        head_sha: &str,
    ) -> Result<MergeOutcome, ForgeError> {
        self.land().merge(number, method, head_sha)
    }

    fn retarget(&self, number: u64, base: &str) -> Result<(), ForgeError> {
        self.land().retarget(number, base)
    }

    fn rerun(&self, check: &Check) -> Result<bool, ForgeError> {
        self.land().rerun(check)
    }

    fn upsert_summary(&self, number: u64, body: &str) -> Result<SummaryAction, ForgeError> {
        self.land().upsert_summary(number, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_merge_requests_and_their_draft_titles() {
        let v = json!({"iid": 7, "web_url": "u", "state": "merged", "title": "Draft: X",
            "description": null, "source_branch": "a", "target_branch": "main"});
        let pr = parse(&v, "GET", "/x").unwrap();
        assert_eq!(
            (pr.number, pr.state, pr.title.as_str(), pr.draft),
            (7, PrState::Merged, "X", true)
        );
        assert_eq!(with_draft("X", true), "Draft: X");
        assert_eq!(
            GitLab::new("http://h/api/v4", "g/sub/p", None, None).project,
            "g%2Fsub%2Fp"
        );
    }
}

//! GitLab's REST calls for landing (`/api/v4`): a merge request's live state, the jobs of the
//! newest pipeline of its head (a failed job's trace tail, scrubbed and clipped), approvals and
//! reviewers' verdicts, discussions (inline notes carry their position's path and line),
//! merging with `sha` and `squash` (or handing it to the merge train or to "merge when
//! pipeline succeeds", `gitlab_auto.rs`), retargeting, retrying a failed job, and the summary note
//! kept under its hidden marker.
//!
//! A merge request's checks are the jobs of a pipeline, so a check's id is a job's id and
//! re-running it is retrying that job. How an author relates to the project is read once per
//! account from its membership (developer or above may write) and mapped onto GitHub's words,
//! so `[land] reviewers`' default means the same on every forge.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::ForgeError;
use super::PullRequest;
use super::http::Api;
use super::landing::{
    COMMENT_BYTES, Check, CheckConclusion, CheckSource, LOG_TAIL_BYTES, MergeMethod, MergeOutcome,
    PrComment, PrStatus, Review, ReviewState, SUMMARY_MARKER, SummaryAction, safe_tail,
    summary_body,
};

/// GitLab's access level from which a member may push (Developer).
const DEVELOPER: u64 = 30;

/// One GitLab project's API, as landing calls it.
pub(super) struct Project<'a> {
    pub api: &'a Api,
    /// `/projects/<url-encoded path>`.
    pub path: String,
    pub who: &'a Associations,
}

/// Returns a protocol error for an answer to `GET path` that lacks `what`.
fn missing(path: &str, what: &str) -> ForgeError {
    ForgeError::Protocol {
        method: "GET".into(),
        path: path.to_string(),
        message: format!("the answer has no {what}"),
    }
}

fn list<'v>(answer: &'v Value, path: &str) -> Result<&'v [Value], ForgeError> {
    match answer {
        Value::Null => Ok(&[]),
        Value::Array(items) => Ok(items),
        _ => Err(missing(path, "list")),
    }
}

/// Returns how a job or commit status with GitLab's `status` ended; a failure allowed to fail
/// passes without a verdict.
fn conclusion(status: Option<&str>, allow_failure: bool) -> CheckConclusion {
    match (status, allow_failure) {
        (Some("success"), _) => CheckConclusion::Success,
        (Some("failed"), true) => CheckConclusion::Neutral,
        (Some("failed"), false) => CheckConclusion::Failure,
        (Some("canceled"), _) => CheckConclusion::Error,
        (Some("skipped" | "manual"), _) => CheckConclusion::Neutral,
        _ => CheckConclusion::Pending,
    }
}

/// Remembers each account's relation to the project, so a poll asks once per account.
#[derive(Default)]
pub(super) struct Associations(Mutex<BTreeMap<u64, String>>);

impl Associations {
    /// Returns the relation of user `id` in GitHub's words: `OWNER` (maintainer or owner),
    /// `MEMBER` (developer) or `NONE` (below, or not a member).
    fn of(&self, p: &Project<'_>, id: Option<u64>) -> Result<String, ForgeError> {
        let Some(id) = id else {
            return Ok("NONE".into());
        };
        if let Some(known) = self.0.lock().ok().and_then(|m| m.get(&id).cloned()) {
            return Ok(known);
        }
        let path = format!("{}/members/all/{id}", p.path);
        let association = match p.api.request("GET", &path, None) {
            Ok(v) => match v["access_level"].as_u64().unwrap_or(0) {
                l if l >= 40 => "OWNER",
                l if l >= DEVELOPER => "MEMBER",
                _ => "NONE",
            },
            Err(ForgeError::Status {
                status: 403 | 404, ..
            }) => "NONE",
            Err(e) => return Err(e),
        };
        if let Ok(mut m) = self.0.lock() {
            m.insert(id, association.to_string());
        }
        Ok(association.to_string())
    }
}

impl Project<'_> {
    fn mr(&self, number: u64) -> String {
        format!("{}/merge_requests/{number}", self.path)
    }

    /// Reads merge request `number`'s live state.
    pub fn pr_status(
        &self,
        number: u64,
        parse: fn(&Value, &str, &str) -> Result<PullRequest, ForgeError>,
    ) -> Result<PrStatus, ForgeError> {
        let path = self.mr(number);
        let v = self.api.request("GET", &path, None)?;
        let pr = parse(&v, "GET", &path)?;
        let conflict = v["has_conflicts"].as_bool() == Some(true)
            || v["detailed_merge_status"].as_str() == Some("conflict");
        let computing = matches!(
            v["detailed_merge_status"].as_str(),
            Some("checking" | "unchecked" | "preparing")
        );
        // `locked` is a merge in progress: neither landed nor closed yet.
        let state = match v["state"].as_str() {
            Some("locked") => super::PrState::Open,
            _ => pr.state,
        };
        Ok(PrStatus {
            number,
            state,
            head: pr.head,
            head_sha: v["sha"]
                .as_str()
                .ok_or_else(|| missing(&path, "sha"))?
                .to_string(),
            base: pr.base,
            draft: pr.draft,
            mergeable: match (conflict, computing) {
                (true, _) => Some(false),
                (false, true) => None,
                (false, false) => Some(true),
            },
        })
    }

    /// Reads the jobs of the newest pipeline of `sha` (a failed job's trace tail with it), and
    /// the commit statuses external CI posted on `sha`.
    pub fn checks(&self, sha: &str) -> Result<Vec<Check>, ForgeError> {
        let mut found = self.jobs(sha)?;
        let path = format!(
            "{}/repository/commits/{}/statuses?per_page=100",
            self.path,
            super::github::encode(sha)
        );
        let answer = self.api.request("GET", &path, None)?;
        for st in list(&answer, &path)? {
            let name = st["name"].as_str().unwrap_or_default().to_string();
            // A pipeline's jobs are listed as statuses too; they are read above.
            if found.iter().any(|c| c.name == name) {
                continue;
            }
            // The description last: a reason quotes the last line.
            let text = [&st["target_url"], &st["description"]]
                .iter()
                .filter_map(|v| v.as_str())
                .filter(|t| !t.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            found.push(Check {
                id: st["id"].as_u64().unwrap_or_default(),
                name,
                source: CheckSource::Status,
                conclusion: conclusion(st["status"].as_str(), false),
                log_tail: safe_tail(&text, self.api.token(), LOG_TAIL_BYTES),
            });
        }
        Ok(found)
    }

    /// Reads the jobs of the newest pipeline of `sha`, by name.
    fn jobs(&self, sha: &str) -> Result<Vec<Check>, ForgeError> {
        let path = format!(
            "{}/pipelines?sha={}&order_by=id&sort=desc&per_page=1",
            self.path,
            super::github::encode(sha)
        );
        let answer = self.api.request("GET", &path, None)?;
        let Some(pipeline) = list(&answer, &path)?.first().and_then(|p| p["id"].as_u64()) else {
            return Ok(Vec::new());
        };
        let path = format!("{}/pipelines/{pipeline}/jobs?per_page=100", self.path);
        let answer = self.api.request("GET", &path, None)?;
        let mut found = Vec::new();
        for job in list(&answer, &path)? {
            let id = job["id"].as_u64().ok_or_else(|| missing(&path, "id"))?;
            let conclusion = conclusion(
                job["status"].as_str(),
                job["allow_failure"].as_bool() == Some(true),
            );
            let log = if conclusion.failed() {
                self.api
                    .request_text(&format!("{}/jobs/{id}/trace", self.path))?
            } else {
                String::new()
            };
            found.push(Check {
                id,
                name: job["name"].as_str().unwrap_or_default().to_string(),
                source: CheckSource::CheckRun,
                conclusion,
                log_tail: safe_tail(&log, self.api.token(), LOG_TAIL_BYTES),
            });
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    /// Reads the approvals and the reviewers' verdicts of merge request `number`.
    pub fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        let mut found = Vec::new();
        let path = format!("{}/reviewers", self.mr(number));
        let answer = self.api.request("GET", &path, None)?;
        for r in list(&answer, &path)? {
            let state = match r["state"].as_str() {
                Some("requested_changes") => ReviewState::ChangesRequested,
                Some("approved") => ReviewState::Approved,
                Some("reviewed") => ReviewState::Commented,
                _ => continue,
            };
            found.push(self.review(&r["user"], state)?);
        }
        let path = format!("{}/approvals", self.mr(number));
        let answer = self.api.request("GET", &path, None)?;
        for a in list(&answer["approved_by"], &path)? {
            let review = self.review(&a["user"], ReviewState::Approved)?;
            if !found.contains(&review) {
                found.push(review);
            }
        }
        Ok(found)
    }

    fn review(&self, user: &Value, state: ReviewState) -> Result<Review, ForgeError> {
        let id = user["id"].as_u64();
        Ok(Review {
            id: id.unwrap_or_default(),
            author: user["username"].as_str().unwrap_or_default().to_string(),
            association: self.who.of(self, id)?,
            state,
            body: String::new(),
        })
    }

    /// Reads the notes of merge request `number`'s discussions that people wrote: the inline
    /// ones (with a position) when `inline`, else the others.
    pub fn notes(&self, number: u64, inline: bool) -> Result<Vec<PrComment>, ForgeError> {
        let path = format!("{}/discussions?per_page=100", self.mr(number));
        let answer = self.api.request("GET", &path, None)?;
        let mut found = Vec::new();
        for d in list(&answer, &path)? {
            for n in list(&d["notes"], &path)? {
                let position = &n["position"];
                if n["system"].as_bool() == Some(true) || position.is_object() != inline {
                    continue;
                }
                found.push(PrComment {
                    id: n["id"].as_u64().ok_or_else(|| missing(&path, "id"))?,
                    author: n["author"]["username"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    association: self.who.of(self, n["author"]["id"].as_u64())?,
                    body: safe_tail(
                        n["body"].as_str().unwrap_or_default(),
                        self.api.token(),
                        COMMENT_BYTES,
                    ),
                    path: position["new_path"]
                        .as_str()
                        .or_else(|| position["old_path"].as_str())
                        .map(str::to_string),
                    line: position["new_line"]
                        .as_u64()
                        .or_else(|| position["old_line"].as_u64()),
                });
            }
        }
        Ok(found)
    }

    /// Reads the project's merge method and squash option: a fast-forward project rebases, the
    /// others make merge commits; squashing unless it is `never` (and only squashing when it
    /// is `always`).
    pub fn allowed_methods(&self) -> Result<Vec<MergeMethod>, ForgeError> {
        let v = self.api.request("GET", &self.path, None)?;
        let whole = match v["merge_method"].as_str() {
            Some("ff") => MergeMethod::Rebase,
            _ => MergeMethod::Merge,
        };
        Ok(match v["squash_option"].as_str() {
            Some("never") => vec![whole],
            Some("always") => vec![MergeMethod::Squash],
            _ => {
                let mut both = vec![whole, MergeMethod::Squash];
                both.sort_by_key(|m| *m as u8);
                both
            }
        })
    }

    /// Merges merge request `number` if its head is still `head_sha`, squashing for
    /// [`MergeMethod::Squash`] — through the project's merge train or "merge when pipeline
    /// succeeds" where it uses one; a refusal is an outcome, not an error.
    pub fn merge(
        &self,
        number: u64,
        method: MergeMethod,
        head_sha: &str,
    ) -> Result<MergeOutcome, ForgeError> {
        if let Some(handed) = self.auto_merge(number, method, head_sha)? {
            return Ok(handed);
        }
        let path = format!("{}/merge", self.mr(number));
        let body = json!({ "sha": head_sha, "squash": method == MergeMethod::Squash });
        match self.api.request("PUT", &path, Some(&body)) {
            Ok(v) if v["state"].as_str() == Some("merged") => Ok(MergeOutcome::Merged {
                sha: v["merge_commit_sha"]
                    .as_str()
                    .or_else(|| v["squash_commit_sha"].as_str())
                    .map(str::to_string),
            }),
            Ok(v) => Ok(MergeOutcome::Refused {
                reason: format!(
                    "GitLab left it {}",
                    v["detailed_merge_status"].as_str().unwrap_or("unmerged")
                ),
            }),
            Err(ForgeError::Status {
                status: 405 | 406 | 409 | 422,
                message,
                ..
            }) => Ok(MergeOutcome::Refused { reason: message }),
            Err(e) => Err(e),
        }
    }

    /// Points merge request `number` at target branch `base`.
    pub fn retarget(&self, number: u64, base: &str) -> Result<(), ForgeError> {
        self.api.request(
            "PUT",
            &self.mr(number),
            Some(&json!({ "target_branch": base })),
        )?;
        Ok(())
    }

    /// Retries job `check.id`; returns false when GitLab will not (403: not retryable).
    pub fn rerun(&self, check: &Check) -> Result<bool, ForgeError> {
        let path = format!("{}/jobs/{}/retry", self.path, check.id);
        match self.api.request("POST", &path, None) {
            Ok(_) => Ok(true),
            Err(ForgeError::Status {
                status: 403 | 404, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates the summary note on merge request `number`, or edits the one carrying the
    /// marker when its text differs.
    pub fn upsert_summary(&self, number: u64, body: &str) -> Result<SummaryAction, ForgeError> {
        let wanted = summary_body(body);
        let path = format!("{}/notes?per_page=100&sort=asc", self.mr(number));
        let answer = self.api.request("GET", &path, None)?;
        let existing = list(&answer, &path)?.iter().find(|n| {
            n["body"]
                .as_str()
                .is_some_and(|b| b.contains(SUMMARY_MARKER))
        });
        let notes = format!("{}/notes", self.mr(number));
        match existing {
            Some(n) if n["body"].as_str() == Some(wanted.as_str()) => Ok(SummaryAction::Unchanged),
            Some(n) => {
                let id = n["id"].as_u64().ok_or_else(|| missing(&path, "id"))?;
                self.api.request(
                    "PUT",
                    &format!("{notes}/{id}"),
                    Some(&json!({ "body": wanted })),
                )?;
                Ok(SummaryAction::Updated)
            }
            None => {
                self.api
                    .request("POST", &notes, Some(&json!({ "body": wanted })))?;
                Ok(SummaryAction::Created)
            }
        }
    }
}

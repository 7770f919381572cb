//! Gitea's and Forgejo's REST calls for landing (`/api/v1`): a pull request's live state, the
//! commit statuses of its head (Gitea Actions reports as statuses; a failed job's log tail is
//! read through `gitea_logs.rs`), reviews and their inline
//! comments, merging with `Do` guarded by the head commit, retargeting, and the summary
//! comment kept under its hidden marker.
//!
//! Gitea does not say how an author relates to the repository on a review or comment (GitHub's
//! `author_association`); it is read once per account from the collaborator permission and
//! mapped onto the same words, so `[land] reviewers`' default (people with write access) means
//! the same on every forge.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::ForgeError;
use super::github::encode;
use super::landing::{
    COMMENT_BYTES, Check, CheckConclusion, CheckSource, LOG_TAIL_BYTES, MergeMethod, MergeOutcome,
    PrComment, Review, ReviewState, safe_tail,
};
use super::shared::{RepoApi, missing};

/// Returns the elements of a list answer (`null`, which Gitea sends for none, is empty).
fn list<'a>(answer: &'a Value, path: &str) -> Result<&'a [Value], ForgeError> {
    match answer {
        Value::Null => Ok(&[]),
        Value::Array(items) => Ok(items),
        _ => Err(missing(path, "list")),
    }
}

/// Remembers each account's relation to the repository, so a poll asks once per account.
#[derive(Default)]
pub(super) struct Associations(Mutex<BTreeMap<String, String>>);

impl Associations {
    /// Returns `login`'s relation to the repository in GitHub's words: `OWNER`, `COLLABORATOR`
    /// (admin or write permission) or `NONE` (read only, or not a collaborator at all).
    fn of(&self, repo: &RepoApi, login: &str) -> Result<String, ForgeError> {
        if login.is_empty() {
            return Ok("NONE".into());
        }
        if let Some(known) = self.0.lock().ok().and_then(|m| m.get(login).cloned()) {
            return Ok(known);
        }
        let path = format!("{}/collaborators/{}/permission", repo.path, encode(login));
        let association = match repo.api.request("GET", &path, None) {
            Ok(v) => match v["permission"].as_str() {
                Some("owner") => "OWNER",
                Some("admin" | "write") => "COLLABORATOR",
                _ => "NONE",
            },
            // Not a collaborator, or the token may not ask: nothing to act on.
            Err(ForgeError::Status {
                status: 403 | 404, ..
            }) => "NONE",
            Err(e) => return Err(e),
        };
        if let Ok(mut m) = self.0.lock() {
            m.insert(login.to_string(), association.to_string());
        }
        Ok(association.to_string())
    }
}

/// Reads the combined commit status of `sha`: the newest status of each context.
pub(super) fn checks(repo: &RepoApi, sha: &str) -> Result<Vec<Check>, ForgeError> {
    let token = repo.api.token();
    let path = format!("{}/commits/{}/status", repo.path, encode(sha));
    let answer = repo.api.request("GET", &path, None)?;
    Ok(list(&answer["statuses"], &path)?
        .iter()
        .map(|status| {
            let conclusion = match status["status"].as_str() {
                Some("success") => CheckConclusion::Success,
                Some("warning" | "skipped") => CheckConclusion::Neutral,
                Some("failure") => CheckConclusion::Failure,
                Some("error") => CheckConclusion::Error,
                _ => CheckConclusion::Pending,
            };
            // The description after the link: a reason quotes the last line, and it says
            // more than the link to the job; a failed Actions job's log tail goes last.
            let url = status["target_url"].as_str().unwrap_or_default();
            let description = status["description"].as_str().unwrap_or_default();
            let (note, log) = if conclusion.failed() {
                let context = status["context"].as_str().unwrap_or_default();
                match super::gitea_logs::job_log(repo, url, context) {
                    Ok(log) => (String::new(), log),
                    Err(why) => (
                        format!("(no job log could be read: {why}; its description follows)"),
                        String::new(),
                    ),
                }
            } else {
                (String::new(), String::new())
            };
            let text = [url, note.as_str(), description, log.as_str()]
                .iter()
                .filter(|t| !t.trim().is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("\n");
            Check {
                id: status["id"].as_u64().unwrap_or_default(),
                name: status["context"].as_str().unwrap_or_default().to_string(),
                source: CheckSource::Status,
                conclusion,
                log_tail: safe_tail(&text, token, LOG_TAIL_BYTES),
            }
        })
        .collect())
}

/// Returns the reviews of pull request `number` as Gitea lists them (with their ids).
fn raw_reviews(repo: &RepoApi, number: u64) -> Result<(String, Vec<Value>), ForgeError> {
    let path = format!("{}/pulls/{number}/reviews", repo.path);
    let answer = repo.api.request("GET", &path, None)?;
    let items = list(&answer, &path)?.to_vec();
    Ok((path, items))
}

/// Reads the reviews of pull request `number`.
pub(super) fn reviews(
    repo: &RepoApi,
    who: &Associations,
    number: u64,
) -> Result<Vec<Review>, ForgeError> {
    let (path, items) = raw_reviews(repo, number)?;
    items
        .iter()
        .map(|r| {
            let author = r["user"]["login"].as_str().unwrap_or_default().to_string();
            let state = match (r["state"].as_str(), r["dismissed"].as_bool()) {
                (_, Some(true)) => ReviewState::Dismissed,
                (Some("APPROVED"), _) => ReviewState::Approved,
                (Some("REQUEST_CHANGES"), _) => ReviewState::ChangesRequested,
                (Some("PENDING" | "REQUEST_REVIEW"), _) => ReviewState::Pending,
                _ => ReviewState::Commented,
            };
            Ok(Review {
                id: r["id"].as_u64().ok_or_else(|| missing(&path, "id"))?,
                association: who.of(repo, &author)?,
                author,
                state,
                body: safe_tail(
                    r["body"].as_str().unwrap_or_default(),
                    repo.api.token(),
                    COMMENT_BYTES,
                ),
            })
        })
        .collect()
}

/// Reads one comment of Gitea's shape (`position` is the line in the new file,
/// `original_position` the one in the old).
fn comment(
    repo: &RepoApi,
    who: &Associations,
    c: &Value,
    path: &str,
) -> Result<PrComment, ForgeError> {
    let author = c["user"]["login"].as_str().unwrap_or_default().to_string();
    Ok(PrComment {
        id: c["id"].as_u64().ok_or_else(|| missing(path, "id"))?,
        association: who.of(repo, &author)?,
        author,
        body: safe_tail(
            c["body"].as_str().unwrap_or_default(),
            repo.api.token(),
            COMMENT_BYTES,
        ),
        path: c["path"]
            .as_str()
            .filter(|p| !p.is_empty())
            .map(str::to_string),
        line: c["position"]
            .as_u64()
            .filter(|l| *l > 0)
            .or_else(|| c["original_position"].as_u64().filter(|l| *l > 0)),
    })
}

/// Reads the inline comments of every review of pull request `number` (Gitea lists them per
/// review), oldest review first.
pub(super) fn review_comments(
    repo: &RepoApi,
    who: &Associations,
    number: u64,
) -> Result<Vec<PrComment>, ForgeError> {
    let (_, items) = raw_reviews(repo, number)?;
    let mut found = Vec::new();
    for r in items {
        let (Some(id), Some(n)) = (r["id"].as_u64(), r["comments_count"].as_u64()) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let path = format!("{}/pulls/{number}/reviews/{id}/comments", repo.path);
        let answer = repo.api.request("GET", &path, None)?;
        for c in list(&answer, &path)? {
            found.push(comment(repo, who, c, &path)?);
        }
    }
    Ok(found)
}

/// Reads the comments in pull request `number`'s conversation.
pub(super) fn conversation(
    repo: &RepoApi,
    who: &Associations,
    number: u64,
) -> Result<Vec<PrComment>, ForgeError> {
    let path = format!("{}/issues/{number}/comments", repo.path);
    let answer = repo.api.request("GET", &path, None)?;
    list(&answer, &path)?
        .iter()
        .map(|c| comment(repo, who, c, &path))
        .collect()
}

/// Reads which merge methods the repository allows (a missing flag counts as allowed, as on
/// GitHub: the merge call refuses what is not).
pub(super) fn allowed_methods(repo: &RepoApi) -> Result<Vec<MergeMethod>, ForgeError> {
    let v = repo.api.request("GET", &repo.path, None)?;
    Ok(super::landing::allowed_by_flags(
        &v,
        ["allow_merge_commits", "allow_squash_merge", "allow_rebase"],
    ))
}

/// Merges pull request `number` with `Do: <method>` if its head is still `head_sha`; a
/// refusal (not mergeable, head out of date, a method not allowed) is an outcome, not an
/// error.
pub(super) fn merge(
    repo: &RepoApi,
    number: u64,
    method: MergeMethod,
    head_sha: &str,
) -> Result<MergeOutcome, ForgeError> {
    let path = format!("{}/pulls/{number}/merge", repo.path);
    let body = json!({ "Do": method.as_str(), "head_commit_id": head_sha });
    match repo.api.request("POST", &path, Some(&body)) {
        // Gitea answers an empty 200; the merge commit is read from the pull request.
        Ok(_) => {
            let after = format!("{}/pulls/{number}", repo.path);
            let v = repo.api.request("GET", &after, None)?;
            Ok(MergeOutcome::Merged {
                sha: v["merge_commit_sha"].as_str().map(str::to_string),
            })
        }
        Err(ForgeError::Status {
            status: 405 | 409 | 422,
            message,
            ..
        }) => Ok(MergeOutcome::Refused { reason: message }),
        Err(e) => Err(e),
    }
}

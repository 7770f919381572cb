//! GitHub's REST calls for landing: a pull request's live state, check runs and commit
//! statuses, reviews and comments, merging, retargeting, re-running a job, and the summary
//! comment kept under its hidden marker.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::ForgeError;
use super::landing::{
    COMMENT_BYTES, Check, CheckConclusion, CheckSource, LOG_TAIL_BYTES, MergeMethod, MergeOutcome,
    PrComment, Review, ReviewState, SUMMARY_MARKER, SummaryAction, safe_tail, summary_body,
};
use super::shared::{RepoApi, missing};

/// Returns the elements of a list answer, or a protocol error naming the request.
fn list<'a>(answer: &'a Value, path: &str) -> Result<&'a Vec<Value>, ForgeError> {
    answer.as_array().ok_or_else(|| missing(path, "list"))
}

/// Reads the check runs and the combined commit status of `sha`: the newest run of each name.
pub(super) fn checks(repo: &RepoApi, sha: &str) -> Result<Vec<Check>, ForgeError> {
    let token = repo.api.token();
    let path = format!("{}/commits/{sha}/check-runs?per_page=100", repo.path);
    let answer = repo.api.request("GET", &path, None)?;
    let mut newest: BTreeMap<String, Check> = BTreeMap::new();
    for run in list(&answer["check_runs"], &path)? {
        let id = run["id"].as_u64().ok_or_else(|| missing(&path, "id"))?;
        let name = run["name"].as_str().unwrap_or_default().to_string();
        let conclusion = match (run["status"].as_str(), run["conclusion"].as_str()) {
            (Some("completed"), Some("success")) => CheckConclusion::Success,
            (Some("completed"), Some("neutral" | "skipped")) => CheckConclusion::Neutral,
            (Some("completed"), Some("failure")) => CheckConclusion::Failure,
            (Some("completed"), Some(_)) => CheckConclusion::Error,
            _ => CheckConclusion::Pending,
        };
        let output = &run["output"];
        let mut text = ["title", "summary", "text"]
            .iter()
            .filter_map(|k| output[*k].as_str())
            .filter(|t| !t.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        if conclusion.failed() && output["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
            text.push_str(&job_log(repo, id));
        }
        let check = Check {
            id,
            name: name.clone(),
            source: CheckSource::CheckRun,
            conclusion,
            log_tail: safe_tail(&text, token, LOG_TAIL_BYTES),
        };
        if newest.get(&name).is_none_or(|c| c.id < id) {
            newest.insert(name, check);
        }
    }
    let mut found: Vec<Check> = newest.into_values().collect();
    let path = format!("{}/commits/{sha}/status", repo.path);
    let answer = repo.api.request("GET", &path, None)?;
    for status in answer["statuses"].as_array().into_iter().flatten() {
        let conclusion = match status["state"].as_str() {
            Some("success") => CheckConclusion::Success,
            Some("failure") => CheckConclusion::Failure,
            Some("error") => CheckConclusion::Error,
            _ => CheckConclusion::Pending,
        };
        let text = [&status["description"], &status["target_url"]]
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        found.push(Check {
            id: status["id"].as_u64().unwrap_or_default(),
            name: status["context"].as_str().unwrap_or_default().to_string(),
            source: CheckSource::Status,
            conclusion,
            log_tail: safe_tail(&text, token, LOG_TAIL_BYTES),
        });
    }
    Ok(found)
}

/// Returns the log of GitHub Actions job `id` (a check run Actions made has its job's id),
/// after a newline; empty when there is none (another app's check run) or it cannot be read:
/// a failure is reported without its log rather than not at all.
fn job_log(repo: &RepoApi, id: u64) -> String {
    let path = format!("{}/actions/jobs/{id}/logs", repo.path);
    match repo.api.get_text(&path) {
        Ok(log) if !log.trim().is_empty() => format!("\n{log}"),
        Ok(_) => String::new(),
        Err(e) => {
            tracing::debug!(error = %e, id, "no job log for the failed check run");
            String::new()
        }
    }
}

/// Reads the reviews of pull request `number`.
pub(super) fn reviews(repo: &RepoApi, number: u64) -> Result<Vec<Review>, ForgeError> {
    let path = format!("{}/pulls/{number}/reviews?per_page=100", repo.path);
    let answer = repo.api.request("GET", &path, None)?;
    list(&answer, &path)?
        .iter()
        .map(|r| {
            let state = match r["state"].as_str() {
                Some("APPROVED") => ReviewState::Approved,
                Some("CHANGES_REQUESTED") => ReviewState::ChangesRequested,
                Some("DISMISSED") => ReviewState::Dismissed,
                Some("PENDING") => ReviewState::Pending,
                _ => ReviewState::Commented,
            };
            Ok(Review {
                id: r["id"].as_u64().ok_or_else(|| missing(&path, "id"))?,
                author: r["user"]["login"].as_str().unwrap_or_default().to_string(),
                association: r["author_association"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
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

/// Reads comments at `path` (inline review comments or the conversation's).
pub(super) fn comments(repo: &RepoApi, path: &str) -> Result<Vec<PrComment>, ForgeError> {
    let answer = repo.api.request("GET", path, None)?;
    list(&answer, path)?
        .iter()
        .map(|c| {
            Ok(PrComment {
                id: c["id"].as_u64().ok_or_else(|| missing(path, "id"))?,
                author: c["user"]["login"].as_str().unwrap_or_default().to_string(),
                association: c["author_association"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                body: safe_tail(
                    c["body"].as_str().unwrap_or_default(),
                    repo.api.token(),
                    COMMENT_BYTES,
                ),
                path: c["path"].as_str().map(str::to_string),
                line: c["line"].as_u64().or_else(|| c["original_line"].as_u64()),
            })
        })
        .collect()
}

/// Reads which merge methods the repository allows (a missing flag counts as allowed: tokens
/// without admin rights may not see them, and the merge call refuses what is not).
pub(super) fn allowed_methods(repo: &RepoApi) -> Result<Vec<MergeMethod>, ForgeError> {
    let v = repo.api.request("GET", &repo.path, None)?;
    Ok(super::landing::allowed_by_flags(
        &v,
        [
            "allow_merge_commit",
            "allow_squash_merge",
            "allow_rebase_merge",
        ],
    ))
}

/// Merges pull request `number` if its head is still `head_sha`; a refusal (not mergeable,
/// head moved, a rule unmet) is an outcome, not an error.
pub(super) fn merge(
    repo: &RepoApi,
    number: u64,
    method: MergeMethod,
    head_sha: &str,
) -> Result<MergeOutcome, ForgeError> {
    let path = format!("{}/pulls/{number}/merge", repo.path);
    let body = json!({ "merge_method": method.as_str(), "sha": head_sha });
    match repo.api.request("PUT", &path, Some(&body)) {
        Ok(v) if v["merged"].as_bool() != Some(false) => Ok(MergeOutcome::Merged {
            sha: v["sha"].as_str().map(str::to_string),
        }),
        Ok(v) => Ok(MergeOutcome::Refused {
            reason: v["message"].as_str().unwrap_or("not merged").to_string(),
        }),
        Err(ForgeError::Status {
            status: 405 | 409 | 422,
            message,
            ..
        }) => Ok(MergeOutcome::Refused { reason: message }),
        Err(e) => Err(e),
    }
}

/// Points pull request `number` at `base`.
pub(super) fn retarget(repo: &RepoApi, number: u64, base: &str) -> Result<(), ForgeError> {
    let path = format!("{}/pulls/{number}", repo.path);
    repo.api
        .request("PATCH", &path, Some(&json!({ "base": base })))?;
    Ok(())
}

/// Re-runs a check run's Actions job (falling back to re-requesting the check run from its
/// app); a commit status cannot be re-run.
pub(super) fn rerun(repo: &RepoApi, check: &Check) -> Result<bool, ForgeError> {
    if check.source == CheckSource::Status {
        return Ok(false);
    }
    let job = format!("{}/actions/jobs/{}/rerun", repo.path, check.id);
    match repo.api.request("POST", &job, None) {
        Ok(_) => Ok(true),
        Err(ForgeError::Status {
            status: 403 | 404 | 422,
            ..
        }) => {
            let again = format!("{}/check-runs/{}/rerequest", repo.path, check.id);
            match repo.api.request("POST", &again, None) {
                Ok(_) => Ok(true),
                Err(ForgeError::Status {
                    status: 403 | 404 | 422,
                    ..
                }) => Ok(false),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Creates or edits the summary comment on pull request `number`.
pub(super) fn upsert_summary(
    repo: &RepoApi,
    number: u64,
    body: &str,
) -> Result<SummaryAction, ForgeError> {
    let wanted = summary_body(body);
    let path = format!("{}/issues/{number}/comments?per_page=100", repo.path);
    let answer = repo.api.request("GET", &path, None)?;
    let existing = list(&answer, &path)?.iter().find(|c| {
        c["body"]
            .as_str()
            .is_some_and(|b| b.contains(SUMMARY_MARKER))
    });
    match existing {
        Some(c) if c["body"].as_str() == Some(wanted.as_str()) => Ok(SummaryAction::Unchanged),
        Some(c) => {
            let id = c["id"].as_u64().ok_or_else(|| missing(&path, "id"))?;
            let edit = format!("{}/issues/comments/{id}", repo.path);
            repo.api
                .request("PATCH", &edit, Some(&json!({ "body": wanted })))?;
            Ok(SummaryAction::Updated)
        }
        None => {
            repo.comment(number, &wanted)?;
            Ok(SummaryAction::Created)
        }
    }
}

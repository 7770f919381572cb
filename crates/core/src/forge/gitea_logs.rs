//! The log of a failed Gitea or Forgejo Actions job, for the fix round of a pull request whose
//! commit status it reported: Actions reports as commit statuses, whose `target_url` names the
//! run and the job (`…/actions/runs/<run>/jobs/<index>`), and newer versions serve a job's log
//! at `GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs`.
//!
//! The job's id is found in the run's job list (`GET …/actions/runs/<run>/jobs`): the job the
//! status's context names, else the one at the index the link gives. A version without these
//! endpoints, a status another CI posted, or a log that cannot be read leaves the failure with
//! its description, saying why there is no log, never with a wrong job's log.

use serde_json::Value;

use super::ForgeError;
use super::shared::RepoApi;

/// Returns the log of the Actions job a failed status's `target_url` links to (the status
/// named `context`), or why none could be read.
pub(super) fn job_log(repo: &RepoApi, target_url: &str, context: &str) -> Result<String, String> {
    let Some((run, index)) = run_and_job(target_url) else {
        return Err("its link does not name a Gitea Actions job".into());
    };
    let path = format!("{}/actions/runs/{run}/jobs", repo.path);
    let answer = repo.api.request("GET", &path, None).map_err(why)?;
    let jobs: &[Value] = match &answer {
        Value::Array(items) => items,
        v => v["jobs"].as_array().map_or(&[], Vec::as_slice),
    };
    let named = jobs.iter().find(|j| {
        j["name"]
            .as_str()
            .is_some_and(|n| !n.is_empty() && context.contains(n))
    });
    let Some(id) = named
        .or_else(|| jobs.get(index))
        .and_then(|j| j["id"].as_u64())
    else {
        return Err(format!("run {run} lists no job {index}"));
    };
    let log = repo
        .api
        .get_text(&format!("{}/actions/jobs/{id}/logs", repo.path))
        .map_err(why)?;
    if log.trim().is_empty() {
        return Err(format!("job {id}'s log is empty"));
    }
    Ok(log)
}

/// Returns the run and the job index an Actions link names.
fn run_and_job(url: &str) -> Option<(u64, usize)> {
    let path = url.split(['?', '#']).next()?;
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let at = segs
        .windows(4)
        .rposition(|w| w[0] == "runs" && w[2] == "jobs")?;
    let run = segs[at + 1].parse().ok()?;
    let job = segs[at + 3].parse().ok()?;
    // Only a link into the Actions of a repository.
    (at > 0 && segs[at - 1] == "actions").then_some((run, job))
}

/// Returns what a failed read says, in a few words.
fn why(e: ForgeError) -> String {
    match e {
        ForgeError::Status { status: 404, .. } => {
            "this Gitea does not serve Actions job logs (404)".into()
        }
        ForgeError::Status { status, .. } => format!("the forge answered {status}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_actions_link_names_its_run_and_job_and_nothing_else_does() {
        assert_eq!(
            run_and_job("https://gitea.example/acme/widgets/actions/runs/12/jobs/1"),
            Some((12, 1))
        );
        assert_eq!(
            run_and_job("http://h/acme/w/actions/runs/3/jobs/0/?x=1"),
            Some((3, 0))
        );
        assert_eq!(run_and_job("https://ci.example/1003"), None);
        assert_eq!(run_and_job("https://ci.example/runs/3/jobs/0"), None);
    }
}

//! GitLab's own ways of landing a merge request once its pipeline succeeds, used instead of a
//! direct merge where the project uses them: its merge train (`merge_trains_enabled`: the
//! merge request joins the train, which merges it after a pipeline of the merged result) and
//! "merge when pipeline succeeds" (`only_allow_merge_if_pipeline_succeeds`, or a merge request
//! someone already set to it: `PUT …/merge` with `merge_when_pipeline_succeeds`).
//!
//! Either is asked for once: a merge request already on the train or already set to merge is
//! left as it is, so a poll repeated while GitLab waits writes nothing. Landing then follows
//! the merge request until GitLab shows it merged.

use serde_json::{Value, json};

use super::ForgeError;
use super::gitlab_land::Project;
use super::landing::{MergeMethod, MergeOutcome};

/// What landing waits for once the merge request is on the merge train.
const TRAIN: &str = "GitLab's merge train to merge it";

/// What landing waits for once the merge request is set to merge when its pipeline succeeds.
const PIPELINE: &str = "GitLab to merge it when its pipeline succeeds";

impl Project<'_> {
    /// Hands merge request `number` (at `head_sha`) to the project's merge train or to "merge
    /// when pipeline succeeds" when the project uses one, and returns how that went; `None`
    /// when the project uses neither and the merge request is to be merged directly.
    pub(super) fn auto_merge(
        &self,
        number: u64,
        method: MergeMethod,
        head_sha: &str,
    ) -> Result<Option<MergeOutcome>, ForgeError> {
        let project = self.api.request("GET", &self.path, None)?;
        if project["merge_trains_enabled"].as_bool() == Some(true) {
            return self.join_train(number, method, head_sha).map(Some);
        }
        let mr_path = format!("{}/merge_requests/{number}", self.path);
        let mr = self.api.request("GET", &mr_path, None)?;
        let set = mr["merge_when_pipeline_succeeds"].as_bool() == Some(true);
        if set {
            return Ok(Some(MergeOutcome::Queued {
                how: PIPELINE.into(),
                position: None,
            }));
        }
        if project["only_allow_merge_if_pipeline_succeeds"].as_bool() != Some(true) {
            return Ok(None);
        }
        let body = json!({
            "sha": head_sha,
            "squash": method == MergeMethod::Squash,
            "merge_when_pipeline_succeeds": true,
        });
        let path = format!("{mr_path}/merge");
        Ok(Some(refused_or(
            self.api.request("PUT", &path, Some(&body)),
            |v| match v["state"].as_str() {
                Some("merged") => merged(v),
                _ => MergeOutcome::Queued {
                    how: PIPELINE.into(),
                    position: None,
                },
            },
        )?))
    }

    /// Puts merge request `number` on the project's merge train unless it is on it already.
    fn join_train(
        &self,
        number: u64,
        method: MergeMethod,
        head_sha: &str,
    ) -> Result<MergeOutcome, ForgeError> {
        let car = format!("{}/merge_trains/merge_requests/{number}", self.path);
        match self.api.request("GET", &car, None) {
            Ok(v) if v["status"].as_str() == Some("merged") => return Ok(merged(&Value::Null)),
            Ok(v) if !v.is_null() => {
                return Ok(MergeOutcome::Queued {
                    how: TRAIN.into(),
                    position: None,
                });
            }
            Ok(_) | Err(ForgeError::Status { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
        let body = json!({ "sha": head_sha, "squash": method == MergeMethod::Squash });
        refused_or(self.api.request("POST", &car, Some(&body)), |cars| {
            MergeOutcome::Queued {
                how: TRAIN.into(),
                position: train_position(cars, number),
            }
        })
    }
}

/// Returns merge request `number`'s place on the train GitLab answered joining it with (its
/// cars, first to merge first), counting from 1; `None` when the answer lists no such car.
fn train_position(cars: &Value, number: u64) -> Option<u64> {
    let at = cars
        .as_array()?
        .iter()
        .position(|car| car["merge_request"]["iid"].as_u64() == Some(number))?;
    u64::try_from(at).ok().map(|at| at + 1)
}

/// Returns a merged outcome with the commit GitLab names in merge request `v`, if any.
fn merged(v: &Value) -> MergeOutcome {
    MergeOutcome::Merged {
        sha: v["merge_commit_sha"]
            .as_str()
            .or_else(|| v["squash_commit_sha"].as_str())
            .map(str::to_string),
    }
}

/// Returns `ok` of the answer, or GitLab's refusal (not mergeable, head moved) as an outcome.
fn refused_or(
    answer: Result<Value, ForgeError>,
    ok: impl FnOnce(&Value) -> MergeOutcome,
) -> Result<MergeOutcome, ForgeError> {
    match answer {
        Ok(v) => Ok(ok(&v)),
        Err(ForgeError::Status {
            status: 400 | 405 | 406 | 409 | 422,
            message,
            ..
        }) => Ok(MergeOutcome::Refused { reason: message }),
        Err(e) => Err(e),
    }
}

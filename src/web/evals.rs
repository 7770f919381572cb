//! The page's JSON for evals: the list of evals (journaled here or kept in git) and one
//! eval's report — the same `EvalReport` `eval report --json` prints, from the same lookup.

use git_orchestra::eval_run::lookup::{self, LookupError, Prefer};
use serde_json::json;

use super::{Reply, Shared, json};

/// Every eval of the repository with its progress and each arm's resolved count.
pub(super) fn list(shared: &Shared) -> Reply {
    match lookup::all(&shared.repo) {
        Ok(all) => {
            let evals: Vec<serde_json::Value> = all
                .iter()
                .map(|l| {
                    let r = &l.report;
                    json!({
                        "eval": r.eval, "range": r.range, "finished": r.finished,
                        "done": r.done, "total": r.total, "kept": l.kept,
                        "arms": r.arms.iter().map(|a| json!({
                            "name": a.name, "attempts": a.attempts, "resolved": a.resolved,
                            "rate": a.rate, "interval": a.interval,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json(200, &json!({ "evals": evals }))
        }
        Err(e) => json(500, &json!({"error": e.to_string()})),
    }
}

/// One eval's report: arms with their statistics, tasks and attempts (the grid's cells).
pub(super) fn one(shared: &Shared, id: &str) -> Reply {
    match lookup::report(&shared.repo, Some(id), Prefer::Journal) {
        Ok(report) => match serde_json::to_value(&report) {
            Ok(value) => json(200, &value),
            Err(e) => json(500, &json!({"error": e.to_string()})),
        },
        Err(e @ LookupError::Unknown { .. }) => json(404, &json!({"error": e.to_string()})),
        Err(e) => json(500, &json!({"error": e.to_string()})),
    }
}

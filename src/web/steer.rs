//! What the page changes: plan approval, rejection and edits (checked with `plan check`'s
//! messages), answers, a person's comments on a diff (required fixes for the packet's next fix
//! round), and pause, resume, cancel and retry — each through the run lifecycle API the
//! commands call; a run that must go on gets its driver from the view's launcher.

use git_orchestra::orchestrator::Approval;
use git_orchestra::plan::Plan;
use git_orchestra::run::{Comment, LifecycleError, Run, RunRef};
use serde_json::{Value, json};

use super::{Reply, Shared, json};

fn done(message: impl Into<String>) -> Reply {
    json(200, &json!({"ok": true, "message": message.into()}))
}

fn refused(status: u16, message: impl Into<String>) -> Reply {
    json(status, &json!({"ok": false, "error": message.into()}))
}

/// Handles a POST to `path` with the JSON `body`.
pub(super) fn post(shared: &Shared, path: &str, body: &str) -> Reply {
    let body: Value = if body.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str(body) {
            Ok(v) => v,
            Err(e) => return refused(400, format!("the request body is not JSON: {e}")),
        }
    };
    if path == "/api/check" {
        let problems = check(shared, None, body["plan"].as_str().unwrap_or(""));
        return json(200, &json!({"problems": problems}));
    }
    let Some((run, action)) = path
        .strip_prefix("/api/run/")
        .and_then(|rest| rest.split_once('/'))
    else {
        return refused(404, "no such action");
    };
    let text = |key: &str| body[key].as_str().unwrap_or("").to_string();
    match action {
        "approve" => decide(shared, run, Approval::Approve),
        "reject" => decide(shared, run, Approval::Reject),
        "revise" => match text("feedback").trim() {
            "" => refused(
                400,
                "say what the planner should change: the feedback is empty",
            ),
            feedback => decide(shared, run, Approval::Revise(feedback.to_string())),
        },
        "edit" => {
            let plan = text("plan");
            let problems = check(shared, Some(run), &plan);
            if !problems.is_empty() {
                return json(422, &json!({"ok": false, "problems": problems}));
            }
            decide(shared, run, Approval::Edited(plan))
        }
        "answer" => act(shared, run, |r| {
            let packet = text("packet");
            let question = r.answer(&packet, &text("text"))?;
            Ok(format!(
                "answered `{question}` for packet {packet} of run {}",
                r.id()
            ))
        }),
        "comments" => comments(shared, run, &text("packet"), &body["comments"]),
        "pause" => act(shared, run, |r| {
            r.pause()?;
            Ok(format!(
                "asked run {0} to pause; `git orchestra resume {0}` continues it",
                r.id()
            ))
        }),
        "cancel" => act(shared, run, |r| {
            r.cancel()?;
            Ok(format!("cancelled run {}", r.id()))
        }),
        "resume" => act(shared, run, |r| {
            Ok(r.resume_with(shared.launcher.as_ref())?.message)
        }),
        "retry" => act(shared, run, |r| {
            Ok(r.retry_with(shared.launcher.as_ref())?.message)
        }),
        _ => refused(404, format!("no action `{action}`")),
    }
}

/// Opens `run` and does `action` to it: its words on success, a refusal (409) or a failure
/// (500) as the page shows them.
fn act(
    shared: &Shared,
    run: &str,
    action: impl FnOnce(&Run) -> Result<String, LifecycleError>,
) -> Reply {
    match Run::open(&shared.repo, RunRef::Id(run.to_string())).and_then(|r| action(&r)) {
        Ok(message) => done(message),
        Err(e) => failed(&e),
    }
}

/// The reply for a verb that did not happen.
fn failed(e: &LifecycleError) -> Reply {
    let status = match e {
        LifecycleError::UnknownRun { .. }
        | LifecycleError::NoSuchPacket { .. }
        | LifecycleError::NoRun => 404,
        LifecycleError::NoComment | LifecycleError::EmptyFeedback => 400,
        e if e.is_refusal() => 409,
        _ => 500,
    };
    refused(status, e.to_string())
}

/// The problems `plan check` finds in `plan`, and a changed objective (the run is named after
/// it) when `run` is given.
fn check(shared: &Shared, run: Option<&str>, plan: &str) -> Vec<String> {
    let mut problems =
        git_orchestra::orchestrator::planning::check(plan, &shared.repo.toplevel, &|_| true);
    let objective = run
        .and_then(|r| Run::open(&shared.repo, RunRef::Id(r.to_string())).ok())
        .and_then(|r| r.start_state());
    if let (Some(state), Ok(p)) = (objective, Plan::from_toml_str(plan, "plan.toml"))
        && p.objective.trim() != state.objective.trim()
    {
        problems.push("the objective must stay as it is (the run is named after it)".into());
    }
    problems
}

/// Approves, edits, sends back or rejects the plan `run` waits on: the waiting `start --ui`
/// process gets the decision; a run that stopped to wait has it journaled and is resumed
/// (approved or sent back to its planner) or cancelled (rejected).
fn decide(shared: &Shared, run: &str, decision: Approval) -> Reply {
    let opened = match Run::open(&shared.repo, RunRef::Id(run.to_string())) {
        Ok(r) if r.awaits_approval() => r,
        Ok(_) | Err(_) => {
            return refused(
                409,
                format!("run `{run}` does not wait for a plan approval"),
            );
        }
    };
    let what = match &decision {
        Approval::Approve => "approved",
        Approval::Edited(_) => "approved as edited",
        Approval::Revise(_) => "sent back to the planner",
        Approval::Reject => "rejected",
    };
    if shared.live.waiting().is_some() && shared.live.decide(decision.clone()) {
        return done(format!("plan {what}"));
    }
    match opened.approve(decision) {
        Ok(false) => done("plan rejected; the run is cancelled"),
        Ok(true) => match opened.resume_with(shared.launcher.as_ref()) {
            Ok(launched) => done(launched.message),
            Err(e) => failed(&e),
        },
        Err(e) => failed(&e),
    }
}

/// Sends a person's comments on `packet`'s diff as required fixes for its next fix round.
fn comments(shared: &Shared, run: &str, packet: &str, comments: &Value) -> Reply {
    let list: Vec<Comment> = comments
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Comment {
            file: c["file"].as_str().unwrap_or("").to_string(),
            line: c["line"].as_u64(),
            code: c["code"].as_str().unwrap_or("").to_string(),
            text: c["text"].as_str().unwrap_or("").to_string(),
        })
        .collect();
    let sent = Run::open(&shared.repo, RunRef::Id(run.to_string()))
        .map_err(|e| match e {
            // The page names the run it shows: one the view cannot open has no packet.
            LifecycleError::UnknownRun { .. } | LifecycleError::NoRun => {
                LifecycleError::NoSuchPacket {
                    run: run.to_string(),
                    packet: packet.to_string(),
                }
            }
            other => other,
        })
        .and_then(|r| r.comment(packet, &list));
    match sent {
        Ok(n) => done(format!(
            "{n} comment{} sent to the agent of {packet}; they are required fixes before it is done",
            if n == 1 { "" } else { "s" }
        )),
        Err(e) => failed(&e),
    }
}

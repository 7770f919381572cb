//! What the page changes: plan approval, rejection and edits (checked with `plan check`'s
//! messages), answers, a person's comments on a diff (required fixes for the packet's next fix
//! round), and pause, resume, cancel and retry — each through the path its command takes.

use std::process::{Command, Stdio};

use git_orchestra::orchestrator::{Approval, StartJournal, WorkflowEvent, WorkflowState};
use git_orchestra::plan::Plan;
use git_orchestra::store::{Event, Store};
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
        "answer" => command(
            shared,
            &["answer", &text("packet"), &text("text"), "--run", run],
        ),
        "comments" => comments(shared, run, &text("packet"), &body["comments"]),
        "pause" => command(shared, &["pause", run]),
        "cancel" => command(shared, &["cancel", run]),
        "resume" => detached(shared, run, &["resume", run]),
        "retry" => detached(shared, run, &["retry", run]),
        _ => refused(404, format!("no action `{action}`")),
    }
}

/// The problems `plan check` finds in `plan`, and a changed objective (the run is named after
/// it) when `run` is given.
fn check(shared: &Shared, run: Option<&str>, plan: &str) -> Vec<String> {
    let mut problems =
        git_orchestra::orchestrator::planning::check(plan, &shared.repo.toplevel, &|_| true);
    let objective =
        run.and_then(|r| git_orchestra::status::start_state(&shared.repo.common_dir, r));
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
    let common = &shared.repo.common_dir;
    let phase = git_orchestra::status::start_state(common, run).map(|s| s.phase);
    if phase != Some(WorkflowState::AwaitingApproval) {
        return refused(
            409,
            format!("run `{run}` does not wait for a plan approval"),
        );
    }
    let what = match &decision {
        Approval::Approve => "approved",
        Approval::Edited(_) => "approved as edited",
        Approval::Revise(_) => "sent back to the planner",
        Approval::Reject => "rejected",
    };
    if shared.live.waiting().is_some() && shared.live.decide(decision.clone()) {
        return done(format!("plan {what}"));
    }
    let Ok(j) = StartJournal::open(common, run) else {
        return refused(500, "cannot open the run's journal");
    };
    let plan = match decision {
        Approval::Reject => {
            let result = j.workflow().map_err(|e| e.to_string()).and_then(|mut wf| {
                j.transition(
                    &mut wf,
                    WorkflowState::Cancelled,
                    "plan rejected on the page",
                )
                .map_err(|e| e.to_string())
            });
            return match result {
                Ok(_) => done("plan rejected; the run is cancelled"),
                Err(e) => refused(500, e),
            };
        }
        Approval::Revise(feedback) => {
            if let Err(e) = j.append(&WorkflowEvent::PlanSentBack { feedback }) {
                return refused(500, e.to_string());
            }
            return detached(shared, run, &["resume", run]);
        }
        Approval::Edited(plan) => plan,
        Approval::Approve => match j.entries().ok().and_then(|entries| {
            entries.iter().rev().find_map(|e| match &e.event {
                WorkflowEvent::PlanProposed { toml, issues, .. } if issues.is_empty() => {
                    Some(toml.clone())
                }
                _ => None,
            })
        }) {
            Some(plan) => plan,
            None => return refused(409, "the run has no valid plan to approve"),
        },
    };
    let how = if what == "approved" {
        "page"
    } else {
        "edited on the page"
    };
    if let Err(e) = j.append(&WorkflowEvent::PlanApproved {
        how: how.into(),
        toml: plan,
    }) {
        return refused(500, e.to_string());
    }
    detached(shared, run, &["resume", run])
}

/// Journals a person's comments on `packet`'s diff as required fixes for its next fix round.
fn comments(shared: &Shared, run: &str, packet: &str, comments: &Value) -> Reply {
    let list = comments.as_array().cloned().unwrap_or_default();
    let mut fixes = String::new();
    for c in &list {
        let note = c["text"].as_str().unwrap_or("").trim();
        if note.is_empty() {
            continue;
        }
        let file = c["file"].as_str().unwrap_or("");
        let line = c["line"]
            .as_u64()
            .map(|l| format!(" line {l}"))
            .unwrap_or_default();
        let code = c["code"].as_str().unwrap_or("").trim();
        let quoted = if code.is_empty() {
            String::new()
        } else {
            format!(" (`{}`)", git_orchestra::redact::clip(code, 200))
        };
        fixes.push_str(&format!(
            "- A person reviewing your diff says at {file}{line}{quoted}: {note}\n"
        ));
    }
    if fixes.is_empty() {
        return refused(
            400,
            "no comment to send: write one on a line of the diff first",
        );
    }
    let store = match Store::open_existing(&shared.repo.common_dir) {
        Ok(Some(s)) => s,
        _ => return refused(404, "no run yet"),
    };
    let mut store = store;
    let found = store
        .packets(run)
        .ok()
        .and_then(|list| list.into_iter().find(|p| p.id == packet));
    match found {
        Some(p) if !p.state.is_final() => {}
        Some(p) => {
            return refused(
                409,
                format!(
                    "packet `{packet}` is already {}; its comments can no longer reach a fix round of this run",
                    p.state.as_str()
                ),
            );
        }
        None => return refused(404, format!("no packet `{packet}` in run `{run}`")),
    }
    let event = Event::CommentsSent {
        packet: packet.to_string(),
        fixes,
    };
    match store.record(run, &event) {
        Ok(_) => done(format!(
            "{} comment{} sent to the agent of {packet}; they are required fixes before it is done",
            list.len(),
            if list.len() == 1 { "" } else { "s" }
        )),
        Err(e) => refused(500, e.to_string()),
    }
}

fn binary(shared: &Shared) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("-C")
        .arg(&shared.repo.toplevel)
        .stdin(Stdio::null());
    Ok(cmd)
}

/// Runs a command of this program and answers with what it said.
fn command(shared: &Shared, args: &[&str]) -> Reply {
    let out = match binary(shared).and_then(|mut c| {
        c.args(args)
            .output()
            .map_err(|e| format!("cannot run `{}`: {e}", args[0]))
    }) {
        Ok(out) => out,
        Err(e) => return refused(500, e),
    };
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = said.trim().to_string();
    if out.status.success() {
        done(said)
    } else {
        refused(409, said)
    }
}

/// Starts a command of this program that drives `run` on its own (resume, retry), its output
/// in the run's directory, in its own process group so it outlives this view.
fn detached(shared: &Shared, run: &str, args: &[&str]) -> Reply {
    use std::os::unix::process::CommandExt;
    let dir = git_orchestra::exec::RunDir::new(&shared.repo.common_dir, run);
    let log_path = dir.ui_log(args[0]);
    let log = fs_err::create_dir_all(dir.path()).and_then(|()| fs_err::File::create(&log_path));
    let (Ok(log), Ok(mut cmd)) = (log, binary(shared)) else {
        return refused(500, format!("cannot write {}", log_path.display()));
    };
    let Ok(err) = log.file().try_clone() else {
        return refused(500, format!("cannot write {}", log_path.display()));
    };
    cmd.args(args)
        .stdout(Stdio::from(log.into_parts().0))
        .stderr(Stdio::from(err))
        .process_group(0);
    match cmd.spawn() {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
            done(format!(
                "`git orchestra {}` runs now; its output goes to {}",
                args.join(" "),
                log_path.display()
            ))
        }
        Err(e) => refused(500, format!("cannot start `{}`: {e}", args[0])),
    }
}

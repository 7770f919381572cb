//! The `start` arm: the whole flow (clarify, plan, packets in parallel, gates, merge) run
//! unattended in the attempt's clean repository, landing on its `main`.
//!
//! Nobody answers: the plan is approved as `start --yes` approves it, the clarifier's
//! questions become its assumptions, and a packet agent's question gets the standing answer
//! "no person is available, decide yourself", as in a one-packet attempt. The arm's
//! `budget=`/`tokens=` are the run's hard limits (`start --budget-cost`, `--budget-tokens`), so
//! a run that reaches one stops there.

use std::time::Duration;

use orchestra_core::config::RepoConfig;
use orchestra_core::eval::Task;
use orchestra_core::eval::attempt::ATTEMPT_BRANCH;
use orchestra_core::store::Event;
use orchestra_git::git::RepoInfo;

use super::attempt::{AttemptEnv, Landing, classify};
use super::{Arm, AttemptResult, Failure};
use crate::orchestrator::budget::{self, Budget};
use crate::orchestrator::{
    Approval, ClarifyOutcome, Interaction, StartJournal, StartRequest, StartSettings,
    WorkflowEvent, WorkflowState,
};

/// The person of an unattended run: never there.
struct Unattended;

impl Interaction for Unattended {
    fn interactive(&self) -> bool {
        false
    }

    fn ask(&self, _question: &str) -> Option<String> {
        None
    }

    fn approve(&self, _plan_toml: &str, _problems: &[String]) -> Approval {
        Approval::Approve
    }

    fn progress(&self, _line: &str) {}

    fn engine_event(&self, _run: &str, _event: &Event) {}

    fn standing_answer(&self) -> Option<String> {
        Some(super::unattended::NO_PERSON.to_string())
    }
}

/// Runs `start` on `task`'s objective in `attempt` under `config` and records its packets,
/// tokens, cost and questions in `result`, with the failure class when the run did not
/// complete. Returns how the packets landed (with every packet landed, a failing check is a
/// semantic conflict; with one kept out by a conflict, a merge conflict). The error is a
/// crash's detail.
pub(super) fn work(
    env: &AttemptEnv<'_>,
    attempt: &RepoInfo,
    task: &Task,
    arm: &Arm,
    config: &RepoConfig,
    result: &mut AttemptResult,
) -> Result<Landing, String> {
    let req = StartRequest {
        objective: task.objective.trim().to_string(),
        settings: StartSettings {
            yes: true,
            merge: true,
            clarify: true,
            worker_cmd: None,
            agent: None,
            max_parallel: None,
            budget: Budget {
                tokens: arm.options.tokens,
                cost: arm.options.budget,
                ..Budget::default()
            },
            docs: false,
            tests: false,
            publish: None,
            executor: None,
        },
        timeout: env.check.timeout,
        worktree_root: Some(env.dir.join("worktrees")),
        setup: super::attempt::worktree_setup(config, env.suite),
        target: Some(ATTEMPT_BRANCH.to_string()),
        crash_after_events: None,
        crash_after_steps: None,
        answer_wait: Duration::ZERO,
        fix_rounds: config.fix_rounds(),
    };
    let outcome = crate::orchestrator::start(attempt, config, &req, &Unattended, env.check.stop)
        .map_err(|e| e.to_string())?;
    questions(attempt, &outcome.run, result);
    let Some(report) = outcome.report else {
        return Err(format!(
            "the run ended {} without a report",
            outcome.state.as_str()
        ));
    };
    result.packets = report.packets.len();
    result.tokens_in = report.usage.iter().map(|u| u.input_tokens).sum();
    result.tokens_out = report.usage.iter().map(|u| u.output_tokens).sum();
    let costs: Vec<f64> = report.usage.iter().filter_map(|u| u.cost).collect();
    result.cost = (!costs.is_empty()).then(|| costs.iter().sum());
    if outcome.state != WorkflowState::Completed {
        let reason = report
            .reason
            .clone()
            .unwrap_or_else(|| format!("the run ended {}", outcome.state.as_str()));
        let lower = reason.to_ascii_lowercase();
        let failure = if lower.contains("conflict") {
            Failure::MergeConflict
        } else {
            classify(&reason)
        };
        // The run's advice names `start`'s flags; here the arm's options set the limit.
        let reason = match (failure, reason.split_once(" (raise it with")) {
            (Failure::Budget, Some((head, _))) => {
                format!("{head} (the arm's `tokens=` or `budget=`)")
            }
            _ => reason,
        };
        result.failure = Some(failure);
        result.detail = Some(reason);
        return Ok(Landing::default());
    }
    let failed: Vec<&str> = report
        .packets
        .iter()
        .filter(|p| p.state != "succeeded")
        .map(|p| p.id.as_str())
        .collect();
    if !failed.is_empty() && failed.len() == report.packets.len() {
        // A packet whose agent stopped short (blocked, stalled, waiting on a question nobody
        // answers) gave up; otherwise the gates kept every packet out.
        let gave_up = report.packets.iter().find(|p| {
            p.state != "succeeded" && super::unattended::gave_up(&p.summary.to_ascii_lowercase())
        });
        // A worktree whose setup failed never saw the arm's work.
        let setup = report
            .packets
            .iter()
            .find(|p| p.state != "succeeded" && super::attempt::setup_failed(&p.summary));
        let (failure, detail) = match (setup, gave_up) {
            (Some(p), _) => (
                Failure::SetupFailed,
                format!("packet {}: {}", p.id, p.summary),
            ),
            (None, Some(p)) => (Failure::GaveUp, format!("packet {}: {}", p.id, p.summary)),
            (None, None) => (
                Failure::GateRejected,
                format!("no packet landed: {}", failed.join(", ")),
            ),
        };
        result.failure = Some(failure);
        result.detail = Some(detail);
    }
    // A packet the merge kept out over a conflict its agent did not resolve.
    let conflict = report
        .packets
        .iter()
        .find(|p| p.state == "not_landed" && p.summary.to_ascii_lowercase().contains("conflict"))
        .map(|p| format!("packet {}: {}", p.id, p.summary));
    Ok(Landing {
        clean: failed.is_empty(),
        conflict,
    })
}

/// Counts the questions of run `run` into `result`: the clarifier's (each left to an
/// assumption) and the packet agents' (none answered).
fn questions(attempt: &RepoInfo, run: &str, result: &mut AttemptResult) {
    let Ok(journal) = StartJournal::open(&attempt.common_dir, run) else {
        return;
    };
    for entry in journal.entries().unwrap_or_default() {
        match entry.event {
            WorkflowEvent::Clarified {
                outcome: ClarifyOutcome::Assumptions,
                assumptions,
                ..
            } => result.questions += u32::try_from(assumptions.len()).unwrap_or(u32::MAX),
            WorkflowEvent::Asked { packet, .. } if packet != budget::QUESTION => {
                result.questions += 1;
            }
            _ => {}
        }
    }
}

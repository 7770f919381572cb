//! Drives a `start` run through its workflow: each step reads the journal to learn what is
//! already done, does the rest, and journals the transition before moving on — so calling
//! [`start`] again after a crash, a pause or a failure continues where the run stopped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::approval::Decision;
use super::models::RoleModels;
use super::report::Report;
use super::start_journal::{Entry, JournalError, StartJournal, StartSettings, WorkflowEvent};
use super::workflow::{Workflow, WorkflowState as S};
use crate::agent::SetupError;
use crate::agent::{RoleError, Roles};
use orchestra_core::config::RepoConfig;
use orchestra_core::engine::EngineError;
use orchestra_core::merge::MergeError;
use orchestra_core::store::{Event, StoreError};
use orchestra_git::git::{RepoError, RepoInfo};
use orchestra_sys::names;

/// Why a `start` run stopped with an error (its state is journaled; `start` again resumes).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Roles(#[from] RoleError),
    #[error("{phase}: {source}")]
    Ask {
        phase: &'static str,
        source: SetupError,
    },
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error(transparent)]
    Lock(#[from] orchestra_sys::exec::LockError),
    #[error("the planner did not produce a valid plan in {rounds} rounds:\n  {issues}")]
    PlanInvalid { rounds: usize, issues: String },
    /// A plan the journal holds (approved earlier) no longer reads as a plan.
    #[error("the run's approved plan can no longer be read: {0}")]
    StoredPlanUnreadable(String),
    #[error(
        "run `{run}` needs the plan approved:\n\n{overview}\nApprove it with `git orchestra start --yes {objective}` (or run `git orchestra start` at a terminal to approve, edit or reject it)"
    )]
    NeedsApproval {
        run: String,
        /// The plan as a person reads it, with the plan reviewer's findings.
        overview: String,
        /// The objective, quoted for a shell.
        objective: String,
    },
    #[error("cannot write the report {path}: {source}")]
    Report {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the workflow journal is in use by a thread that panicked")]
    Poisoned,
    #[error(transparent)]
    RetryRefused(#[from] super::retry::RetryRefused),
    #[error(transparent)]
    AgentCli(#[from] crate::agent::cli::AdapterError),
    /// `[routing]` names workers that are not configured, or the run store cannot be read.
    #[error("{0}")]
    Routing(String),
}

impl From<crate::crew::CrewError> for StartError {
    fn from(e: crate::crew::CrewError) -> StartError {
        match e {
            crate::crew::CrewError::AgentCli(e) => StartError::AgentCli(e),
            crate::crew::CrewError::Executor(e) => StartError::Engine(EngineError::Executor(e)),
        }
    }
}

/// The user's answer to a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    Approve,
    /// The user edited the plan; this is the new text.
    Edited(String),
    /// The user sends the plan back to the planner with this feedback for a new round.
    Revise(String),
    Reject,
}

/// Everything that talks to the person running `start`.
pub trait Interaction: Sync {
    /// Returns true if and only if a person can answer questions now.
    fn interactive(&self) -> bool;
    /// Asks the person a question; `None` when they give no answer.
    fn ask(&self, question: &str) -> Option<String>;
    /// Shows the plan (and problems of an edited one) and asks for approval.
    fn approve(&self, plan_toml: &str, problems: &[String]) -> Approval;
    /// Reports progress of the workflow.
    fn progress(&self, line: &str);
    /// Reports an event of the engine or the merge coordinator.
    fn engine_event(&self, run: &str, event: &Event);
    /// Returns the answer every packet agent's question to a person gets at once, when nobody
    /// is there to answer (an unattended eval attempt); `None`: the question waits for
    /// `git orchestra answer`.
    fn standing_answer(&self) -> Option<String> {
        None
    }
}

/// What `start` was asked to do.
#[derive(Debug, Clone)]
pub struct StartRequest {
    pub objective: String,
    pub settings: StartSettings,
    pub timeout: Duration,
    pub worktree_root: Option<PathBuf>,
    pub setup: Option<String>,
    pub target: Option<String>,
    /// Fault injection for crash tests, passed to the engine.
    pub crash_after_events: Option<u64>,
    /// Fault injection for crash tests over every durable step (see [`super::fault`]).
    pub crash_after_steps: Option<u64>,
    /// Longest an agent waits for `git orchestra answer`.
    pub answer_wait: Duration,
    /// Fix rounds of a packet whose scope check or validation fails.
    pub fix_rounds: u32,
}

/// How a `start` call ended.
#[derive(Debug, Clone)]
pub struct StartOutcome {
    pub run: String,
    pub state: S,
    pub report: Option<Report>,
    pub report_path: Option<PathBuf>,
    /// Where the run's pull requests go once it completes (`start --pr`, from the command
    /// line or the run's journaled settings).
    pub publish: Option<super::PublishSettings>,
}

/// What every step of a run works with.
pub(super) struct Ctx<'a> {
    pub(super) repo: &'a RepoInfo,
    pub(super) req: &'a StartRequest,
    pub(super) settings: StartSettings,
    pub(super) run: String,
    pub(super) base: String,
    pub(super) journal: Arc<Mutex<StartJournal>>,
    pub(super) models: Arc<RoleModels>,
    pub(super) ui: &'a dyn Interaction,
    pub(super) stop: &'a AtomicBool,
}

/// Returns the run of `objective`: an unfinished one with that objective if any (whatever
/// its base), else the one derived from the objective and the current base.
pub fn locate(repo: &RepoInfo, objective: &str) -> Result<(String, String), StartError> {
    let head = repo.resolve_base(None)?;
    for id in StartJournal::runs(&repo.common_dir)? {
        let j = StartJournal::open(&repo.common_dir, &id)?;
        let entries = j.entries()?;
        let Some(WorkflowEvent::Started {
            objective: o, base, ..
        }) = entries.first().map(|e| &e.event)
        else {
            continue;
        };
        if o.trim() != objective.trim() {
            continue;
        }
        let reported = entries
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::ReportSaved { .. }));
        // A finished run is found again while the branch still points at its result.
        let integrated_at_head = entries.iter().rev().any(|e| match &e.event {
            WorkflowEvent::Merged { report } => {
                report.get("commit").and_then(|c| c.as_str()) == Some(head.as_str())
            }
            _ => false,
        });
        if !j.workflow()?.state().is_final() || !reported || integrated_at_head || *base == head {
            return Ok((id, base.clone()));
        }
    }
    Ok((names::run_id(objective, &head), head))
}

/// Takes `req.objective` to merged work (or as far as the run can go now); see the module docs.
pub fn start(
    repo: &RepoInfo,
    config: &RepoConfig,
    req: &StartRequest,
    ui: &dyn Interaction,
    stop: &AtomicBool,
) -> Result<StartOutcome, StartError> {
    super::fault::arm(req.crash_after_steps);
    let (run, base) = locate(repo, &req.objective)?;
    // One driver per run: a second `start` of the same objective is refused before it
    // journals anything, so two processes never plan (or drive) the same run at once.
    let _driver = driver_lock(repo, &run)?;
    let ctx = Ctx::open(repo, config, req, ui, stop, (run, base))?;
    let mut wf = ctx.j()?.workflow()?;
    // Every model call of every role says, while it waits, who waits and for how long.
    let done = AtomicBool::new(false);
    let first = config.start.wait_line_secs;
    std::thread::scope(|s| {
        let (journal, done_ref, run) = (&ctx.journal, &done, &ctx.run);
        s.spawn(move || {
            super::calls::watch(journal, first, done_ref, &|line| {
                ui.progress(&format!("{run}: {line}"));
            });
        });
        let outcome = loop {
            match ctx.step(&mut wf) {
                Ok(Some(outcome)) => break Ok(outcome),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
        };
        done.store(true, Ordering::SeqCst);
        outcome
    })
}

/// Returns the settings a resumed run goes on with: those it started with, updated by what
/// this invocation's command line adds.
fn resumed_settings(started: &StartSettings, now: &StartSettings) -> StartSettings {
    StartSettings {
        yes: started.yes || now.yes,
        // A new budget given on the command line replaces the one the run started with.
        budget: if now.budget.is_unlimited() {
            started.budget.clone()
        } else {
            now.budget.clone()
        },
        // `start --pr` on a run begun without it publishes it too.
        publish: now.publish.clone().or(started.publish.clone()),
        ..started.clone()
    }
}

impl<'a> Ctx<'a> {
    /// Opens the journal of `run` (at `base`), journals its start on first use and that this
    /// process drives it, and returns the context every step works with.
    fn open(
        repo: &'a RepoInfo,
        config: &RepoConfig,
        req: &'a StartRequest,
        ui: &'a dyn Interaction,
        stop: &'a AtomicBool,
        (run, base): (String, String),
    ) -> Result<Ctx<'a>, StartError> {
        let journal = StartJournal::open(&repo.common_dir, &run)?;
        let entries = journal.entries()?;
        let settings = match entries.first().map(|e| &e.event) {
            Some(WorkflowEvent::Started { settings, .. }) => {
                resumed_settings(settings, &req.settings)
            }
            _ => {
                journal.append(&WorkflowEvent::Started {
                    objective: req.objective.clone(),
                    base: base.clone(),
                    settings: req.settings.clone(),
                })?;
                req.settings.clone()
            }
        };
        journal.append(&WorkflowEvent::Driving {
            pid: std::process::id(),
        })?;
        let journal = Arc::new(Mutex::new(journal));
        let roles = Roles::load_with_trust(&repo.toplevel, config.trusted)?;
        let mut models = RoleModels::new(roles, config.clone(), journal.clone());
        models.budget = settings.budget.clone();
        models.soft = soft_thresholds(config, &entries, &journal)?;
        models.started_ms = entries
            .first()
            .map_or_else(orchestra_sys::exec::now_ms, |e| e.ts_ms);
        Ok(Ctx {
            repo,
            req,
            settings,
            run,
            base,
            models: Arc::new(models),
            journal,
            ui,
            stop,
        })
    }
}

/// Returns the soft thresholds a run goes on with: `[budget]`'s, raised each time the run went
/// on past one (see [`super::budget`]). A question about them still open is answered here:
/// driving the run again (`resume`, `start`) is going on.
fn soft_thresholds(
    config: &RepoConfig,
    entries: &[Entry],
    journal: &Arc<Mutex<StartJournal>>,
) -> Result<super::budget::Soft, StartError> {
    use super::budget::{QUESTION, Soft};
    let step = Soft::configured(&config.budget);
    let mut soft = step;
    let mut open = false;
    for e in entries {
        match &e.event {
            WorkflowEvent::SoftBudgetReached { next } => soft = next.at_least(&step),
            WorkflowEvent::Asked { packet, .. } if packet == QUESTION => open = true,
            WorkflowEvent::Answered { packet, .. } if packet == QUESTION => open = false,
            _ => {}
        }
    }
    if open {
        journal
            .lock()
            .map_err(|_| StartError::Poisoned)?
            .append(&WorkflowEvent::Answered {
                packet: QUESTION.to_string(),
                text: "went on (resumed)".to_string(),
            })?;
    }
    Ok(soft)
}

impl Ctx<'_> {
    /// Pauses the run with a question when it reached a soft threshold of `[budget]`,
    /// journaling the raised thresholds that apply once it goes on; `None` below them.
    fn soft_pause(&self, wf: &mut Workflow) -> Result<Option<StartOutcome>, StartError> {
        let Some((question, spent)) = self.models.soft_reached() else {
            return Ok(None);
        };
        let step = super::budget::Soft::configured(&self.models.config.budget);
        let next = self.models.soft.raised(&step, &spent);
        {
            let j = self.j()?;
            j.append(&WorkflowEvent::SoftBudgetReached { next })?;
            j.append(&WorkflowEvent::Asked {
                packet: super::budget::QUESTION.to_string(),
                question: question.clone(),
            })?;
        }
        self.move_to(wf, S::Paused, &question)?;
        Ok(Some(self.outcome(S::Paused, None)))
    }

    /// Returns how the run ended in `state`, with its report when it has one.
    fn outcome(&self, state: S, report: Option<(Report, PathBuf)>) -> StartOutcome {
        let (report, report_path) = report.unzip();
        StartOutcome {
            run: self.run.clone(),
            state,
            report,
            report_path,
            publish: self.settings.publish.clone(),
        }
    }

    /// Takes one step of the workflow: stops it when the budget is spent or a stop was
    /// asked for, otherwise does the current state's work. Returns the outcome once the
    /// run ends (or pauses) in this process.
    fn step(&self, wf: &mut Workflow) -> Result<Option<StartOutcome>, StartError> {
        let state = wf.state();
        if state.is_active()
            && let Some(reason) = self.models.hard_exceeded(None)
        {
            // Out of budget: keep everything, report what is done and what remains.
            self.move_to(wf, S::Failed, &reason)?;
            let report = self.report(S::Failed, true)?;
            return Ok(Some(self.outcome(S::Failed, Some(report))));
        }
        if state.is_active()
            && let Some(outcome) = self.soft_pause(wf)?
        {
            return Ok(Some(outcome));
        }
        if self.stop.load(Ordering::SeqCst) && state.is_active() {
            let cancel = self.cancel_requested()?;
            let to = if cancel { S::Cancelled } else { S::Paused };
            self.move_to(
                wf,
                to,
                if cancel {
                    "cancel requested"
                } else {
                    "stopped; `git orchestra resume` continues"
                },
            )?;
            return Ok((to == S::Paused).then(|| self.outcome(to, None)));
        }
        if let Some(outcome) = self.advance(wf, state)? {
            return Ok(Some(outcome));
        }
        Ok((wf.state() == S::Paused).then(|| self.outcome(S::Paused, None)))
    }

    /// Does the work of `state` and moves the workflow on; returns the outcome when the run
    /// ends here (completed, cancelled, failed).
    fn advance(&self, wf: &mut Workflow, state: S) -> Result<Option<StartOutcome>, StartError> {
        match state {
            S::Idle => {
                let to = if self.settings.clarify {
                    S::Clarifying
                } else {
                    S::Planning
                };
                self.move_to(wf, to, "started")?;
            }
            // A role's failure (its model refused, say) is journaled with its reason, so
            // `status`, the report and the web view can say why the run stopped.
            S::Clarifying => match self.clarify() {
                Ok(()) => self.move_to(wf, S::Planning, "objective clarified")?,
                Err(e) => return self.fail(wf, e).map(Some),
            },
            S::Planning | S::PlanRevision => match self.plan(wf) {
                Ok(()) => self.move_to(wf, S::PlanReview, "plan passes validation")?,
                Err(e) => return self.fail(wf, e).map(Some),
            },
            S::PlanReview => match self.review() {
                Ok(true) => self.move_to(wf, S::AwaitingApproval, "plan review done")?,
                Ok(false) => self.move_to(wf, S::PlanRevision, "the reviewer asked for changes")?,
                Err(e) => return self.fail(wf, e).map(Some),
            },
            S::AwaitingApproval => match self.approve()? {
                Decision::Approved => self.move_to(wf, S::Executing, "plan approved")?,
                Decision::Rejected => self.move_to(wf, S::Cancelled, "plan rejected")?,
                Decision::SentBack => {
                    self.move_to(wf, S::PlanRevision, "sent back with the person's feedback")?
                }
                Decision::Nobody => {
                    let plan = self.as_it_runs(&self.valid_plan()?.unwrap_or_default())?;
                    return Err(StartError::NeedsApproval {
                        run: self.run.clone(),
                        overview: super::approval::overview(
                            &plan,
                            &self.plan_findings()?,
                            self.forecast(&plan).as_ref(),
                        ),
                        objective: shell_quote(&self.req.objective),
                    });
                }
            },
            S::Executing => match self.execute() {
                Ok(Some(any_ok)) => {
                    let to = if self.settings.merge && any_ok {
                        S::Integrating
                    } else {
                        S::Completed
                    };
                    self.move_to(wf, to, "packets finished")?;
                }
                Ok(None) => {}
                Err(e) => return self.fail(wf, e).map(Some),
            },
            S::Integrating => match self.integrate() {
                Ok(()) => self.move_to(wf, self.after(S::Integrating), "integrated")?,
                Err(e) => return self.fail(wf, e).map(Some),
            },
            S::Documenting | S::Testing => match self.finishing(state) {
                Ok(Some(reason)) => self.move_to(wf, self.after(state), &reason)?,
                Ok(None) => {}
                Err(e) => return self.fail(wf, e).map(Some),
            },
            S::Paused | S::Failed => match wf.resume_target() {
                Some(to) => self.move_to(wf, to, "resumed")?,
                None => self.move_to(wf, S::Cancelled, "nothing to resume into")?,
            },
            S::Completed | S::Cancelled => {
                let report = self.report(state, true)?;
                return Ok(Some(self.outcome(state, Some(report))));
            }
        }
        Ok(None)
    }
}

/// Takes the lock that lets one process drive the workflow of `run`; the engine and merge
/// coordinator keep their own run lock for the packets, so the two never contend.
pub fn driver_lock(repo: &RepoInfo, run: &str) -> Result<orchestra_sys::exec::RunLock, StartError> {
    let dir = orchestra_sys::exec::RunDir::new(&repo.common_dir, run).driver_lock();
    Ok(orchestra_sys::exec::RunLock::acquire(&dir, run)?)
}

pub(super) fn ask_err(phase: &'static str) -> impl Fn(SetupError) -> StartError {
    move |source| StartError::Ask { phase, source }
}

impl Ctx<'_> {
    pub(super) fn j(&self) -> Result<MutexGuard<'_, StartJournal>, StartError> {
        self.journal.lock().map_err(|_| StartError::Poisoned)
    }

    pub(super) fn move_to(&self, wf: &mut Workflow, to: S, reason: &str) -> Result<(), StartError> {
        self.j()?.transition(wf, to, reason)?;
        self.ui.progress(&format!("{} → {to}: {reason}", self.run));
        Ok(())
    }

    /// Journals a failure — or a pause, when the error came from a stop request — and
    /// returns the outcome.
    pub(super) fn fail(
        &self,
        wf: &mut Workflow,
        e: StartError,
    ) -> Result<StartOutcome, StartError> {
        if self.stop.load(Ordering::SeqCst) {
            let cancel = self.cancel_requested()?;
            let to = if cancel { S::Cancelled } else { S::Paused };
            self.move_to(wf, to, "stopped on request")?;
            return Ok(StartOutcome {
                run: self.run.clone(),
                state: to,
                report: None,
                report_path: None,
                publish: self.settings.publish.clone(),
            });
        }
        // A model call refused at a soft threshold: pause and ask, do not fail.
        if self.models.hard_exceeded(None).is_none()
            && let Some(outcome) = self.soft_pause(wf)?
        {
            return Ok(outcome);
        }
        self.j()?.append(&WorkflowEvent::ReplayEpochEnded {
            reason: e.to_string(),
        })?;
        self.move_to(wf, S::Failed, &e.to_string())?;
        // A failed run has a report too: what was done, what failed and why. Writing it must
        // not hide the failure itself, nor ask a model that may be what failed.
        if let Err(report_error) = self.report(S::Failed, false) {
            tracing::warn!(error = %report_error, "the failed run's report was not written");
        }
        Err(e)
    }

    pub(super) fn cancel_requested(&self) -> Result<bool, StartError> {
        Ok(self
            .j()?
            .entries()?
            .iter()
            .rev()
            .find_map(|e| match e.event {
                WorkflowEvent::StopRequested { cancel } => Some(cancel),
                _ => None,
            })
            .unwrap_or(false))
    }

    /// Returns the entries journaled since the last transition into `state`.
    pub(super) fn since_entering(&self, state: S) -> Result<Vec<Entry>, StartError> {
        let entries = self.j()?.entries()?;
        let from = entries
            .iter()
            .rposition(|e| matches!(e.event, WorkflowEvent::Transition { to, .. } if to == state))
            .map_or(0, |i| i + 1);
        Ok(entries[from..].to_vec())
    }

    pub(super) fn all(&self) -> Result<Vec<Entry>, StartError> {
        Ok(self.j()?.entries()?)
    }
}

/// Returns `s` quoted for a POSIX shell.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

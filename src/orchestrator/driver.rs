//! Drives a `start` run through its workflow: each step reads the journal to learn what is
//! already done, does the rest, and journals the transition before moving on — so calling
//! [`start`] again after a crash, a pause or a failure continues where the run stopped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::conflicts::{self, Resolution};
use super::context::{self, Artifact, ContextLimits, OrchestratorView};
use super::journal::{
    ClarifyOutcome, Entry, JournalError, StartJournal, StartSettings, WorkflowEvent,
};
use super::models::{AskError, RoleModels, extract_json, strings};
use super::plan_phase::{self, PlanInputs};
use super::report::{self, Report};
use super::worker::StartWorker;
use super::workflow::{Workflow, WorkflowState as S};
use crate::agent::{RoleError, Roles};
use crate::config::RepoConfig;
use crate::engine::{self, Control, EngineError, RunOptions, Worker};
use crate::git::{RepoError, RepoInfo};
use crate::merge::{self, MergeError, MergeOptions};
use crate::names;
use crate::plan::Plan;
use crate::store::{Event, RunState, Store, StoreError, now_ms};

/// Most planner rounds to reach a plan that passes validation.
pub const MAX_PLAN_ROUNDS: usize = 3;
/// Most plan review rounds before the last valid plan goes to approval as it is.
pub const MAX_REVIEW_ROUNDS: usize = 2;
/// Most merge attempts while conflicted packets are being resolved.
pub const MAX_MERGE_ROUNDS: usize = 3;

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
        source: AskError,
    },
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error(
        "the planner did not produce a valid plan in {rounds} rounds; last problems:\n  {issues}"
    )]
    PlanInvalid { rounds: usize, issues: String },
    #[error(
        "run `{run}` needs the plan approved: run `git orchestra start` at a terminal, or pass --yes"
    )]
    NeedsApproval { run: String },
    #[error("cannot write the report {path}: {source}")]
    Report {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the workflow journal is in use by a thread that panicked")]
    Poisoned,
}

/// The user's answer to a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    Approve,
    /// The user edited the plan; this is the new text.
    Edited(String),
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
}

/// How a `start` call ended.
#[derive(Debug, Clone)]
pub struct StartOutcome {
    pub run: String,
    pub state: S,
    pub report: Option<Report>,
    pub report_path: Option<PathBuf>,
}

struct Ctx<'a> {
    repo: &'a RepoInfo,
    req: &'a StartRequest,
    settings: StartSettings,
    run: String,
    base: String,
    journal: Arc<Mutex<StartJournal>>,
    models: Arc<RoleModels>,
    ui: &'a dyn Interaction,
    stop: &'a AtomicBool,
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
    let journal = StartJournal::open(&repo.common_dir, &run)?;
    let entries = journal.entries()?;
    let settings = match entries.first().map(|e| &e.event) {
        Some(WorkflowEvent::Started { settings, .. }) => StartSettings {
            yes: settings.yes || req.settings.yes,
            ..settings.clone()
        },
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
    let roles = Roles::load(&repo.toplevel)?;
    let ctx = Ctx {
        repo,
        req,
        settings,
        run: run.clone(),
        base,
        models: Arc::new(RoleModels::new(roles, config.clone(), journal.clone())),
        journal,
        ui,
        stop,
    };
    let mut wf = ctx.j()?.workflow()?;
    loop {
        let state = wf.state();
        if stop.load(Ordering::SeqCst) && state.is_active() {
            let cancel = ctx.cancel_requested()?;
            let to = if cancel { S::Cancelled } else { S::Paused };
            ctx.move_to(
                &mut wf,
                to,
                if cancel {
                    "cancel requested"
                } else {
                    "stopped; `git orchestra resume` continues"
                },
            )?;
            continue;
        }
        match state {
            S::Idle => {
                let to = if ctx.settings.clarify {
                    S::Clarifying
                } else {
                    S::Planning
                };
                ctx.move_to(&mut wf, to, "started")?;
            }
            S::Clarifying => {
                ctx.clarify()?;
                ctx.move_to(&mut wf, S::Planning, "objective clarified")?;
            }
            S::Planning | S::PlanRevision => match ctx.plan(&wf) {
                Ok(()) => ctx.move_to(&mut wf, S::PlanReview, "plan passes validation")?,
                Err(e) => return ctx.fail(&mut wf, e),
            },
            S::PlanReview => match ctx.review()? {
                true => ctx.move_to(&mut wf, S::AwaitingApproval, "plan review done")?,
                false => ctx.move_to(&mut wf, S::PlanRevision, "the reviewer asked for changes")?,
            },
            S::AwaitingApproval => match ctx.approve()? {
                Some(true) => ctx.move_to(&mut wf, S::Executing, "plan approved")?,
                Some(false) => ctx.move_to(&mut wf, S::Cancelled, "plan rejected")?,
                None => return Err(StartError::NeedsApproval { run }),
            },
            S::Executing => match ctx.execute() {
                Ok(Some(any_ok)) => {
                    let to = if ctx.settings.merge && any_ok {
                        S::Integrating
                    } else {
                        S::Completed
                    };
                    ctx.move_to(&mut wf, to, "packets finished")?;
                }
                Ok(None) => {}
                Err(e) => return ctx.fail(&mut wf, e),
            },
            S::Integrating => match ctx.integrate() {
                Ok(()) => ctx.move_to(&mut wf, S::Completed, "integrated")?,
                Err(e) => return ctx.fail(&mut wf, e),
            },
            S::Documenting | S::Testing => ctx.move_to(
                &mut wf,
                S::Completed,
                "no documentation or test phase configured",
            )?,
            S::Paused | S::Failed => match wf.resume_target() {
                Some(to) => ctx.move_to(&mut wf, to, "resumed")?,
                None => ctx.move_to(&mut wf, S::Cancelled, "nothing to resume into")?,
            },
            S::Completed | S::Cancelled => {
                let (report, path) = ctx.report(state)?;
                return Ok(StartOutcome {
                    run,
                    state,
                    report: Some(report),
                    report_path: Some(path),
                });
            }
        }
        if wf.state() == S::Paused {
            return Ok(StartOutcome {
                run,
                state: S::Paused,
                report: None,
                report_path: None,
            });
        }
    }
}

fn ask_err(phase: &'static str) -> impl Fn(AskError) -> StartError {
    move |source| StartError::Ask { phase, source }
}

impl Ctx<'_> {
    fn j(&self) -> Result<MutexGuard<'_, StartJournal>, StartError> {
        self.journal.lock().map_err(|_| StartError::Poisoned)
    }

    fn move_to(&self, wf: &mut Workflow, to: S, reason: &str) -> Result<(), StartError> {
        self.j()?.transition(wf, to, reason)?;
        self.ui.progress(&format!("{} → {to}: {reason}", self.run));
        Ok(())
    }

    /// Journals a failure — or a pause, when the error came from a stop request — and
    /// returns the outcome.
    fn fail(&self, wf: &mut Workflow, e: StartError) -> Result<StartOutcome, StartError> {
        if self.stop.load(Ordering::SeqCst) {
            let cancel = self.cancel_requested()?;
            let to = if cancel { S::Cancelled } else { S::Paused };
            self.move_to(wf, to, "stopped on request")?;
            return Ok(StartOutcome {
                run: self.run.clone(),
                state: to,
                report: None,
                report_path: None,
            });
        }
        self.move_to(wf, S::Failed, &e.to_string())?;
        Err(e)
    }

    fn cancel_requested(&self) -> Result<bool, StartError> {
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
    fn since_entering(&self, state: S) -> Result<Vec<Entry>, StartError> {
        let entries = self.j()?.entries()?;
        let from = entries
            .iter()
            .rposition(|e| matches!(e.event, WorkflowEvent::Transition { to, .. } if to == state))
            .map_or(0, |i| i + 1);
        Ok(entries[from..].to_vec())
    }

    fn all(&self) -> Result<Vec<Entry>, StartError> {
        Ok(self.j()?.entries()?)
    }

    fn clarify(&self) -> Result<(), StartError> {
        if self
            .all()?
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::Clarified { .. }))
        {
            return Ok(());
        }
        let project = plan_phase::project_context(&self.repo.toplevel);
        let c = plan_phase::clarify(&self.models, &self.req.objective, &project, self.stop)
            .map_err(ask_err("clarify"))?;
        let mut answers = Vec::new();
        if !c.questions.is_empty() && self.ui.interactive() {
            for q in &c.questions {
                if let Some(a) = self.ui.ask(q).filter(|a| !a.trim().is_empty()) {
                    answers.push((q.clone(), a));
                }
            }
        }
        let outcome = if c.questions.is_empty() {
            ClarifyOutcome::Clear
        } else if answers.len() == c.questions.len() {
            ClarifyOutcome::Clarified
        } else {
            ClarifyOutcome::Assumptions
        };
        let assumptions = if outcome == ClarifyOutcome::Assumptions {
            c.assumptions
        } else {
            Vec::new()
        };
        self.j()?.append(&WorkflowEvent::Clarified {
            outcome,
            requirements: c.requirements,
            assumptions,
            answers,
        })?;
        Ok(())
    }

    fn notes(&self) -> Result<Vec<String>, StartError> {
        Ok(self
            .all()?
            .iter()
            .find_map(|e| match &e.event {
                WorkflowEvent::Clarified {
                    requirements,
                    assumptions,
                    answers,
                    ..
                } => Some(
                    requirements
                        .iter()
                        .cloned()
                        .chain(assumptions.iter().map(|a| format!("assumed: {a}")))
                        .chain(answers.iter().map(|(q, a)| format!("{q} {a}")))
                        .collect(),
                ),
                _ => None,
            })
            .unwrap_or_default())
    }

    /// Returns the last plan that passed validation, if any.
    fn valid_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanProposed { toml, issues, .. } if issues.is_empty() => {
                Some(toml.clone())
            }
            _ => None,
        }))
    }

    fn plan(&self, wf: &Workflow) -> Result<(), StartError> {
        let state = wf.state();
        let here = self.since_entering(state)?;
        let mut round = self
            .all()?
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::PlanProposed { .. }))
            .count() as u32;
        let mut last: Option<(String, Vec<String>)> =
            here.iter().rev().find_map(|e| match &e.event {
                WorkflowEvent::PlanProposed { toml, issues, .. } => {
                    Some((toml.clone(), issues.clone()))
                }
                _ => None,
            });
        if last.as_ref().is_some_and(|(_, i)| i.is_empty()) {
            return Ok(());
        }
        let mut feedback: Vec<String> = match (&last, state) {
            (Some((_, issues)), _) => issues.clone(),
            (None, S::PlanRevision) => self
                .all()?
                .iter()
                .rev()
                .find_map(|e| match &e.event {
                    WorkflowEvent::PlanReviewed { findings, .. } => Some(findings.clone()),
                    _ => None,
                })
                .unwrap_or_default(),
            (None, _) => Vec::new(),
        };
        let mut previous = match state {
            S::PlanRevision => self.valid_plan()?,
            _ => None,
        };
        if let Some((t, _)) = &last {
            previous = Some(t.clone());
        }
        let done = here
            .iter()
            .filter(|e| matches!(e.event, WorkflowEvent::PlanProposed { .. }))
            .count();
        let notes = self.notes()?;
        let project = plan_phase::project_context(&self.repo.toplevel);
        let map = plan_phase::repo_map(&self.repo.toplevel, &self.req.objective);
        let roles = &self.models.roles;
        for _ in done..MAX_PLAN_ROUNDS {
            round += 1;
            self.ui
                .progress(&format!("{}: planning, round {round}", self.run));
            let toml = plan_phase::propose(
                &self.models,
                &PlanInputs {
                    objective: &self.req.objective,
                    base: &self.base,
                    notes: &notes,
                    project: &project,
                    repo_map: &map,
                    feedback: &feedback,
                    previous: previous.as_deref(),
                },
                self.stop,
            )
            .map_err(ask_err("plan"))?;
            let worker_cmd = self.settings.worker_cmd.is_some();
            let issues = plan_phase::check(&toml, &self.repo.toplevel, &|r| {
                worker_cmd || roles.get(r).is_ok()
            });
            self.j()?.append(&WorkflowEvent::PlanProposed {
                round,
                toml: toml.clone(),
                issues: issues.clone(),
            })?;
            if issues.is_empty() {
                return Ok(());
            }
            feedback = issues.clone();
            previous = Some(toml);
            last = Some((String::new(), issues));
        }
        Err(StartError::PlanInvalid {
            rounds: MAX_PLAN_ROUNDS,
            issues: last.map(|(_, i)| i.join("\n  ")).unwrap_or_default(),
        })
    }

    /// Reviews the current plan; returns true when it goes on to approval.
    fn review(&self) -> Result<bool, StartError> {
        let done: Vec<(bool, usize)> = self
            .all()?
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::PlanReviewed {
                    approved, findings, ..
                } => Some((*approved, findings.len())),
                _ => None,
            })
            .collect();
        let here = self.since_entering(S::PlanReview)?;
        if let Some(approved) = here.iter().find_map(|e| match &e.event {
            WorkflowEvent::PlanReviewed { approved, .. } => Some(*approved),
            _ => None,
        }) {
            return Ok(approved || done.len() >= MAX_REVIEW_ROUNDS);
        }
        if self.models.check("reviewer").is_err() {
            self.ui.progress(&format!(
                "{}: no reviewer model; plan review skipped",
                self.run
            ));
            return Ok(true);
        }
        let Some(plan) = self.valid_plan()? else {
            return Ok(true);
        };
        let (approved, findings) =
            plan_phase::review(&self.models, &self.req.objective, &plan, self.stop)
                .map_err(ask_err("plan review"))?;
        let round = done.len() as u32 + 1;
        self.j()?.append(&WorkflowEvent::PlanReviewed {
            round,
            approved,
            findings,
        })?;
        Ok(approved || round as usize >= MAX_REVIEW_ROUNDS)
    }

    /// Returns Some(true) when approved, Some(false) when rejected, None when nobody can say.
    fn approve(&self) -> Result<Option<bool>, StartError> {
        if self
            .since_entering(S::AwaitingApproval)?
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::PlanApproved { .. }))
        {
            return Ok(Some(true));
        }
        let Some(mut plan) = self.valid_plan()? else {
            return Ok(Some(false));
        };
        let how = if self.settings.yes {
            "flag"
        } else if !self.ui.interactive() {
            return Ok(None);
        } else {
            let mut problems = Vec::new();
            let mut edited = false;
            loop {
                match self.ui.approve(&plan, &problems) {
                    Approval::Approve if problems.is_empty() => break,
                    Approval::Approve => {}
                    Approval::Reject => return Ok(Some(false)),
                    Approval::Edited(text) => {
                        plan = text;
                        edited = true;
                    }
                }
                let worker_cmd = self.settings.worker_cmd.is_some();
                problems = plan_phase::check(&plan, &self.repo.toplevel, &|r| {
                    worker_cmd || self.models.roles.get(r).is_ok()
                });
                if let Ok(p) = Plan::from_toml_str(&plan, "plan.toml")
                    && p.objective.trim() != self.req.objective.trim()
                {
                    problems.push(
                        "the objective must stay as it is (the run is named after it)".into(),
                    );
                }
            }
            if edited { "edited" } else { "user" }
        };
        self.j()?.append(&WorkflowEvent::PlanApproved {
            how: how.to_string(),
            toml: plan,
        })?;
        Ok(Some(true))
    }

    fn approved_plan(&self) -> Result<Option<String>, StartError> {
        Ok(self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::PlanApproved { toml, .. } => Some(toml.clone()),
            _ => None,
        }))
    }

    /// Runs the packets; returns Some(any succeeded) when all are final, None when stopped.
    fn execute(&self) -> Result<Option<bool>, StartError> {
        let toml = self
            .approved_plan()?
            .ok_or_else(|| StartError::PlanInvalid {
                rounds: 0,
                issues: "no approved plan in the journal".into(),
            })?;
        let plan =
            Plan::from_toml_str(&toml, "plan.toml").map_err(|e| StartError::PlanInvalid {
                rounds: 0,
                issues: e.to_string(),
            })?;
        let opts = RunOptions {
            worker_cmd: self.settings.worker_cmd.clone(),
            max_parallel: self.settings.max_parallel,
            timeout: self.req.timeout,
            worktree_root: self.req.worktree_root.clone(),
        };
        let prepared = engine::prepare(self.repo, &plan, &toml, "plan.toml", &opts)?;
        let id = prepared.run.id.clone();
        let mut state = prepared.run.state;
        if !state.is_finished() {
            let on_event = |run: &str, e: &Event| {
                self.ui.engine_event(run, e);
                super::fault::step();
            };
            let ctl = Control {
                stop: self.stop,
                on_event: &on_event,
                setup: self.req.setup.clone(),
                crash_after_events: self.req.crash_after_events,
            };
            let worker = StartWorker::new(self.models.clone(), self.req.answer_wait);
            let w: Option<&dyn Worker> = match prepared.run.worker_cmd {
                Some(_) => None,
                None => Some(&worker),
            };
            state = engine::execute_with(self.repo, &id, &ctl, w)?.state;
        }
        if state == RunState::Interrupted || self.stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let store = Store::open(&self.repo.common_dir)?;
        let packets = store.packets(&id)?;
        Ok(Some(
            packets
                .iter()
                .any(|p| p.state == crate::store::PacketState::Succeeded),
        ))
    }

    fn integrate(&self) -> Result<(), StartError> {
        let opts = MergeOptions {
            target: self.req.target.clone(),
            timeout: self.req.timeout,
            ..Default::default()
        };
        let on_event = |run: &str, e: &Event| {
            self.ui.engine_event(run, e);
            super::fault::step();
        };
        let store = Store::open(&self.repo.common_dir)?;
        let run = store.require_run(&self.run)?;
        let plan = Plan::from_toml_str(&run.plan_toml, &run.plan_path).map_err(|e| {
            StartError::PlanInvalid {
                rounds: 0,
                issues: e.to_string(),
            }
        })?;
        let worker = StartWorker::new(self.models.clone(), self.req.answer_wait);
        let mut last = None;
        for _ in 0..MAX_MERGE_ROUNDS {
            let report = merge::integrate(self.repo, &self.run, &opts, &on_event)?;
            let conflicted: Vec<_> = report
                .sent_back
                .iter()
                .filter(|s| !s.conflicts.is_empty())
                .cloned()
                .collect();
            last = Some(report.clone());
            if conflicted.is_empty() || self.settings.worker_cmd.is_some() {
                break;
            }
            let records = store.packets(&self.run)?;
            for s in conflicted {
                let (Some(rec), Some(packet)) = (
                    records.iter().find(|r| r.id == s.packet),
                    plan.packets.iter().find(|p| p.id == s.packet),
                ) else {
                    continue;
                };
                self.ui.progress(&format!(
                    "{}: {} conflicts in {}; its agent resolves them",
                    self.run,
                    s.packet,
                    s.conflicts.join(", ")
                ));
                let log = engine::run_dir(&self.repo.common_dir, &self.run)
                    .join("logs")
                    .join(format!("{}-resolve.log", s.packet));
                match conflicts::resolve(
                    &Resolution {
                        common_dir: &self.repo.common_dir,
                        run: &self.run,
                        objective: &self.req.objective,
                        record: rec,
                        packet,
                        integration: &report.integration,
                        paths: &s.conflicts,
                        log: &log,
                        stop: self.stop,
                        timeout: self.req.timeout,
                    },
                    &worker,
                ) {
                    Ok(commit) => {
                        self.j()?.append(&WorkflowEvent::ConflictResolved {
                            packet: s.packet.clone(),
                            commit,
                            paths: s.conflicts.clone(),
                        })?;
                    }
                    Err(e) => self.ui.progress(&format!("{}: {e}", self.run)),
                }
            }
        }
        if let Some(report) = last {
            self.j()?.append(&WorkflowEvent::Merged {
                report: serde_json::to_value(&report).unwrap_or_default(),
            })?;
        }
        Ok(())
    }

    /// Builds, saves and returns the report (the journaled one when already written).
    fn report(&self, state: S) -> Result<(Report, PathBuf), StartError> {
        let dir = engine::run_dir(&self.repo.common_dir, &self.run);
        let path = dir.join("report.md");
        let store = Store::open(&self.repo.common_dir)?;
        let run = store.run(&self.run)?;
        let packets = store.packets(&self.run).unwrap_or_default();
        let events = store.events(&self.run, 0).unwrap_or_default();
        let plan = run
            .as_ref()
            .and_then(|r| Plan::from_toml_str(&r.plan_toml, &r.plan_path).ok());
        let artifacts = self.artifacts(&dir, plan.as_ref(), &packets)?;
        let advice = self.advice(state, &artifacts, &packets);
        let workflow = self.all()?;
        let usage = self.j()?.usage()?;
        let price = |m: &str| self.models.price(m);
        let report = report::build(&report::Sources {
            run: &self.run,
            objective: &self.req.objective,
            state,
            workflow: &workflow,
            packets: &packets,
            events: &events,
            plan: plan.as_ref(),
            usage: &usage,
            price: &price,
            advice,
            now_ms: workflow
                .iter()
                .rev()
                .find(|e| matches!(e.event, WorkflowEvent::Transition { .. }))
                .map_or_else(now_ms, |e| e.ts_ms),
        });
        let markdown = report::render(&report);
        let io = |source| StartError::Report {
            path: path.clone(),
            source,
        };
        fs_err::create_dir_all(&dir).map_err(io)?;
        fs_err::write(&path, &markdown).map_err(io)?;
        let json_path = dir.join("report.json");
        fs_err::write(
            &json_path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )
        .map_err(io)?;
        if !workflow
            .iter()
            .any(|e| matches!(e.event, WorkflowEvent::ReportSaved { .. }))
        {
            self.j()?.append(&WorkflowEvent::ReportSaved {
                markdown: path.display().to_string(),
                json: json_path.display().to_string(),
            })?;
        }
        Ok((report, path))
    }

    /// Stores the plan, each packet's diff and the merge report once as artifacts.
    fn artifacts(
        &self,
        dir: &std::path::Path,
        plan: Option<&Plan>,
        packets: &[crate::store::PacketRecord],
    ) -> Result<Vec<Artifact>, StartError> {
        let limits = ContextLimits::default();
        let adir = dir.join("artifacts");
        let mut out = Vec::new();
        let io = |source| StartError::Report {
            path: adir.clone(),
            source,
        };
        if let Some(toml) = self.approved_plan()? {
            out.push(
                context::store_artifact(&adir, "plan", "plan", &toml, limits.summary_tokens)
                    .map_err(io)?,
            );
        }
        let git = self.repo.git();
        for p in packets {
            if let (Some(start), Some(commit)) = (&p.start, &p.commit)
                && let Ok(diff) = git.run(["diff", start.as_str(), commit.as_str()])
            {
                out.push(
                    context::store_artifact(&adir, "diff", &p.id, &diff, limits.summary_tokens)
                        .map_err(io)?,
                );
            }
        }
        let _ = plan;
        if let Some(merged) = self.all()?.iter().rev().find_map(|e| match &e.event {
            WorkflowEvent::Merged { report } => Some(report.to_string()),
            _ => None,
        }) {
            out.push(
                context::store_artifact(
                    &adir,
                    "merge",
                    "integration",
                    &merged,
                    limits.summary_tokens,
                )
                .map_err(io)?,
            );
        }
        Ok(out)
    }

    /// Asks the orchestrator role, with a bounded view of the run, for next steps.
    fn advice(
        &self,
        state: S,
        artifacts: &[Artifact],
        packets: &[crate::store::PacketRecord],
    ) -> Vec<String> {
        if self.models.check("orchestrator").is_err() {
            return Vec::new();
        }
        let todo: Vec<String> = packets
            .iter()
            .filter(|p| p.state != crate::store::PacketState::Succeeded)
            .map(|p| format!("{} is {}", p.id, p.state.as_str()))
            .collect();
        let history: Vec<String> = self
            .all()
            .unwrap_or_default()
            .iter()
            .filter_map(|e| match &e.event {
                WorkflowEvent::Transition { to, reason, .. } => Some(format!("{to}: {reason}")),
                _ => None,
            })
            .collect();
        let prompt = context::orchestrator_prompt(
            &OrchestratorView {
                objective: &self.req.objective,
                state: state.as_str(),
                artifacts,
                todo: &todo,
                history: &history,
            },
            &ContextLimits::default(),
        );
        let guidance = "The run has ended. Reply with only a JSON object {\"next_steps\": [at most five concrete follow-ups for the user]}";
        match self
            .models
            .ask("orchestrator", guidance, &prompt, self.stop)
        {
            Ok(r) => extract_json(&r.text)
                .map(|v| strings(&v, "next_steps"))
                .unwrap_or_default(),
            Err(e) => vec![format!("(the orchestrator gave no advice: {e})")],
        }
    }
}

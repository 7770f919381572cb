//! What a run looks like right now, read from the run store and the workflow journal: the one
//! query behind `status`, `status --json`, the final summary of `run`/`agent`/`resume`, and any
//! other view of a run.
//!
//! Front ends render these values; none of them reads the journal on its own, so every view
//! agrees on a run's phase, its packets, its tokens and its cost.

use std::path::Path;

use serde::Serialize;

mod candidates;
mod failure;

pub use crate::orchestrator::spend::{
    ModelCall, Spend, SpendLine, SpendPoint, call_cost, lines as spend_lines, model_calls,
    points as spend_points, run_spend, spend,
};
pub use candidates::{
    CandidateResult, PacketCandidates, candidates as packet_candidates, lines as candidate_lines,
};
pub use failure::{Failure, run_failure, start_failure};

use crate::orchestrator::{StartJournal, WorkflowEvent, WorkflowState};
use orchestra_core::config::Price;
use orchestra_core::store::{
    AgentUsage, Event, PacketRecord, RunRecord, RunState, Store, StoreError,
};

/// Why a run's status could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "no run in this repository yet; `git orchestra start \"<objective>\"` or `git orchestra run <plan.toml>` makes one"
    )]
    NoRun,
}

/// A `start` run's phase and objective.
#[derive(Debug, Clone, Serialize)]
pub struct StartState {
    pub phase: WorkflowState,
    pub objective: String,
    pub started_ms: i64,
}

/// A `start` run that has no engine run yet (still clarifying or planning).
#[derive(Debug, Clone, Serialize)]
pub struct PlanningRun {
    pub id: String,
    pub phase: WorkflowState,
    /// The phase as users see it: "interrupted while clarifying" when no process drives it.
    pub state: String,
    pub objective: String,
    /// When the `start` run began, in milliseconds since the Unix epoch.
    pub started_ms: i64,
}

/// A question an agent asked that nobody has answered yet.
#[derive(Debug, Clone, Serialize)]
pub struct OpenQuestion {
    pub packet: String,
    pub question: String,
}

/// What a `start` run adds to its engine run's status.
#[derive(Debug, Clone, Serialize)]
pub struct StartStatus {
    /// The `start` run these lines belong to (an engine run of a documenting or testing phase
    /// reports its parent's).
    pub run: String,
    /// Set when the engine run asked about is a phase of this `start` run.
    pub parent_of_phase: bool,
    pub phase: WorkflowState,
    /// The phase as users see it: "interrupted while executing" when no process drives it.
    pub state: String,
    /// The headline of the run's final report, once written (the same words the report and
    /// the exit status of `start` give).
    pub outcome: Option<String>,
    /// Why the run failed and what continues it, when its phase is `failed`.
    pub failure: Option<Failure>,
    pub spend: Spend,
    /// Published pull requests: packet and where its request is.
    pub prs: Vec<(String, String)>,
    /// The latest concurrency change of each model profile.
    pub limits: Vec<String>,
    /// Each subtask's latest state, one line each.
    pub subtasks: Vec<String>,
    /// Which worker `[routing]` gave each packet and why, then each escalation after a
    /// rejected fix round, one line each.
    pub routing: Vec<String>,
    pub questions: Vec<OpenQuestion>,
    /// The model calls the run waits for now, of every role (empty when no process drives
    /// the run).
    pub model_calls: Vec<crate::orchestrator::calls::OpenCall>,
}

/// A note on how packets were scheduled or what they changed.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Note {
    /// Packets that share files ran side by side, and why that was allowed.
    Parallel { note: String },
    /// A packet changed lines outside the symbols it declared.
    Finding {
        packet: String,
        file: String,
        lines: String,
        declared: Vec<String>,
    },
}

/// One run's status with what surrounds it.
#[derive(Debug, Clone, Serialize)]
pub struct RunStatus {
    pub run: RunRecord,
    pub packets: Vec<PacketRecord>,
    pub agents: Vec<AgentUsage>,
    pub notes: Vec<Note>,
    /// Questions the run's agents wait on (in a `start` run they are its `start` lines').
    pub questions: Vec<OpenQuestion>,
    /// Tokens and cost of the run's model calls (a `start` run's: every role's, as `start`
    /// gives them).
    pub spend: Spend,
    /// Why the run failed or was interrupted and the command that continues it; `None` while
    /// it runs or once it completed.
    pub failure: Option<Failure>,
    /// Present when the run belongs to a `start` run.
    pub start: Option<StartStatus>,
    /// `start` runs still clarifying or planning.
    pub planning: Vec<PlanningRun>,
    pub other_runs: Vec<RunRecord>,
    /// Where packets that ran on an executor's hosts ran last: packet, executor, host.
    pub hosts: Vec<PacketHost>,
    /// Milliseconds per pipeline phase summed over the run's packets (each packet's own are in
    /// its record's `timings`).
    pub phase_totals: orchestra_core::store::PhaseDurations,
    /// Where each packet's pull request stood at `land`'s last look (empty when the run was
    /// never landed).
    pub landing: Vec<crate::land::PrLanding>,
    /// The candidates of the run's best-of-N packets: what each came to and why the winner
    /// won (empty when no packet has more than one).
    pub candidates: Vec<PacketCandidates>,
}

/// Where a packet ran, when an executor put it on another machine.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PacketHost {
    pub packet: String,
    pub executor: String,
    pub host: String,
}

/// A `start` run that is still clarifying or planning, with what surrounds it.
#[derive(Debug, Clone, Serialize)]
pub struct PlanningStatus {
    pub planning: PlanningRun,
    pub start: Option<StartStatus>,
    pub other_runs: Vec<RunRecord>,
}

/// What the repository holds when a status is asked for.
#[derive(Debug, Clone)]
pub enum Overview {
    /// No run of any kind exists yet.
    NoRun,
    /// The chosen run is a `start` run with no packets yet (asked for by id, or newer than
    /// every run with packets).
    Planning(Box<PlanningStatus>),
    /// The chosen run.
    Run(Box<RunStatus>),
}

/// Returns the status of `run` (default: the newest run), or what is planning when no run
/// exists.
///
/// `prices` prices a model by name (as `[prices]` keys them); an unknown run is
/// [`StoreError::UnknownRun`].
pub fn overview(
    common_dir: &Path,
    run: Option<&str>,
    prices: &dyn Fn(&str) -> Option<Price>,
) -> Result<Overview, StatusError> {
    let store = Store::open_existing(common_dir)?;
    let runs = match &store {
        Some(store) => store.runs()?,
        None => Vec::new(),
    };
    let planning = planning_runs(common_dir, &runs);
    let chosen = match run {
        Some(id) => match runs.iter().find(|r| r.id == id) {
            Some(r) => Some(r.clone()),
            None => {
                let Some(p) = planning.iter().find(|p| p.id == id) else {
                    return Err(StoreError::UnknownRun { id: id.to_string() }.into());
                };
                return Ok(planning_overview(common_dir, p.clone(), &runs, prices));
            }
        },
        None => match newest(&runs, &planning) {
            Some(Newest::Planning(p)) => {
                return Ok(planning_overview(common_dir, p.clone(), &runs, prices));
            }
            Some(Newest::Run(r)) => Some(r.clone()),
            None => None,
        },
    };
    match (chosen, store) {
        (Some(run), Some(store)) => Ok(Overview::Run(Box::new(run_status(
            common_dir, &store, &runs, run, prices,
        )?))),
        _ => Ok(Overview::NoRun),
    }
}

fn planning_overview(
    common_dir: &Path,
    planning: PlanningRun,
    runs: &[RunRecord],
    prices: &dyn Fn(&str) -> Option<Price>,
) -> Overview {
    Overview::Planning(Box::new(PlanningStatus {
        start: start_status(common_dir, &planning.id, prices),
        other_runs: runs.to_vec(),
        planning,
    }))
}

/// Returns the status of the run `id`, which must exist.
pub fn of_run(
    common_dir: &Path,
    id: &str,
    prices: &dyn Fn(&str) -> Option<Price>,
) -> Result<RunStatus, StatusError> {
    let store = Store::open(common_dir)?;
    let runs = store.runs()?;
    let run = store.require_run(id)?;
    run_status(common_dir, &store, &runs, run, prices)
}

fn run_status(
    common_dir: &Path,
    store: &Store,
    runs: &[RunRecord],
    run: RunRecord,
    prices: &dyn Fn(&str) -> Option<Price>,
) -> Result<RunStatus, StatusError> {
    let mut timings = orchestra_core::engine::timings::packet_timings(&store.events(&run.id, 0)?);
    let packets: Vec<PacketRecord> = store
        .packets(&run.id)?
        .into_iter()
        .map(|p| after_gc(common_dir, p))
        .map(|mut p| {
            p.timings = timings.remove(&p.id).unwrap_or_default();
            p
        })
        .collect();
    let phase_totals = orchestra_core::store::phase_totals(packets.iter().map(|p| &p.timings));
    let agents = store
        .agent_usage(&run.id)?
        .into_iter()
        .map(|a| cli_priced(a, prices))
        .collect();
    let notes = notes(store, &run.id)?;
    let questions = engine_questions(store, &run.id)?;
    let start = start_status(common_dir, &run.id, prices);
    let spend = match &start {
        Some(s) => s.spend.clone(),
        None => run_spend(common_dir, &run.id, prices),
    };
    let planning = planning_runs(common_dir, runs);
    let other_runs = runs.iter().filter(|r| r.id != run.id).cloned().collect();
    let hosts = hosts(store, &run.id)?;
    let candidates = candidates::candidates(store, &run.id)?;
    let landing = crate::land::states(common_dir, store, &run.id)?;
    let mut run = run;
    run.state = engine_state(common_dir, &run).0;
    let failure = run_failure(store, &run.id, run.state, &packets)?;
    Ok(RunStatus {
        candidates,
        phase_totals,
        spend,
        failure,
        hosts,
        landing,
        run,
        packets,
        agents,
        notes,
        questions,
        start,
        planning,
        other_runs,
    })
}

impl RunStatus {
    /// Returns the questions a person is asked in this run, whichever kind it is: a `start`
    /// run's from its workflow journal, another run's from the engine's journal.
    pub fn waiting_questions(&self) -> &[OpenQuestion] {
        match &self.start {
            Some(start) => &start.questions,
            None => &self.questions,
        }
    }
}

/// Returns an agent CLI's usage (its role `<role>/<cli>`) priced by `[prices]` under the model
/// it reported, as the one accounting prices it: the cost the CLI journaled is its own price
/// list's, which a local model behind it does not have. Our agents' rows are priced already.
fn cli_priced(mut a: AgentUsage, prices: &dyn Fn(&str) -> Option<Price>) -> AgentUsage {
    if a.role.contains('/') {
        let usage = orchestra_core::llm::Usage {
            input_tokens: a.input_tokens,
            output_tokens: a.output_tokens,
        };
        a.cost_nanos = a
            .model
            .as_deref()
            .and_then(|m| prices(orchestra_core::config::price_key(m)))
            .map(|p| (p.cost(usage) * 1e9).round().max(0.0) as u64);
    }
    a
}

/// Returns `p` with its reason saying where its work is now once `gc` removed its worktree:
/// a failed packet's reason said its work "stays in" that worktree, which no longer exists, so
/// the reason names the branch kept and the backup ref of its unsaved files instead, or says
/// that nothing was left to keep.
fn after_gc(common_dir: &Path, mut p: PacketRecord) -> PacketRecord {
    let stays = format!("its work stays in {}", p.worktree);
    let Some(reason) = p
        .reason
        .as_deref()
        .filter(|r| p.removed && r.contains(&stays))
    else {
        return p;
    };
    let branch_kept = orchestra_git::git::Git::new(common_dir)
        .resolve(&format!("refs/heads/{}", p.branch))
        .ok()
        .flatten()
        .is_some();
    let mut places = Vec::new();
    if branch_kept {
        places.push(format!("its branch {} is kept", p.branch));
    }
    if let Some(backup) = &p.backup {
        places.push(format!("its uncommitted files are saved in {backup}"));
    }
    let now = if places.is_empty() {
        "nothing of it was left to keep".to_string()
    } else {
        places.join(" and ")
    };
    let reason = reason.replace(
        &stays,
        &format!("its worktree {} was removed by gc; {now}", p.worktree),
    );
    p.reason = Some(reason);
    p
}

/// Returns the host each packet was last dispatched to.
fn hosts(store: &Store, run: &str) -> Result<Vec<PacketHost>, StatusError> {
    let mut out: Vec<PacketHost> = Vec::new();
    for e in store.events_of_kind(run, orchestra_core::store::EventKind::PacketDispatched)? {
        if let Event::PacketDispatched {
            packet,
            executor,
            host,
            ..
        } = e.event
        {
            out.retain(|h| h.packet != packet);
            out.push(PacketHost {
                packet,
                executor,
                host,
            });
        }
    }
    Ok(out)
}

/// Returns why packets sharing files ran side by side, and edits found outside declared
/// symbols.
fn notes(store: &Store, run: &str) -> Result<Vec<Note>, StatusError> {
    let mut notes = Vec::new();
    for kind in [
        orchestra_core::store::EventKind::PacketsShareFiles,
        orchestra_core::store::EventKind::ScopeFinding,
    ] {
        for e in store.events_of_kind(run, kind)? {
            match e.event {
                Event::PacketsShareFiles { note, .. } => notes.push(Note::Parallel { note }),
                Event::ScopeFinding {
                    packet,
                    file,
                    lines,
                    declared,
                } => notes.push(Note::Finding {
                    packet,
                    file,
                    lines,
                    declared,
                }),
                _ => {}
            }
        }
    }
    Ok(notes)
}

/// The newest run of a repository, of either kind.
enum Newest<'a> {
    /// A run with packets (made by `run`, `agent`, or a `start` run that reached execution).
    Run(&'a RunRecord),
    /// A `start` run still clarifying or planning, with no packets yet.
    Planning(&'a PlanningRun),
}

/// Returns the newest of `runs` and `planning`: the one `status` shows without a run named.
///
/// A planning `start` run counts only when it started after the newest run with packets.
fn newest<'a>(runs: &'a [RunRecord], planning: &'a [PlanningRun]) -> Option<Newest<'a>> {
    let newest = runs.first();
    let newer_plan = planning
        .iter()
        .filter(|p| newest.is_none_or(|r| p.started_ms > r.created_ms))
        .max_by_key(|p| p.started_ms);
    match newer_plan {
        Some(p) => Some(Newest::Planning(p)),
        None => newest.map(Newest::Run),
    }
}

/// Returns `run` when given, else the newest run of the repository, exactly as `status`
/// shows it: every command whose run is optional (`retry`, `resume`, `cancel`, `pause`,
/// `merge`, `diff`, `pr`) acts on that run, never on an older one that fits it better.
///
/// A `start` run still planning counts, by name or as the newest. An unknown `run` is
/// [`StoreError::UnknownRun`]; no run at all is [`StatusError::NoRun`].
pub fn pick_run(common_dir: &Path, run: Option<&str>) -> Result<String, StatusError> {
    let store = Store::open_existing(common_dir)?;
    let runs = match &store {
        Some(store) => store.runs()?,
        None => Vec::new(),
    };
    let planning = planning_runs(common_dir, &runs);
    match run {
        Some(id) if runs.iter().any(|r| r.id == id) || start_state(common_dir, id).is_some() => {
            Ok(id.to_string())
        }
        Some(id) => Err(StoreError::UnknownRun { id: id.to_string() }.into()),
        None => match newest(&runs, &planning) {
            Some(Newest::Run(r)) => Ok(r.id.clone()),
            Some(Newest::Planning(p)) => Ok(p.id.clone()),
            None => Err(StatusError::NoRun),
        },
    }
}

/// Returns the phase and objective of `run` if it is a `start` run.
pub fn start_state(common_dir: &Path, run: &str) -> Option<StartState> {
    let ids = StartJournal::runs(common_dir).ok()?;
    if !ids.iter().any(|i| i == run) {
        return None;
    }
    let j = StartJournal::open(common_dir, run).ok()?;
    let entries = j.entries().ok()?;
    let first = entries.first()?;
    let WorkflowEvent::Started { objective, .. } = &first.event else {
        return None;
    };
    Some(StartState {
        phase: j.workflow().ok()?.state(),
        objective: objective.clone(),
        started_ms: first.ts_ms,
    })
}

/// Returns the `start` runs that have no engine run among `engine_runs` yet and are not
/// completed (cancelled ones included), with their phase and objective.
pub fn planning_runs(common_dir: &Path, engine_runs: &[RunRecord]) -> Vec<PlanningRun> {
    StartJournal::runs(common_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| !engine_runs.iter().any(|e| &e.id == r))
        .filter_map(|id| {
            start_state(common_dir, &id).map(|s| PlanningRun {
                state: start_label(common_dir, &id, s.phase),
                id,
                phase: s.phase,
                objective: s.objective,
                started_ms: s.started_ms,
            })
        })
        // A cancelled run without packets stays listed; only a completed one has nothing left
        // to show here.
        .filter(|p| p.phase != WorkflowState::Completed)
        .collect()
}

/// Returns the `start` run whose documenting or testing phase is the engine run `run`.
fn phase_parent(common_dir: &Path, run: &str) -> Option<String> {
    StartJournal::runs(common_dir)
        .ok()?
        .into_iter()
        .filter(|id| id != run)
        .find(|id| {
            StartJournal::open(common_dir, id)
                .and_then(|j| j.entries())
                .is_ok_and(|entries| {
                    entries.iter().any(
                        |e| matches!(&e.event, WorkflowEvent::PhaseRun { run: r, .. } if r == run),
                    )
                })
        })
}

/// Returns what a `start` run adds to the status of `run`: its phase, tokens and cost spent,
/// pull requests, limits, subtasks and the questions agents wait on. `None` when `run` is
/// neither a `start` run nor one of its phases.
pub fn start_status(
    common_dir: &Path,
    run: &str,
    prices: &dyn Fn(&str) -> Option<Price>,
) -> Option<StartStatus> {
    // A documenting or testing packet runs as its own engine run; its lines are its `start`
    // run's.
    let parent = phase_parent(common_dir, run);
    let run = parent.as_deref().unwrap_or(run);
    let phase = start_state(common_dir, run)?.phase;
    let mut status = StartStatus {
        run: run.to_string(),
        parent_of_phase: parent.is_some(),
        state: start_label(common_dir, run, phase),
        phase,
        outcome: report_outcome(common_dir, run),
        failure: None,
        spend: Spend::default(),
        prs: Vec::new(),
        limits: Vec::new(),
        subtasks: Vec::new(),
        routing: Vec::new(),
        questions: Vec::new(),
        model_calls: Vec::new(),
    };
    let Ok(j) = StartJournal::open(common_dir, run) else {
        return Some(status);
    };
    status.spend = run_spend(common_dir, run, prices);
    let entries = j.entries().unwrap_or_default();
    status.failure = start_failure(run, phase, &entries);
    let published = entries.iter().rev().find_map(|e| match &e.event {
        WorkflowEvent::Published { prs } => Some(prs),
        _ => None,
    });
    status.prs = published
        .into_iter()
        .flatten()
        .map(|pr| (pr.packet.clone(), pr.location.clone()))
        .collect();
    let mut limits: Vec<(&str, &str)> = Vec::new();
    let mut subtasks: Vec<(&str, String)> = Vec::new();
    for e in &entries {
        match &e.event {
            WorkflowEvent::ConcurrencyChanged { profile, text, .. } => {
                limits.retain(|(p, _)| p != profile);
                limits.push((profile, text));
            }
            WorkflowEvent::SubtaskSpawned { parent, child, .. } => {
                subtasks.push((child, format!("{child} of {parent}: running")));
            }
            WorkflowEvent::SubtaskFinished {
                parent,
                child,
                state,
                ..
            } => {
                subtasks.retain(|(c, _)| c != child);
                subtasks.push((child, format!("{child} of {parent}: {state}")));
            }
            WorkflowEvent::Routed { text, .. } | WorkflowEvent::Escalated { text, .. } => {
                status.routing.push(text.clone());
            }
            _ => {}
        }
    }
    if start_driven(common_dir, run) {
        status.model_calls = crate::orchestrator::calls::open_calls(&entries);
    }
    status.limits = limits.iter().map(|(_, t)| t.to_string()).collect();
    status.subtasks = subtasks.into_iter().map(|(_, t)| t).collect();
    status.questions = start_questions(&entries);
    Some(status)
}

/// Returns the questions the engine's agents (a `run`, `agent` or `resume`) wait on in `run`,
/// from the run's journal, in the order their packets asked.
fn engine_questions(store: &Store, run: &str) -> Result<Vec<OpenQuestion>, StatusError> {
    Ok(store
        .open_questions(run)?
        .into_iter()
        .map(|(packet, question)| OpenQuestion { packet, question })
        .collect())
}

/// Returns the questions a `start` run's agents wait on, from its workflow journal `entries`:
/// each one asked with no answer to its packet after it.
fn start_questions(entries: &[crate::orchestrator::start_journal::Entry]) -> Vec<OpenQuestion> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if let WorkflowEvent::Asked { packet, question } = &e.event {
            let answered = entries[i..].iter().any(
                |later| matches!(&later.event, WorkflowEvent::Answered { packet: p, .. } if p == packet),
            );
            if !answered {
                out.push(OpenQuestion {
                    packet: packet.clone(),
                    question: question.clone(),
                });
            }
        }
    }
    out
}

/// Returns true if and only if a live process drives the `start` run `run`: its driver lock
/// or its engine run's lock is held (the kernel drops both when the holder dies, kill -9
/// included).
pub fn start_driven(common_dir: &Path, run: &str) -> bool {
    let dir = orchestra_sys::exec::RunDir::new(common_dir, run);
    orchestra_sys::exec::RunLock::is_held(&dir.driver_lock())
        || orchestra_sys::exec::RunLock::is_held(dir.path())
}

/// Returns the state of the engine run `run` as users see it, and whether a process drives it
/// now (holds its lock, and the process that took charge of it is alive): a run the store says
/// is running that no process drives was killed, and reads as interrupted, which `resume`
/// continues.
fn engine_state(common_dir: &Path, run: &RunRecord) -> (RunState, bool) {
    let driven = orchestra_sys::exec::RunLock::is_held(
        orchestra_sys::exec::RunDir::new(common_dir, &run.id).path(),
    ) && run.pid.is_none_or(orchestra_sys::exec::process_exists);
    match run.state {
        RunState::Running if !driven => (RunState::Interrupted, false),
        other => (other, driven),
    }
}

/// Returns true if and only if `phase` is one a process works in, so that a run in it with no
/// process driving it was interrupted (killed, or its machine went down).
fn needs_driver(phase: WorkflowState) -> bool {
    !phase.is_final()
        && !matches!(
            phase,
            WorkflowState::Paused | WorkflowState::Failed | WorkflowState::AwaitingApproval
        )
}

/// Returns the state of the `start` run `run` in `phase` as users see it: the phase itself,
/// or "interrupted while <phase>" when the phase needs a process and none drives the run.
pub fn start_label(common_dir: &Path, run: &str, phase: WorkflowState) -> String {
    if needs_driver(phase) && !start_driven(common_dir, run) {
        format!("interrupted while {phase}")
    } else {
        phase.to_string()
    }
}

/// Returns the headline of the run's saved report, if it has one.
fn report_outcome(common_dir: &Path, run: &str) -> Option<String> {
    let path = orchestra_sys::exec::RunDir::new(common_dir, run).report_json();
    let text = fs_err::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("outcome")?.as_str().map(str::to_string)
}

/// Which command made a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `run` or `agent`: an engine run of a plan's packets.
    Run,
    /// `start`: a workflow from an objective, which may own an engine run of the same id.
    Start,
}

/// One run of the repository as `status --all` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunListing {
    pub id: String,
    pub kind: RunKind,
    pub objective: String,
    /// Its state as users see it, e.g. "completed" or "interrupted while clarifying".
    pub state: String,
    /// When it began, in milliseconds since the Unix epoch.
    pub started_ms: i64,
    /// True when a live process drives it now (holds its lock).
    pub driven: bool,
    /// The command that moves it on, or `None` when it is driven or done.
    pub next: Option<String>,
}

/// Returns every run of the repository, engine runs and `start` runs, newest first.
///
/// A run whose phase needs a process that no process drives (its lock is free) is listed as
/// interrupted, with `resume` as what to do next.
pub fn all_runs(common_dir: &Path) -> Result<Vec<RunListing>, StatusError> {
    let store = Store::open_existing(common_dir)?;
    let runs = match &store {
        Some(store) => store.runs()?,
        None => Vec::new(),
    };
    let starts = StartJournal::runs(common_dir).unwrap_or_default();
    let mut out = Vec::new();
    for id in &starts {
        let Some(s) = start_state(common_dir, id) else {
            continue;
        };
        let driven = start_driven(common_dir, id);
        let state = start_label(common_dir, id, s.phase);
        let resumable = !s.phase.is_final() && !driven;
        out.push(RunListing {
            id: id.clone(),
            kind: RunKind::Start,
            objective: s.objective,
            state,
            started_ms: s.started_ms,
            driven,
            next: resumable.then(|| format!("git orchestra resume {id}")),
        });
    }
    for r in runs.iter().filter(|r| !starts.contains(&r.id)) {
        let (state, driven) = engine_state(common_dir, r);
        let next = match state {
            _ if driven => None,
            RunState::Created | RunState::Running | RunState::Interrupted => {
                Some(format!("git orchestra resume {}", r.id))
            }
            RunState::Failed => Some(format!("git orchestra retry {}", r.id)),
            RunState::Completed | RunState::Cancelled => None,
        };
        out.push(RunListing {
            id: r.id.clone(),
            kind: RunKind::Run,
            objective: r.objective.clone(),
            state: state.as_str().to_string(),
            started_ms: r.created_ms,
            driven,
            next,
        });
    }
    out.sort_by_key(|r| std::cmp::Reverse(r.started_ms));
    Ok(out)
}

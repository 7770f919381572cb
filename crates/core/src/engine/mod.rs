//! The packet engine: turns a validated plan into a run, then drives its packets — each in its
//! own worktree and branch — through worker, commit, scope check and validation, in parallel
//! where the plan allows, journaling every step so a killed run can be resumed.

mod cancel;
pub mod gc;
pub mod integration;
mod journal;
mod packet;
mod park;
pub mod remote;
mod retry;
pub mod scheduler;
mod slots;
mod symbol_scope;
pub mod timings;
mod watch;
mod watch_fs;

pub(crate) use park::{RestoreError, restore as restore_worktree, wait_for_parks};
pub(crate) use watch::{outside_changes, outside_of_run, outside_reason};
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

pub use cancel::cancel;
pub use integration::{Integrated, Integrator};
pub use journal::Journal;
pub use remote::Executor;
pub use retry::{reopen, reopen_to_integrate};
pub use worker::{DEFAULT_FIX_ROUNDS, PacketReview, Worker, WorkerJob, WorkerReport};

use crate::plan::Plan;
use crate::store::{
    Event, NewPacket, NewRun, PacketState, RunOutcome, RunRecord, RunState, Store, StoreError,
};
use orchestra_git::git::{RepoError, RepoInfo};
use orchestra_sys::exec::{LockError, RunDir, RunLock, kill_group, process};
use orchestra_sys::names;

/// Default cap on packets running at once when neither plan nor flags say.
pub const DEFAULT_MAX_PARALLEL: usize = 4;

/// Why the engine could not prepare or drive a run (packet failures are events, not errors).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error(
        "the plan stored with run `{run}` no longer parses ({message}); start a new run from the plan file"
    )]
    StoredPlan { run: String, message: String },
    #[error(
        "run `{run}` has no worker command; pass --worker-cmd '<command>' (it runs in each packet's worktree)"
    )]
    MissingWorker { run: String },
    #[error(
        "run `{run}` is {state}; nothing to resume (start a new run, or `git orchestra gc` to clean up)"
    )]
    NotResumable { run: String, state: &'static str },
    #[error("no unfinished run in this repository; `git orchestra status` lists the runs")]
    NothingToResume,
    #[error(
        "run `{run}` is {state}; only a completed or failed run can be retried (`git orchestra resume {run}` continues an unfinished one)"
    )]
    NotRetryable { run: String, state: &'static str },
    #[error("run `{run}` has no packet `{packet}`; its packets: {}", known.join(", "))]
    NoSuchPacket {
        run: String,
        packet: String,
        known: Vec<String>,
    },
    #[error("packet `{packet}` {state}; only failed or skipped packets are retried")]
    PacketNotRetryable { packet: String, state: &'static str },
    #[error("run `{run}` has no failed or skipped packet to retry")]
    NothingToRetry { run: String },
    #[error(
        "run `{run}` is not finished; `git orchestra cancel {run}` stops it (saving its work) first"
    )]
    NotFinished { run: String },
    #[error("{0}")]
    Worktree(String),
    /// The executor's configuration is incomplete or wrong.
    #[error("{0}")]
    Executor(String),
    /// A packet asks for candidates on an executor that runs packets elsewhere.
    #[error(
        "packet `{packet}` asks for {candidates} candidates, but candidates run only on the local executor, not {executor}; run it with --executor local (or `[executor] kind = \"local\"`), or with one candidate (`attempts = 1`, without --best-of or `[start] best_of`)"
    )]
    CandidatesElsewhere {
        packet: String,
        candidates: u32,
        executor: String,
    },
    #[error("the engine's packet thread panicked")]
    Panicked,
}

/// Choices for a new run, beyond the plan itself.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The command each packet's worker runs (`sh -c`), in the packet's worktree.
    pub worker_cmd: Option<String>,
    /// Overrides the plan's `max_parallel`.
    pub max_parallel: Option<usize>,
    /// Longest a worker or validation command may run.
    pub timeout: Duration,
    /// Where packet worktrees go; default beside the repository (see [`names::default_worktree_root`]).
    pub worktree_root: Option<PathBuf>,
    /// What made the run; it keeps the runs of different kinds apart (see [`RunKind`]).
    pub kind: RunKind,
}

/// What made a run. A one-packet `git orchestra agent` task gets run ids of its own, so it
/// never shares a run with a plan or a `start` objective of the same words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunKind {
    /// A plan: `git orchestra run`, or the packets of a `start` run.
    #[default]
    Plan,
    /// A single agent task: `git orchestra agent`.
    Agent,
}

/// A run ready to execute.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub run: RunRecord,
    /// False when the same plan on the same base already had a run, which is resumed instead.
    pub created: bool,
}

/// Creates the run for `plan` on its base, or finds the existing one with the same id.
///
/// The caller has validated the plan. Nothing in the repository changes here besides the run
/// store; worktrees and branches appear only when packets start.
pub fn prepare(
    repo: &RepoInfo,
    plan: &Plan,
    plan_toml: &str,
    plan_path: &str,
    opts: &RunOptions,
) -> Result<Prepared, EngineError> {
    let base = repo.resolve_base(plan.base.as_deref())?;
    let run_id = match opts.kind {
        RunKind::Plan => names::run_id(&plan.objective, &base),
        RunKind::Agent => names::agent_run_id(&plan.objective, &base),
    };
    let root = opts
        .worktree_root
        .clone()
        .unwrap_or_else(|| names::default_worktree_root(&repo.toplevel));
    let packets = plan
        .packets
        .iter()
        .map(|p| NewPacket {
            id: p.id.clone(),
            title: p.title.clone(),
            role: p.role.clone(),
            branch: names::packet_branch(&run_id, &p.id),
            worktree: names::packet_worktree(&root, &run_id, &p.id)
                .to_string_lossy()
                .into_owned(),
        })
        .collect();
    let new = NewRun {
        id: run_id.clone(),
        objective: plan.objective.clone(),
        base,
        plan_toml: plan_toml.to_string(),
        plan_path: plan_path.to_string(),
        worker_cmd: opts.worker_cmd.clone(),
        max_parallel: opts
            .max_parallel
            .or(plan.max_parallel)
            .unwrap_or(DEFAULT_MAX_PARALLEL)
            .max(1),
        timeout_secs: opts.timeout.as_secs().max(1),
        worktree_root: root.to_string_lossy().into_owned(),
        packets,
    };
    let mut store = Store::open(&repo.common_dir)?;
    let created = store.create_run(&new)?;
    let run = store.require_run(&run_id)?;
    Ok(Prepared { run, created })
}

/// Returns `Ok` if and only if the run `run` is not finished, so that `resume` continues it.
///
/// A finished run is [`EngineError::NotResumable`] naming its state; an unknown one is
/// [`StoreError::UnknownRun`](crate::store::StoreError::UnknownRun).
pub fn check_resumable(repo: &RepoInfo, run: &str) -> Result<(), EngineError> {
    let record = Store::open(&repo.common_dir)?.require_run(run)?;
    if record.state.is_finished() {
        return Err(EngineError::NotResumable {
            run: record.id,
            state: record.state.as_str(),
        });
    }
    Ok(())
}

/// How the engine is steered while it executes.
pub struct Control<'a> {
    /// Polled; when true, running commands are stopped and the run is left resumable.
    pub stop: &'a AtomicBool,
    /// Called after each event is journaled (from several threads).
    pub on_event: &'a (dyn Fn(&str, &Event) + Sync),
    /// Shell command run once in each newly created worktree.
    pub setup: Option<String>,
    /// `Some(directories every packet gets)`: new worktrees are sparse checkouts of their
    /// packet's directories (see [`orchestra_git::git::cone`]); `None`: full checkouts.
    pub sparse: Option<Vec<String>>,
    /// How the worker command, setup and validation commands are confined (our agents'
    /// validation commands run in the agents' sandbox, see [`Worker::confine`]).
    pub sandboxes: orchestra_sys::exec::process::Sandboxes,
    /// Fault injection for crash tests: the process kills itself with SIGKILL right after
    /// journaling this many events.
    pub crash_after_events: Option<u64>,
    /// Reviews each validated packet; `None` ends the pipeline at validation.
    pub review: Option<&'a PacketReview<'a>>,
    /// How many times a packet whose scope check or validation fails goes back to its worker
    /// with the failure as required fixes before it fails.
    pub fix_rounds: u32,
    /// How many more times a worker runs after a failure that may pass on another try, and
    /// the first wait before it (doubling after each).
    pub retries: (u32, Duration),
    /// Where packets' work runs: `None` in worktrees beside the repository, else on the
    /// executor's hosts (see [`remote`]).
    pub executor: Option<&'a dyn Executor>,
    /// Integrates the run once its packets are final, when integration was asked of it
    /// (`run --merge`); without one such a run stays interrupted until a resume that has one.
    pub integrator: Option<&'a dyn Integrator>,
    /// The `[best_of] arms`: a worker command's candidate whose arm is `strategy:<text>` gets
    /// `ORCHESTRA_STRATEGY=<text>` (our agents read their arms from their own configuration).
    pub arms: Vec<String>,
    /// The project's test command (`[eval] test`): every candidate of a best-of-N packet that
    /// passed its validation and the deterministic checks runs it before the choice.
    pub tests: Option<String>,
    /// The tester of best-of-N packets (`[best_of] tester`), when one writes tests for them
    /// before their candidates work.
    pub tester: Option<Tester>,
    /// How many parked worktrees the pool keeps (`[worktree] recycle`) for a run its caller
    /// integrates itself once the engine returns (`start` with merging): its succeeded
    /// packets' worktrees are then parked at once, as in a run with an integration request
    /// (see `engine/park.rs`); `None` (or 0) leaves that to the run's integration request.
    pub park_early: Option<usize>,
}

/// Who writes the tests a best-of-N packet's candidates must pass (`[best_of] tester`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tester {
    /// The command that plays the tester (`[best_of] tester_cmd`) in a run whose packets a
    /// worker command works; `None` there runs the worker command itself, and our agents'
    /// runs give the work to the `tester` role.
    pub command: Option<String>,
}

impl Tester {
    /// Returns the tester `best_of` asks for, if it asks for one.
    pub fn from_config(best_of: &crate::config::BestOfConfig) -> Option<Tester> {
        best_of.tests_by_tester().then(|| Tester {
            command: best_of.tester_cmd.clone().filter(|c| !c.trim().is_empty()),
        })
    }
}

/// How an execution ended.
#[derive(Debug, Clone)]
pub struct Summary {
    pub run: String,
    pub state: RunState,
    pub succeeded: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// Drives the run to the end (or until stopped): starts ready packets, records results, skips
/// dependents of failures, and journals the outcome. Safe to call again after a crash.
pub fn execute(repo: &RepoInfo, run_id: &str, ctl: &Control<'_>) -> Result<Summary, EngineError> {
    execute_with(repo, run_id, ctl, None)
}

/// Like [`execute`], with an in-process `worker` for runs that have no worker command.
pub fn execute_with(
    repo: &RepoInfo,
    run_id: &str,
    ctl: &Control<'_>,
    worker: Option<&dyn Worker>,
) -> Result<Summary, EngineError> {
    // Every packet's commit and checks use them; built while the run starts.
    std::thread::spawn(crate::gate::prepare_secret_patterns);
    let dir = RunDir::new(&repo.common_dir, run_id);
    let _lock = RunLock::acquire(dir.path(), run_id)?;
    let store = Store::open(&repo.common_dir)?;
    let run = store.require_run(run_id)?;
    if run.state.is_finished() {
        return Err(EngineError::NotResumable {
            run: run.id,
            state: run.state.as_str(),
        });
    }
    let worker_cmd = run.worker_cmd.clone();
    if worker_cmd.is_none() && worker.is_none() {
        return Err(EngineError::MissingWorker {
            run: run.id.clone(),
        });
    }
    let plan = run.plan().map_err(|e| EngineError::StoredPlan {
        run: run.id.clone(),
        message: e.to_string(),
    })?;
    watch::check_stored_plan(&run.id, &dir, &run.plan_toml)?;
    if let Some(executor) = ctl.executor {
        remote::check_candidates(&plan, executor.kind())?;
    }
    recover(repo, run_id, &store.packets(run_id)?)?;
    if ctl.sparse.is_some() {
        orchestra_git::git::enable_worktree_config(&repo.git())
            .map_err(|e| EngineError::Worktree(format!("cannot prepare sparse worktrees: {e}")))?;
    }
    // Declared symbols are looked up at the run's base; any that cannot be (the plan was
    // validated, so only a vanished object would do that) leave their files at file level.
    let (spans, unresolved) = crate::plan::resolve_symbols(&plan, &repo.toplevel, &run.base);
    for issue in &unresolved {
        tracing::warn!(%issue, "declared symbol scheduled at file level");
    }
    let overlaps = plan.overlaps_with(&spans);
    let graph = graph_from(&plan, &overlaps.conflicts);
    let journal = Journal::new(store, run_id, ctl.on_event, ctl.crash_after_events);
    let resumed = run.state != RunState::Created;
    journal.record(Event::RunStarted {
        pid: std::process::id(),
        resumed,
    })?;
    if !resumed {
        journal_shared_files(&journal, &plan, &overlaps.shared)?;
    }

    // Unconfined, a worker could write the other packets' worktrees: watch the idle ones.
    let activity = watch::Activity::new(
        ctl.sandboxes.worker.is_none() || worker.is_some_and(|w| w.commits_itself()),
    );
    let records = journal.packets()?;
    let activity = activity.with_run_refs(&repo.common_dir, &run.id, &records);
    activity.watch_existing(&records);
    // Packets and their candidates draw their worker slots from one pool of the run's cap.
    let slots = slots::Slots::new(run.max_parallel);
    let park = park::EarlyPark::of_run(
        &journal,
        (run.max_parallel, ctl.park_early),
        std::path::Path::new(&run.worktree_root),
        ctl.executor.is_some(),
    )?;
    let ctx = packet::Context {
        repo,
        activity: &activity,
        slots: &slots,
        run: &run,
        plan: &plan,
        worker_cmd: worker_cmd.as_deref(),
        worker,
        run_dir: &dir,
        journal: &journal,
        stop: ctl.stop,
        setup: ctl.setup.as_deref(),
        sparse: ctl.sparse.as_deref(),
        sandboxes: &ctl.sandboxes,
        timeout: Duration::from_secs(run.timeout_secs),
        review: ctl.review,
        fix_rounds: ctl.fix_rounds,
        retries: ctl.retries.0,
        retry_delay: ctl.retries.1,
        executor: ctl.executor,
        dependencies: None,
        checks: Default::default(),
        arms: &ctl.arms,
        tests: ctl.tests.as_deref().filter(|t| !t.trim().is_empty()),
        tester: ctl.tester.as_ref(),
        park: park.as_ref(),
    };
    let read_before = journal.records_read();
    // The integration starts as soon as the last packet is done, while its worktree is still
    // being parked.
    let driven = drive(&ctx, &graph, || {
        // No pipeline starts any more: the kernel frees the ref watch while this integrates.
        activity.retire_ref_watch();
        // For developers (`ORCHESTRA_LOG=orchestra_core::engine=debug`): what scheduling
        // cost in packet records read, flat per packet however many packets the run has.
        tracing::debug!(
            packets = plan.packets.len(),
            records_read = journal.records_read() - read_before,
            "packet records read while scheduling"
        );
        integration::run_pending(repo, &journal, ctl, worker)
    });
    // However the run ends (integrated, failed, interrupted), the pool shrinks back to
    // `[worktree] recycle`.
    if let Some(park) = &park {
        park.trim(repo);
    }
    finish(&journal, run_id, driven??)
}

/// Kills what a previous process of `run_id` may have left running: the process group each
/// packet's last command was recorded in, only while that group still runs this run's packet
/// (a group id may since have been reused by an unrelated program).
pub(crate) fn kill_recorded_groups(run_id: &str, records: &[crate::store::PacketRecord]) {
    for p in records {
        if let Some(pgid) = p.pgid
            && process::group_belongs_to(pgid, run_id, &p.id)
        {
            kill_group(pgid, libc::SIGKILL);
        }
    }
    // A process killed between spawning a worker and journaling its group left it unrecorded:
    // what still carries the run's id and one of its worktrees in its environment goes too.
    // A packet is journaled as started before anything of it is spawned, so while every
    // packet is pending nothing can be running (and no process table is read).
    if records.iter().all(|p| p.state == PacketState::Pending) {
        return;
    }
    let mut roots: Vec<std::path::PathBuf> = records
        .iter()
        .filter_map(|p| std::path::Path::new(&p.worktree).parent().map(Into::into))
        .collect();
    roots.sort();
    roots.dedup();
    if !roots.is_empty() {
        for pgid in orchestra_sys::exec::groups_of_run(run_id, &roots) {
            kill_group(pgid, libc::SIGKILL);
        }
    }
}

/// Stops what a previous process of `run_id` left running and repairs what it left half done.
fn recover(
    repo: &RepoInfo,
    run_id: &str,
    records: &[crate::store::PacketRecord],
) -> Result<(), EngineError> {
    kill_recorded_groups(run_id, records);
    // Half-written worktree registrations from a crash block every worktree operation.
    orchestra_git::git::repair_registrations(repo)
        .map_err(|e| EngineError::Worktree(e.to_string()))?;
    Ok(())
}

/// Journals each pair of packets that share files without depending on each other, with the
/// sentence `plan check` prints.
fn journal_shared_files(
    journal: &Journal<'_>,
    plan: &Plan,
    shared: &[crate::plan::SharedFiles],
) -> Result<(), EngineError> {
    for shared in shared {
        let (a, b) = (shared.first, shared.second);
        if plan.has_dependency_path(&plan.packets[a].id, &plan.packets[b].id) {
            continue;
        }
        journal.record(Event::PacketsShareFiles {
            first: plan.packets[a].id.clone(),
            second: plan.packets[b].id.clone(),
            files: shared.files.clone(),
            note: plan.shared_note(shared),
        })?;
    }
    Ok(())
}

/// Runs the scheduling loop: skips dependents of failures, starts ready packets on threads
/// and waits for them, until nothing runs and nothing more may start (or a stop or a
/// journal failure ends it once the running packets return).
///
/// The packets' states are read from the journal once and then kept in memory: a packet's
/// state changes in its own thread, read back when the thread returns, or by a skip recorded
/// here; a packet's record is read again just before it starts. A wake-up with nothing new
/// (no packet returned, no slot freed) decides nothing, so the work per wake-up and per packet
/// does not grow with the number of packets.
///
/// Once the loop ends without a failure, `after` runs (the run's integration) while the
/// thread of the last packet still parks its worktree; the park ends before this returns.
fn drive<T>(
    ctx: &packet::Context<'_>,
    graph: &scheduler::Graph,
    after: impl FnOnce() -> T,
) -> Result<T, EngineError> {
    let (plan, journal) = (ctx.plan, ctx.journal);
    let mut states: Vec<PacketState> = journal.packets()?.iter().map(|r| r.state).collect();
    // Packets that may still run: when the last of them is done, nothing can take its
    // worktree from the pool any more, so it is reported done before its park.
    let unfinished = AtomicUsize::new(states.iter().filter(|s| !s.is_final()).count());
    let unfinished = &unfinished;
    std::thread::scope(|scope| -> Result<T, EngineError> {
        // The checks' file size limit (a `git config`) is read while the first packets start.
        if unfinished.load(Ordering::SeqCst) > 0 {
            scope.spawn(|| ctx.packet_checks());
        }
        let (done_tx, done_rx) = mpsc::channel::<usize>();
        let mut executing = vec![false; plan.packets.len()];
        let mut busy = 0;
        let mut failure: Option<EngineError> = None;
        // The free slots when the loop last decided, `None` when something changed since.
        let mut decided_with: Option<usize> = None;
        loop {
            let stopping = ctx.stop.load(std::sync::atomic::Ordering::SeqCst) || failure.is_some();
            let free = ctx.slots.free();
            if !stopping && decided_with != Some(free) {
                decided_with = Some(free);
                // Candidates may hold slots beyond their packets': only free ones start more.
                let decision = scheduler::decide(graph, &states, &executing, busy + free);
                for (i, blocker) in &decision.skip {
                    journal.record(Event::PacketSkipped {
                        packet: plan.packets[*i].id.clone(),
                        reason: format!(
                            "dependency `{}` did not succeed",
                            plan.packets[*blocker].id
                        ),
                    })?;
                    states[*i] = PacketState::Skipped;
                }
                if !decision.skip.is_empty() {
                    decided_with = None;
                    continue;
                }
                for i in decision.start {
                    // Read again: another process may have changed it (a cancel).
                    let Some(record) = journal.packet(&plan.packets[i].id)? else {
                        continue;
                    };
                    states[i] = record.state;
                    if !matches!(
                        record.state,
                        PacketState::Pending | PacketState::Running | PacketState::Interrupted
                    ) {
                        decided_with = None;
                        continue;
                    }
                    // A candidate may have taken the slot since: the packet waits its turn.
                    let Some(slot) = ctx.slots.try_take() else {
                        decided_with = None;
                        break;
                    };
                    executing[i] = true;
                    busy += 1;
                    let tx = done_tx.clone();
                    scope.spawn(move || {
                        let rest = packet::run(ctx, i, &record);
                        let last = unfinished.fetch_sub(1, Ordering::SeqCst) == 1;
                        // A worktree is parked before its packet is reported done, so that
                        // the dependents it lets start can take it; the last packet's is
                        // parked after, while the integration starts.
                        let rest = if last {
                            Some(rest)
                        } else {
                            rest.finish();
                            None
                        };
                        drop(slot);
                        let _ = tx.send(i);
                        if let Some(rest) = rest {
                            rest.finish();
                        }
                    });
                }
            }
            if busy == 0 {
                break;
            }
            match done_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(i) => {
                    executing[i] = false;
                    busy -= 1;
                    decided_with = None;
                    if let Some(record) = journal.packet(&plan.packets[i].id)? {
                        states[i] = record.state;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(EngineError::Panicked),
            }
            if let Some(err) = journal.take_error() {
                failure.get_or_insert(err.into());
            }
        }
        match failure {
            Some(err) => Err(err),
            None => Ok(after()),
        }
    })
}

/// Journals how the run ended — finished when every packet is final and nothing `held` it
/// (an integration asked of it and not done), interrupted otherwise — and returns its summary.
fn finish(
    journal: &Journal<'_>,
    run_id: &str,
    held: Option<String>,
) -> Result<Summary, EngineError> {
    let records = journal.packets()?;
    let count = |s: PacketState| records.iter().filter(|r| r.state == s).count();
    let (succeeded, failed, skipped) = (
        count(PacketState::Succeeded),
        count(PacketState::Failed),
        count(PacketState::Skipped),
    );
    let state = if records.iter().all(|r| r.state.is_final()) && held.is_none() {
        let outcome = if succeeded == records.len() {
            RunOutcome::Completed
        } else {
            RunOutcome::Failed
        };
        journal.record(Event::RunFinished { outcome })?;
        match outcome {
            RunOutcome::Completed => RunState::Completed,
            RunOutcome::Failed => RunState::Failed,
        }
    } else {
        journal.record(Event::RunInterrupted {
            reason: held.unwrap_or_else(|| "stopped by a signal".to_string()),
        })?;
        RunState::Interrupted
    };
    Ok(Summary {
        run: run_id.to_string(),
        state,
        succeeded,
        failed,
        skipped,
    })
}

/// Builds the scheduler's view of the plan: dependency indices and file-scope conflicts.
pub fn graph_of(plan: &Plan) -> scheduler::Graph {
    graph_from(plan, &plan.overlaps())
}

/// Builds the scheduler's view of the plan with symbol-aware conflicts: packets that share a
/// file but edit symbols apart in it (`spans`, at the run's base) may run together.
pub fn graph_with(plan: &Plan, spans: &crate::plan::SymbolSpans) -> scheduler::Graph {
    graph_from(plan, &plan.overlaps_with(spans).conflicts)
}

fn graph_from(plan: &Plan, conflicts: &[crate::plan::Overlap]) -> scheduler::Graph {
    // Compiles each scope once; pair-by-pair compilation dominated large plans.
    let pairs: std::collections::HashSet<(usize, usize)> = conflicts
        .iter()
        .map(|o| (o.first.min(o.second), o.first.max(o.second)))
        .collect();
    scheduler::Graph::new(plan.dependency_indices(), |a, b| {
        pairs.contains(&(a.min(b), a.max(b)))
    })
}

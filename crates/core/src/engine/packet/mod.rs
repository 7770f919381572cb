//! One packet's pipeline: worktree → setup → worker → commit → scope check → validation →
//! deterministic checks → review (when a reviewer is configured; a rejection sends the findings
//! back to the worker as required fixes, for a bounded number of rounds).
//!
//! Each step is journaled before it runs and the packet's `phase` says where it is, so a
//! resumed packet restarts from its worktree's state: a finished worker is not run again, a
//! commit already made is found, and validation simply runs again.
//!
//! This file drives the phases in their order; each phase is a file of its own, a method of
//! the [`Step`] value that carries what every phase reads (the run's [`Context`], the packet,
//! its record, start commit, worktree, log directory and environment). The remote coordinator
//! (`engine/remote/`) drives the same steps for a packet that runs elsewhere.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::journal::Journal;
use super::worker::{PacketReview, Worker};
use crate::plan::{Packet, Plan};
use crate::store::{Event, PacketRecord, Phase, RunRecord};
use orchestra_git::git::RepoInfo;
use orchestra_sys::exec::process::{self, Outcome, Spec};

pub(super) mod candidates;
mod checks;
mod commit;
mod compare;
mod fan_out;
mod fixes;
mod review;
mod scope;
mod setup;
mod started;
pub(super) mod tester;
mod validation;
mod work;
mod worktree;

pub(super) use started::{begin, dependency_summary, in_flight};
pub(super) use validation::Checked;

/// Everything a packet thread needs, shared read-only by all of them.
pub(super) struct Context<'a> {
    pub repo: &'a RepoInfo,
    pub run: &'a RunRecord,
    pub plan: &'a Plan,
    /// The external command, or `None` when `worker` does the work in-process.
    pub worker_cmd: Option<&'a str>,
    pub worker: Option<&'a dyn Worker>,
    pub run_dir: &'a orchestra_sys::exec::RunDir,
    pub journal: &'a Journal<'a>,
    pub stop: &'a AtomicBool,
    pub setup: Option<&'a str>,
    /// Directories every sparse worktree gets, when new worktrees are sparse.
    pub sparse: Option<&'a [String]>,
    /// How worker, setup and validation commands are confined.
    pub sandboxes: &'a process::Sandboxes,
    pub timeout: Duration,
    /// The review after validation, when a reviewer is configured.
    pub review: Option<&'a PacketReview<'a>>,
    /// Which packets' pipelines are running (see `watch`).
    pub activity: &'a super::watch::Activity,
    /// The run's worker slots, which candidates beyond a packet's first take theirs from.
    pub slots: &'a super::slots::Slots,
    /// Fix rounds for a failed scope check or validation.
    pub fix_rounds: u32,
    /// How many more times a worker that failed transiently runs, and the first wait between
    /// tries (doubling after each).
    pub retries: u32,
    pub retry_delay: Duration,
    /// Where the packet's work runs: `None` here, in a worktree beside the repository.
    pub executor: Option<&'a dyn super::remote::Executor>,
    /// What the packets this one depends on did, when the coordinator that knows worked it out
    /// (a job from another machine); `None` reads it from the journal.
    pub dependencies: Option<&'a str>,
    /// The deterministic checks every packet passes, with the repository's file size limit
    /// read once for the run (see [`Context::packet_checks`]).
    pub checks: std::sync::OnceLock<crate::gate::PacketChecks>,
    /// The `[best_of] arms` a worker command's candidates take their `strategy:` from.
    pub arms: &'a [String],
    /// The project's test command a best-of-N packet's candidates run before the choice.
    pub tests: Option<&'a str>,
    /// Who writes the tests a best-of-N packet's candidates must pass, when someone does
    /// (see `tester.rs`).
    pub tester: Option<&'a super::Tester>,
    /// How a succeeded packet's worktree is parked at once, in a run that integrates its
    /// packets with recycling on (see `engine/park.rs`); `None` leaves it for the integration.
    pub park: Option<&'a super::park::EarlyPark>,
}

impl Context<'_> {
    /// Returns the deterministic checks every packet of the run passes, reading the
    /// repository's configured file size limit (a `git config` process) on first use only.
    pub(super) fn packet_checks(&self) -> &crate::gate::PacketChecks {
        self.checks
            .get_or_init(|| crate::gate::PacketChecks::for_repo(&self.repo.git()))
    }
}

/// Why a pipeline stopped before success.
pub(super) enum Halt {
    /// The packet failed; the reason is shown to the user as is.
    Fail(String),
    /// The run is being interrupted; the packet restarts on resume.
    Interrupted,
    /// The journal could not be written; the scheduler stops the run.
    Journal,
    /// The worker failed in a way another try may not (an outage, a stall, a timeout, a
    /// killed process); [`Step::work`] tries again and never returns this.
    Transient(String),
}

/// One packet's pass through the pipeline: what every phase reads, built once when the packet
/// starts or resumes instead of being handed to each phase piece by piece.
#[derive(Clone)]
pub(super) struct Step<'s, 'a> {
    /// What every packet of the run shares.
    pub ctx: &'s Context<'a>,
    /// The packet's place in the plan (its ports follow from it).
    pub index: usize,
    pub packet: &'s Packet,
    /// The packet's record, on the attempt this pass makes.
    pub rec: PacketRecord,
    /// The commit the packet starts from.
    pub start: String,
    /// The packet's worktree (on another machine for a packet that runs elsewhere).
    pub wt: PathBuf,
    /// The packet's directory in the run directory: its logs, fixes and packet file.
    pub dir: PathBuf,
    /// The variables every command of the packet sees (see [`Step::environment`]); a fix
    /// round's step adds the file naming its fixes (see [`Step::fixing`]).
    pub env: Vec<(String, String)>,
    /// The candidate (1…N) this step works, for a best-of-N packet's candidates; its events
    /// are journaled under `<packet>.c<k>` (see `candidates`).
    pub candidate: Option<u32>,
    /// True for the step of a best-of-N packet's tester, which writes the tests its
    /// candidates must pass; its events are journaled under `<packet>.tests` (see `tester`).
    pub tester: bool,
}

impl<'s, 'a> Step<'s, 'a> {
    /// Returns the step of packet `index` on the attempt `rec` records, starting from `start`,
    /// in the worktree its record names; its environment is still empty.
    pub(super) fn new(
        ctx: &'s Context<'a>,
        index: usize,
        rec: PacketRecord,
        start: String,
    ) -> Step<'s, 'a> {
        let packet = &ctx.plan.packets[index];
        Step {
            ctx,
            index,
            packet,
            wt: PathBuf::from(&rec.worktree),
            dir: ctx.run_dir.packet(&packet.id),
            rec,
            start,
            env: Vec::new(),
            candidate: None,
            tester: false,
        }
    }

    /// Journals `event`, or halts the packet when the journal cannot be written.
    pub(super) fn record(&self, event: Event) -> Result<(), Halt> {
        match self.candidate {
            Some(k) => record(self.ctx, candidates::as_member(event, &format!("c{k}"))),
            None if self.tester => record(self.ctx, candidates::as_member(event, "tests")),
            None => record(self.ctx, event),
        }
    }

    /// Runs one command in the worktree with `env` under `confine` (as the user when `None`),
    /// logging to `log` and turning an interrupt or a spawn failure into a halt. Every command
    /// of a packet starts here.
    fn run_command(
        &self,
        command: &str,
        env: &[(String, String)],
        log: &Path,
        confine: Option<&process::Confine>,
    ) -> Result<Outcome, Halt> {
        let spec = Spec {
            command,
            dir: &self.wt,
            env,
            log,
            timeout: self.ctx.timeout,
            confine,
        };
        // Under the packet's own id even for a candidate: a resume stops the process group
        // its record names (it checks the group is this packet's) before anything runs again.
        let mut on_spawn = |pgid: i32| {
            self.ctx.journal.record_or_keep(Event::WorkerSpawned {
                packet: self.packet.id.clone(),
                pgid,
            });
        };
        let out = process::run(&spec, self.ctx.stop, &mut on_spawn)
            .map_err(|e| Halt::Fail(e.to_string()))?;
        if out.interrupted {
            return Err(Halt::Interrupted);
        }
        Ok(out)
    }
}

/// What is left of a packet's run once it is reported done: parking its worktree, when it
/// succeeded in a run that parks early, and marking its pipeline ended.
#[must_use = "a packet's run ends when its rest is finished"]
pub(super) struct Rest<'c, 'a> {
    ctx: &'c Context<'a>,
    id: String,
    wt: PathBuf,
    /// `None`: the pipeline was marked ended already, nothing is left.
    park: Option<Option<super::park::Parking>>,
}

impl Rest<'_, '_> {
    /// Parks the worktree (see `engine/park.rs`) if that is left to do, then marks the
    /// pipeline ended: parked first, so no watch of idle worktrees takes the pooled directory
    /// for this packet's.
    pub(super) fn finish(self) {
        let Some(parking) = self.park else {
            return;
        };
        if let (Some(_parking), Some(park)) = (parking, self.ctx.park) {
            park.park(self.ctx.repo, self.ctx.journal, &self.id, &self.wt);
        }
        self.ctx.activity.end(&self.id, &self.wt);
    }
}

/// Runs packet `index` from wherever its record says it stopped, and journals the outcome;
/// returns what is left to do once the packet is reported done (see [`Rest`]).
pub(super) fn run<'c, 'a>(
    ctx: &'c Context<'a>,
    index: usize,
    record: &PacketRecord,
) -> Rest<'c, 'a> {
    let id = ctx.plan.packets[index].id.clone();
    let _span = tracing::info_span!("packet", run = %ctx.run.id, packet = %id).entered();
    ctx.activity.start(&id);
    let outcome = match ctx.executor {
        Some(executor) => super::remote::pipeline(ctx, executor, index, record),
        None => pipeline(ctx, index, record),
    };
    let mut rest = Rest {
        ctx,
        id: id.clone(),
        wt: PathBuf::from(&record.worktree),
        park: None,
    };
    if let (Ok(commit), Some(_)) = (&outcome, ctx.park) {
        // Journaled succeeded first: a packet whose worktree is gone from its path is one
        // whose work is on its branch. Registered as being parked before the packet is
        // reported done, so that what then starts waits for the park where it must.
        let succeeded = ctx.journal.record_or_keep(Event::PacketSucceeded {
            packet: id.clone(),
            commit: commit.clone(),
        });
        rest.park = Some(succeeded.then(|| super::park::Parking::begin(&rest.wt)));
        return rest;
    }
    ctx.activity.end(&id, Path::new(&record.worktree));
    match outcome {
        Ok(commit) => {
            ctx.journal
                .record_or_keep(Event::PacketSucceeded { packet: id, commit });
        }
        Err(Halt::Fail(reason) | Halt::Transient(reason)) => {
            tracing::warn!(%reason, "packet failed");
            ctx.journal
                .record_or_keep(Event::PacketFailed { packet: id, reason });
        }
        Err(Halt::Interrupted) => {
            ctx.journal
                .record_or_keep(Event::PacketInterrupted { packet: id });
        }
        Err(Halt::Journal) => {}
    }
    rest
}

/// Journals `event`, or halts the packet when the journal cannot be written.
pub(super) fn record(ctx: &Context<'_>, event: Event) -> Result<(), Halt> {
    if ctx.journal.record_or_keep(event) {
        Ok(())
    } else {
        Err(Halt::Journal)
    }
}

/// Drives packet `index` here, phase by phase from the one its record names, through fix
/// rounds until its work is validated and approved; returns that commit.
fn pipeline(ctx: &Context<'_>, index: usize, rec: &PacketRecord) -> Result<String, Halt> {
    if in_flight(rec) {
        worktree::clear_stale_locks(ctx, &rec.branch, Path::new(&rec.worktree))?;
    }
    let begun = started::begin(ctx, &ctx.plan.packets[index], rec)?;
    let rec = PacketRecord {
        attempt: begun.attempt,
        ..rec.clone()
    };
    let mut step = Step::new(ctx, index, rec, begun.start);
    step.env = step.environment()?;
    let mut phase = begun.phase;

    if step.ensure_ready(phase == Phase::Worktree)? {
        phase = Phase::Worker;
    }
    // The engine's last commit on the branch: what a worker's own commits are taken back to.
    let mut last = step.rec.commit.clone();
    let candidates = ctx.plan.packets[index].candidates();
    if phase == Phase::Worker && candidates > 1 {
        last = Some(step.best_of(candidates)?);
        // The packet file names the packet's own worktree again.
        step.env = step.environment()?;
        phase = Phase::Validate;
    }
    if phase == Phase::Worker {
        step.first_work()?;
        phase = Phase::Commit;
    }
    let mut committed = None;
    if phase == Phase::Commit {
        let made = step.commit(last.as_deref())?;
        last = Some(made.0.clone());
        committed = Some(made);
    }
    let checked = step.validate(committed)?;
    step.rounds(checked, |round, fixes| {
        // The fixed commit replaces the rejected one, so nothing a check or a review rejected
        // (a file outside the scope, a secret) stays in the branch's history.
        step.take_back()?;
        let fixing = step.fixing(&step.dir.join(format!("fixes-{round}.md")), &fixes)?;
        fixing.work(Some((&fixes, round)))?;
        let committed = fixing.commit(last.as_deref())?;
        last = Some(committed.0.clone());
        fixing.validate(Some(committed))
    })
}

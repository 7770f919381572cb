//! The coordinator's side of a packet that runs elsewhere: each round of work (the first, then
//! every fix round a failed check or a rejecting review asks for) is one job for the executor;
//! what comes back is imported into the journal and goes through the same gates as local work.

use std::path::Path;

use super::super::packet::{self, Checked, Context, Halt, Step};
use super::{Dispatch, ExecResult, Executor, Job, LineKind, result_of};
use crate::store::{Event, PacketRecord};

/// Runs packet `index` on `executor` from wherever its record says it stopped; returns the
/// validated (and, with a reviewer, approved) commit.
pub(in crate::engine) fn pipeline(
    ctx: &Context<'_>,
    executor: &dyn Executor,
    index: usize,
    rec: &PacketRecord,
) -> Result<String, Halt> {
    let packet = &ctx.plan.packets[index];
    // Without a worker command, our agents work the packet where it runs.
    let worker_cmd = ctx.worker_cmd.unwrap_or_default();
    let begun = packet::begin(ctx, packet, rec)?;
    let mut job = Job {
        run: ctx.run.id.clone(),
        objective: ctx.run.objective.clone(),
        packet: packet.clone(),
        start: begun.start.clone(),
        branch: rec.branch.clone(),
        worker_cmd: worker_cmd.to_string(),
        timeout_secs: ctx.timeout.as_secs(),
        setup: ctx.setup.map(str::to_string),
        attempt: begun.attempt,
        round: 0,
        fixes: None,
        dependencies: packet::dependency_summary(ctx, packet),
    };
    let rec = PacketRecord {
        attempt: begun.attempt,
        ..rec.clone()
    };
    let step = Step::new(ctx, index, rec, begun.start);
    let checked = dispatch_round(ctx, executor, &job)?;
    step.rounds(checked, |round, fixes| {
        job.round = round;
        job.fixes = Some(fixes);
        dispatch_round(ctx, executor, &job)
    })
}

/// Hands one round of work to the executor and imports what it did; returns the checks'
/// outcome at the commit it pushed.
fn dispatch_round(ctx: &Context<'_>, executor: &dyn Executor, job: &Job) -> Result<Checked, Halt> {
    let id = &job.packet.id;
    let on_host = |host: &str| {
        ctx.journal.record_or_keep(Event::PacketDispatched {
            packet: id.clone(),
            executor: executor.kind().to_string(),
            host: host.to_string(),
            round: job.round,
        })
    };
    let log_dir = ctx.run_dir.packet(id);
    let dispatch = Dispatch {
        repo: ctx.repo,
        job,
        with_branch: job.round > 0,
        stop: ctx.stop,
        // The worker and each validation command may take the run's timeout; transfers too.
        timeout: ctx
            .timeout
            .saturating_mul(2 + job.packet.validation.len() as u32),
        log_dir: &log_dir,
        on_host: &on_host,
    };
    let got = executor.dispatch(&dispatch);
    if ctx.stop.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(Halt::Interrupted);
    }
    if let Some(err) = ctx.journal.take_error() {
        tracing::warn!(error = %err, "journal failed while the packet ran elsewhere");
        return Err(Halt::Journal);
    }
    let got = got.map_err(|reason| {
        Halt::Fail(format!(
            "no {} host could run the packet: {reason}",
            executor.kind()
        ))
    })?;
    for line in got
        .lines
        .iter()
        .filter(|l| l.attempt == job.attempt && l.round == job.round)
    {
        if let LineKind::Event(event) = &line.what
            && let Some(event) = imported(event, &got.host)
        {
            packet::record(ctx, event)?;
        }
    }
    match result_of(&got.lines, job.attempt, job.round) {
        Some(ExecResult::Passed { head }) => Ok(Checked::Passed(head.clone())),
        Some(ExecResult::Checked { reason, fixes }) => Ok(Checked::Failed {
            reason: reason.clone(),
            fixes: fixes.clone(),
        }),
        Some(ExecResult::Failed { reason }) => {
            Err(Halt::Fail(format!("on {}: {reason}", got.host)))
        }
        None => Err(Halt::Fail(format!(
            "{} sent back no result for round {} of attempt {}",
            got.host, job.round, job.attempt
        ))),
    }
}

/// Returns the coordinator's copy of an event the remote side journaled, or `None` for the
/// events that are the coordinator's own to journal (the packet's lifecycle) or that mean
/// something only on the host (a process group id). Log paths are the host's: they are
/// prefixed with its name.
fn imported(event: &Event, host: &str) -> Option<Event> {
    match event {
        Event::WorkerStarted {
            packet,
            command,
            log,
        } => Some(Event::WorkerStarted {
            packet: packet.clone(),
            command: command.clone(),
            log: format!("{host}:{}", Path::new(log).display()),
        }),
        Event::WorktreeReady { .. }
        | Event::WorkerFinished { .. }
        | Event::WorkerRetrying { .. }
        | Event::PacketCommitted { .. }
        | Event::ValidationFinished { .. }
        | Event::ScopeFinding { .. } => Some(event.clone()),
        _ => None,
    }
}

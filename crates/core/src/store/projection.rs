//! How an event changes the `runs`/`packets` projection: each event is appended to the
//! journal and applied here in the same transaction, so the projection never disagrees with
//! the journal it is computed from.

use rusqlite::params;

use super::events::{Event, RunOutcome};
use super::usage;

/// Appends `event` to the run's journal; returns its sequence number.
pub(super) fn insert_event(
    tx: &rusqlite::Transaction<'_>,
    run: &str,
    event: &Event,
    now: i64,
) -> rusqlite::Result<i64> {
    let payload = serde_json::to_string(event)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.execute(
        "INSERT INTO events (run_id, packet_id, ts_ms, type, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![run, event.packet(), now, event.kind(), payload],
    )?;
    Ok(tx.last_insert_rowid())
}

/// The projection's update statements within one transaction, for one run at one time.
struct Updates<'t> {
    tx: &'t rusqlite::Transaction<'t>,
    run: &'t str,
    now: i64,
}

impl Updates<'_> {
    /// Updates packet `id` with `sql`, whose anonymous `?` placeholders take `values`; the
    /// timestamp and keys are appended.
    fn packet(&self, sql: &str, id: &str, values: &[&dyn rusqlite::ToSql]) -> rusqlite::Result<()> {
        let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
        all.extend([&self.now as &dyn rusqlite::ToSql, &self.run, &id]);
        self.tx.execute(
            &format!("UPDATE packets SET {sql}, updated_ms = ? WHERE run_id = ? AND id = ?"),
            all.as_slice(),
        )?;
        Ok(())
    }

    /// Updates the run with `sql`, whose anonymous `?` placeholders take `values`.
    fn run(&self, sql: &str, values: &[&dyn rusqlite::ToSql]) -> rusqlite::Result<()> {
        let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
        all.extend([&self.now as &dyn rusqlite::ToSql, &self.run]);
        self.tx.execute(
            &format!("UPDATE runs SET {sql}, updated_ms = ? WHERE id = ?"),
            all.as_slice(),
        )?;
        Ok(())
    }
}

/// Applies one event to the `runs`/`packets` projection.
///
/// Every event kind is named here, so a new one must say where it goes.
pub(super) fn apply(
    tx: &rusqlite::Transaction<'_>,
    run: &str,
    event: &Event,
    now: i64,
) -> rusqlite::Result<()> {
    let updates = Updates { tx, run, now };
    match event {
        Event::AgentState { .. }
        | Event::AgentModelCall { .. }
        | Event::AgentToolCall { .. }
        | Event::AgentRetry { .. }
        | Event::AgentFallback { .. } => usage::apply(tx, run, event, now),
        Event::AgentWaiting { .. } => Ok(()),
        Event::RunCreated { .. }
        | Event::WorkerStarted { .. }
        | Event::PacketReviewed { .. }
        | Event::WorkerRetrying { .. }
        | Event::IntegrationRequested { .. }
        | Event::MergeStarted { .. }
        | Event::TargetAdvancing { .. }
        | Event::PacketConflicted { .. }
        | Event::PacketResolved { .. }
        | Event::MergeValidationFinished { .. }
        | Event::MergeFinished { .. }
        | Event::PacketsShareFiles { .. }
        | Event::QuestionAsked { .. }
        | Event::QuestionAnswered { .. }
        | Event::CommentsSent { .. }
        | Event::CommentsDelivered { .. }
        | Event::ScopeFinding { .. }
        | Event::PacketDispatched { .. }
        | Event::LandStarted { .. }
        | Event::PrObserved { .. }
        | Event::PrLooked { .. }
        | Event::CheckRerun { .. }
        | Event::CheckFlaky { .. }
        | Event::PrRetargeted { .. }
        | Event::PrRestacked { .. }
        | Event::RestackConflicted { .. }
        | Event::PrMerged { .. }
        | Event::PrQueued { .. }
        | Event::LandWaiting { .. }
        | Event::LandCommand { .. }
        | Event::LandFinished { .. }
        | Event::CandidateStarted { .. }
        | Event::CandidateEnded { .. }
        | Event::TesterEnded { .. }
        | Event::LandFixStarted { .. }
        | Event::LandFixEnded { .. } => Ok(()),
        Event::RunStarted { .. }
        | Event::RunInterrupted { .. }
        | Event::RunCancelled
        | Event::RunReopened { .. }
        | Event::RunFinished { .. } => apply_to_run(&updates, event),
        // What a packet's agents learned is kept only once the packet lands.
        Event::PacketSucceeded { packet, .. } => {
            super::memory::land(tx, run, packet)?;
            apply_to_packet(&updates, event)
        }
        Event::PacketFailed { packet, .. } | Event::PacketSentBack { packet, .. } => {
            super::memory::discard(tx, run, packet)?;
            apply_to_packet(&updates, event)
        }
        Event::PacketIntegrated { .. }
        | Event::ValidationFinished { .. }
        | Event::PacketStarted { .. }
        | Event::WorktreeReady { .. }
        | Event::WorkerSpawned { .. }
        | Event::WorkerFinished { .. }
        | Event::PacketCommitted { .. }
        | Event::ReviewStarted { .. }
        | Event::PacketSkipped { .. }
        | Event::PacketInterrupted { .. }
        | Event::PacketResumed { .. }
        | Event::CandidateChosen { .. }
        | Event::WorktreeRemoved { .. }
        | Event::WorktreeParked { .. }
        | Event::WorktreeRestored { .. } => apply_to_packet(&updates, event),
    }
}

/// Applies an event about the run as a whole.
fn apply_to_run(u: &Updates<'_>, event: &Event) -> rusqlite::Result<()> {
    match event {
        Event::RunStarted { pid, .. } => {
            u.run("state = 'running', pid = ?", &[&i64::from(*pid)])?;
        }
        Event::RunInterrupted { .. } => {
            u.run("state = 'interrupted', pid = NULL", &[])?;
        }
        Event::RunCancelled => {
            u.run("state = 'cancelled', pid = NULL", &[])?;
            u.tx.execute(
                "UPDATE packets SET state = 'cancelled', phase = NULL, reason = 'run cancelled',
                 updated_ms = ?2 WHERE run_id = ?1 AND state IN ('pending', 'running', 'interrupted')",
                params![u.run, u.now],
            )?;
        }
        Event::RunReopened { packets, .. } => {
            // Resumable again; `resume` and `retry` drive it like an interrupted run.
            u.run("state = 'interrupted', pid = NULL", &[])?;
            for id in packets {
                u.packet(
                    "state = 'pending', phase = NULL, reason = NULL, pgid = NULL",
                    id,
                    &[],
                )?;
            }
        }
        Event::RunFinished { outcome } => {
            let state = match outcome {
                RunOutcome::Completed => "completed",
                RunOutcome::Failed => "failed",
            };
            u.run("state = ?, pid = NULL", &[&state])?;
        }
        _ => {}
    }
    Ok(())
}

/// Applies an event about one packet.
fn apply_to_packet(u: &Updates<'_>, event: &Event) -> rusqlite::Result<()> {
    match event {
        Event::PacketIntegrated { packet: id, .. } => u.packet("reason = NULL", id, &[]),
        Event::PacketSentBack { packet: id, reason } => {
            // The packet keeps its state (its work passed its own checks); the reason says
            // that the merge sent it back and why.
            u.packet("reason = 'sent back by the merge: ' || ?", id, &[reason])
        }
        Event::ValidationFinished { packet: id, .. } => u.packet("pgid = NULL", id, &[]),
        Event::PacketStarted {
            packet,
            branch,
            worktree,
            start,
            attempt,
        } => {
            u.tx.execute(
                "UPDATE packets SET state = 'running', phase = 'worktree', branch = ?3, worktree = ?4,
                 attempt = ?5, start_commit = ?6, reason = NULL, updated_ms = ?7
                 WHERE run_id = ?1 AND id = ?2",
                params![u.run, packet, branch, worktree, i64::from(*attempt), start, u.now],
            )?;
            Ok(())
        }
        Event::WorktreeReady { packet: id, .. } => {
            u.packet("phase = 'worker', removed = 0, pgid = NULL", id, &[])
        }
        Event::WorkerSpawned { packet: id, pgid } => u.packet("pgid = ?", id, &[pgid]),
        Event::WorkerFinished {
            packet: id,
            exit_code,
            timed_out,
            ..
        } => {
            if *exit_code == Some(0) && !timed_out {
                u.packet("phase = 'commit', pgid = NULL", id, &[])
            } else {
                u.packet("pgid = NULL", id, &[])
            }
        }
        Event::PacketCommitted {
            packet: id, commit, ..
        } => u.packet("phase = 'validate', commit_id = ?", id, &[commit]),
        Event::ReviewStarted { packet: id, .. } => u.packet("phase = 'review'", id, &[]),
        // The winner's commit is the packet's, validated next like a worker's commit.
        Event::CandidateChosen {
            packet: id, commit, ..
        } => u.packet("phase = 'validate', commit_id = ?", id, &[commit]),
        Event::PacketSucceeded { packet: id, commit } => u.packet(
            "state = 'succeeded', phase = NULL, commit_id = ?, reason = NULL, pgid = NULL",
            id,
            &[commit],
        ),
        Event::PacketFailed { packet: id, reason } => u.packet(
            "state = 'failed', phase = NULL, reason = ?, pgid = NULL",
            id,
            &[reason],
        ),
        Event::PacketSkipped { packet: id, reason } => {
            u.packet("state = 'skipped', phase = NULL, reason = ?", id, &[reason])
        }
        Event::PacketInterrupted { packet: id } => u.packet(
            "state = 'interrupted', pgid = NULL, reason = 'interrupted; resume restarts it from its worktree'",
            id,
            &[],
        ),
        Event::PacketResumed { packet: id, .. } => {
            u.packet("state = 'running', reason = NULL", id, &[])
        }
        Event::WorktreeRemoved { packet: id, backup } => {
            u.packet("removed = 1, backup = ?", id, &[backup])
        }
        Event::WorktreeParked { packet: id, .. } => u.packet("removed = 1", id, &[]),
        Event::WorktreeRestored { packet: id, .. } => u.packet("removed = 0", id, &[]),
        _ => Ok(()),
    }
}

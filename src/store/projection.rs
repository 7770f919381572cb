//! How an event changes the `runs`/`packets` projection: each event is appended to the
//! journal and applied here in the same transaction, so the projection never disagrees with
//! the journal it is computed from.

use rusqlite::params;

use super::events::{Event, RunOutcome};
use super::usage;

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

/// Applies one event to the `runs`/`packets` projection.
pub(super) fn apply(
    tx: &rusqlite::Transaction<'_>,
    run: &str,
    event: &Event,
    now: i64,
) -> rusqlite::Result<()> {
    // `sql` uses anonymous `?` placeholders for `values`; timestamp and keys are appended.
    let packet = |sql: &str, id: &str, values: &[&dyn rusqlite::ToSql]| {
        let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
        all.extend([&now as &dyn rusqlite::ToSql, &run, &id]);
        tx.execute(
            &format!("UPDATE packets SET {sql}, updated_ms = ? WHERE run_id = ? AND id = ?"),
            all.as_slice(),
        )
    };
    let run_state = |sql: &str, values: &[&dyn rusqlite::ToSql]| {
        let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
        all.extend([&now as &dyn rusqlite::ToSql, &run]);
        tx.execute(
            &format!("UPDATE runs SET {sql}, updated_ms = ? WHERE id = ?"),
            all.as_slice(),
        )
    };
    match event {
        Event::AgentState { .. }
        | Event::AgentModelCall { .. }
        | Event::AgentToolCall { .. }
        | Event::AgentRetry { .. }
        | Event::AgentFallback { .. } => usage::apply(tx, run, event, now)?,
        Event::RunCreated { .. }
        | Event::WorkerStarted { .. }
        | Event::PacketReviewed { .. }
        | Event::MergeStarted { .. }
        | Event::PacketConflicted { .. }
        | Event::MergeValidationFinished { .. }
        | Event::MergeFinished { .. }
        | Event::PacketsShareFiles { .. }
        | Event::ScopeFinding { .. } => {}
        Event::PacketIntegrated { packet: id, .. } => {
            packet("reason = NULL", id, &[])?;
        }
        Event::PacketSentBack { packet: id, reason } => {
            // The packet keeps its state (its work passed its own checks); the reason says
            // that the merge sent it back and why.
            packet("reason = 'sent back by the merge: ' || ?", id, &[reason])?;
        }
        Event::ValidationFinished { packet: id, .. } => {
            packet("pgid = NULL", id, &[])?;
        }
        Event::RunStarted { pid, .. } => {
            run_state("state = 'running', pid = ?", &[&i64::from(*pid)])?;
        }
        Event::RunInterrupted { .. } => {
            run_state("state = 'interrupted', pid = NULL", &[])?;
        }
        Event::RunCancelled => {
            run_state("state = 'cancelled', pid = NULL", &[])?;
            tx.execute(
                "UPDATE packets SET state = 'cancelled', phase = NULL, reason = 'run cancelled',
                 updated_ms = ?2 WHERE run_id = ?1 AND state IN ('pending', 'running', 'interrupted')",
                params![run, now],
            )?;
        }
        Event::RunFinished { outcome } => {
            let state = match outcome {
                RunOutcome::Completed => "completed",
                RunOutcome::Failed => "failed",
            };
            run_state("state = ?, pid = NULL", &[&state])?;
        }
        Event::PacketStarted {
            packet,
            branch,
            worktree,
            start,
            attempt,
        } => {
            tx.execute(
                "UPDATE packets SET state = 'running', phase = 'worktree', branch = ?3, worktree = ?4,
                 attempt = ?5, start_commit = ?6, reason = NULL, updated_ms = ?7
                 WHERE run_id = ?1 AND id = ?2",
                params![run, packet, branch, worktree, i64::from(*attempt), start, now],
            )?;
        }
        Event::WorktreeReady { packet: id, .. } => {
            packet("phase = 'worker', removed = 0, pgid = NULL", id, &[])?;
        }
        Event::WorkerSpawned { packet: id, pgid } => {
            packet("pgid = ?", id, &[pgid])?;
        }
        Event::WorkerFinished {
            packet: id,
            exit_code,
            timed_out,
            ..
        } => {
            if *exit_code == Some(0) && !timed_out {
                packet("phase = 'commit', pgid = NULL", id, &[])?;
            } else {
                packet("pgid = NULL", id, &[])?;
            }
        }
        Event::PacketCommitted {
            packet: id, commit, ..
        } => {
            packet("phase = 'validate', commit_id = ?", id, &[commit])?;
        }
        Event::PacketSucceeded { packet: id, commit } => {
            packet(
                "state = 'succeeded', phase = NULL, commit_id = ?, reason = NULL, pgid = NULL",
                id,
                &[commit],
            )?;
        }
        Event::PacketFailed { packet: id, reason } => {
            packet(
                "state = 'failed', phase = NULL, reason = ?, pgid = NULL",
                id,
                &[reason],
            )?;
        }
        Event::PacketSkipped { packet: id, reason } => {
            packet("state = 'skipped', phase = NULL, reason = ?", id, &[reason])?;
        }
        Event::PacketInterrupted { packet: id } => {
            packet(
                "state = 'interrupted', pgid = NULL, reason = 'interrupted; resume restarts it from its worktree'",
                id,
                &[],
            )?;
        }
        Event::WorktreeRemoved { packet: id, backup } => {
            packet("removed = 1, backup = ?", id, &[backup])?;
        }
    }
    Ok(())
}

//! Handling of a packet the merge coordinator sent back for conflicts: merge the integration
//! branch into the packet's branch in its worktree, let the packet's agent resolve the
//! conflict markers, commit on its behalf, and record the new commit so the next merge picks
//! it up.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::engine::{Worker, WorkerJob};
use crate::git::commit::Trailers;
use crate::git::{self, Git};
use crate::plan::Packet;
use crate::store::{Event, PacketRecord, Store};

/// Why a conflict was not resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConflictError {
    #[error("packet `{packet}`: its worktree {path} is gone; resolve on branch {branch} by hand")]
    NoWorktree {
        packet: String,
        path: String,
        branch: String,
    },
    #[error("packet `{packet}`: {message}")]
    Git { packet: String, message: String },
    #[error("packet `{packet}`: the agent did not resolve the conflicts: {reason}")]
    Unresolved { packet: String, reason: String },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// What one resolution needs.
pub struct Resolution<'a> {
    pub common_dir: &'a Path,
    pub run: &'a str,
    pub objective: &'a str,
    pub record: &'a PacketRecord,
    pub packet: &'a Packet,
    pub integration: &'a str,
    pub paths: &'a [String],
    pub log: &'a Path,
    pub stop: &'a AtomicBool,
    pub timeout: Duration,
}

/// Resolves one conflicted packet with `worker`; returns the packet's new commit.
pub fn resolve(r: &Resolution<'_>, worker: &dyn Worker) -> Result<String, ConflictError> {
    let id = &r.packet.id;
    let wt = Path::new(&r.record.worktree);
    if !wt.exists() || r.record.removed {
        return Err(ConflictError::NoWorktree {
            packet: id.clone(),
            path: r.record.worktree.clone(),
            branch: r.record.branch.clone(),
        });
    }
    let g = Git::new(wt);
    let gerr = |e: git::GitError| ConflictError::Git {
        packet: id.clone(),
        message: e.to_string(),
    };
    // A resumed resolution finds the merge already under way.
    let merging = g
        .succeeds(["rev-parse", "-q", "--verify", "MERGE_HEAD"])
        .map_err(gerr)?;
    if !merging {
        let spec = format!("refs/heads/{}", r.integration);
        let status = g
            .command(["merge", "--no-ff", "--no-commit", spec.as_str()])
            .output()
            .map_err(|e| ConflictError::Git {
                packet: id.clone(),
                message: format!("git merge: {e}"),
            })?;
        if status.status.code() == Some(0) {
            // It merges cleanly now (the integration branch changed): just commit.
            return commit(r, wt);
        }
    }
    let mut task = r.packet.clone();
    task.description = format!(
        "Resolve the merge conflicts in {}: the integration branch changed these files too. \
         Keep the intent of both sides and remove every conflict marker (<<<<<<<, =======, >>>>>>>).\n\n\
         The packet's original task:\n{}",
        r.paths.join(", "),
        r.packet.description
    );
    for p in r.paths {
        if !task.files.contains(p) {
            task.files.push(p.clone());
        }
    }
    let report = worker.work(&WorkerJob {
        run: r.run,
        objective: r.objective,
        packet: &task,
        worktree: wt,
        log: r.log,
        stop: r.stop,
        timeout: r.timeout,
        // The resolution runs outside the engine's packet pipeline, so its agent events stay in
        // the transcript log rather than the run store.
        journal: &|_| {},
        fixes: None,
    });
    if !report.success {
        return Err(ConflictError::Unresolved {
            packet: id.clone(),
            reason: report.summary,
        });
    }
    for p in r.paths {
        let text = fs_err::read_to_string(wt.join(p)).unwrap_or_default();
        if text
            .lines()
            .any(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>"))
        {
            return Err(ConflictError::Unresolved {
                packet: id.clone(),
                reason: format!("{p} still has conflict markers"),
            });
        }
    }
    commit(r, wt)
}

fn commit(r: &Resolution<'_>, wt: &Path) -> Result<String, ConflictError> {
    let id = &r.packet.id;
    let msg = git::commit::message(
        &format!("Merge {} into {id} and resolve conflicts", r.integration),
        &Trailers {
            run: r.run,
            packet: id,
            role: &r.packet.role,
        },
    );
    let commit = match git::commit::commit_all(wt, &msg).map_err(|e| ConflictError::Git {
        packet: id.clone(),
        message: e.to_string(),
    })? {
        Some(c) => c,
        // Committed before a crash but not recorded: the branch tip is the resolution, if it
        // moved past the recorded commit.
        None => {
            let head = Git::new(wt)
                .run(["rev-parse", "HEAD"])
                .map_err(|e| ConflictError::Git {
                    packet: id.clone(),
                    message: e.to_string(),
                })?;
            if r.record.commit.as_deref() == Some(head.trim()) {
                return Err(ConflictError::Unresolved {
                    packet: id.clone(),
                    reason: "nothing to commit after the merge".into(),
                });
            }
            head.trim().to_string()
        }
    };
    let mut store = Store::open(r.common_dir)?;
    store.record(
        r.run,
        &Event::PacketSucceeded {
            packet: id.clone(),
            commit: commit.clone(),
        },
    )?;
    Ok(commit)
}

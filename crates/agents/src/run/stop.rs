//! Stopping a run: pause (a `start` run stops cleanly, to be resumed) and cancel (any run
//! stops for good, its packets' unsaved work saved first).

use std::time::Duration;

use crate::orchestrator::{StartJournal, WorkflowEvent, WorkflowState};
use orchestra_core::engine::gc::GcReport;
use orchestra_core::engine::{self, EngineError};
use orchestra_git::git::RepoInfo;

use super::{LifecycleError, Run, RunKind, RunRef};

/// Longest a cancel waits for the run's driving process to stop.
const DRIVER_WAIT: Duration = Duration::from_secs(15);

/// What a cancel did.
#[derive(Debug)]
pub struct Cancelled {
    /// What was cleaned up of the run's packets, when it had packets left to clean up.
    pub cleaned: Option<GcReport>,
}

impl Run {
    /// Opens the `start` run `which` names: only those pause or have a report, and an older
    /// `start` run is never picked in the newest one's place. `what` says what only a `start`
    /// run does, e.g. "pauses".
    pub fn open_start(repo: &RepoInfo, which: RunRef, what: &str) -> Result<Run, LifecycleError> {
        if let RunRef::Id(id) = &which {
            if !super::is_start_run(&repo.common_dir, id) {
                return Err(LifecycleError::UnknownStart { run: id.clone() });
            }
            return Ok(Run::at(repo, id, false));
        }
        let run = Run::open(repo, which)?;
        if run.kind != RunKind::Start {
            return Err(LifecycleError::NotStart {
                run: run.id,
                what: what.to_string(),
            });
        }
        Ok(run)
    }

    /// Pauses a `start` run: journals the request and signals the process driving it, whose
    /// agents stop and whose work is kept; `resume` continues it from the phase it was in.
    /// Returns true when a live driver was signalled.
    pub fn pause(&self) -> Result<bool, LifecycleError> {
        if self.kind != RunKind::Start {
            return Err(LifecycleError::NotStart {
                run: self.id.clone(),
                what: "pauses".into(),
            });
        }
        self.request_stop(false)
    }

    /// Journals a stop request for a `start` run and sends SIGTERM to its driving process if
    /// it lives; returns true when one was signalled.
    fn request_stop(&self, cancel: bool) -> Result<bool, LifecycleError> {
        let j = StartJournal::open(self.common(), &self.id)?;
        let state = j.workflow()?.state();
        if state.is_final() {
            return Err(LifecycleError::AlreadyFinal {
                run: self.id.clone(),
                state,
            });
        }
        j.append(&WorkflowEvent::StopRequested { cancel })?;
        let pid = j.entries()?.iter().rev().find_map(|e| match e.event {
            WorkflowEvent::Driving { pid } => Some(pid),
            _ => None,
        });
        Ok(pid.is_some_and(signal_driver))
    }

    /// Cancels the run: stops the process driving it, marks it cancelled, and removes its
    /// worktrees after saving unsaved work to refs/orchestra/backup/<run>/<packet>.
    ///
    /// A run picked as the newest that has already ended is refused, never cleaned up: naming
    /// it cleans it up, as `gc` does.
    pub fn cancel(&self) -> Result<Cancelled, LifecycleError> {
        let start = self.start_state();
        if self.picked {
            match &start {
                Some(s) if s.phase.is_final() => {
                    return Err(LifecycleError::NothingToCancel {
                        run: self.id.clone(),
                        state: s.phase.to_string(),
                    });
                }
                Some(_) => {}
                None => engine::check_resumable(&self.repo, &self.id).map_err(|e| match e {
                    EngineError::NotResumable { run, state } => LifecycleError::NothingToCancel {
                        run,
                        state: state.to_string(),
                    },
                    other => other.into(),
                })?,
            }
        }
        // A `start` run is cancelled as a workflow first (its driver stops), then its packets.
        if start.is_some() && !self.cancel_start()? {
            return Ok(Cancelled { cleaned: None });
        }
        let report = engine::cancel(&self.repo, &self.id, DRIVER_WAIT)?;
        Ok(Cancelled {
            cleaned: Some(report),
        })
    }

    /// Cancels the `start` run's workflow: asks its driving process to stop, waits for it, and
    /// journals the cancellation. Returns true when the run has engine packets to clean up too.
    fn cancel_start(&self) -> Result<bool, LifecycleError> {
        let signalled = self.request_stop(true)?;
        let j = StartJournal::open(self.common(), &self.id)?;
        if signalled {
            // The driver journals `cancelled` itself when it stops; give it a moment.
            let steps = DRIVER_WAIT.as_millis() / 100;
            for _ in 0..steps {
                if j.workflow()?.state() == WorkflowState::Cancelled {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let mut wf = j.workflow()?;
        if !wf.state().is_final() {
            j.transition(
                &mut wf,
                WorkflowState::Cancelled,
                "cancelled with `git orchestra cancel`",
            )?;
        }
        Ok(self.record()?.is_some_and(|r| !r.state.is_finished()))
    }
}

/// Sends SIGTERM to `pid` when it is a live git-orchestra process other than this one, never
/// to a recycled pid; returns true when it was signalled.
fn signal_driver(pid: u32) -> bool {
    let cmdline = fs_err::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if pid == std::process::id() || !String::from_utf8_lossy(&cmdline).contains("git-orchestra") {
        return false;
    }
    // SAFETY: kill(2) on a pid checked just above to be a git-orchestra process.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    true
}

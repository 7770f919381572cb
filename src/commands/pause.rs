//! `git orchestra pause [<run>]`: stops a `start` run cleanly; `resume` continues it.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::orchestrator::{StartJournal, WorkflowEvent};

use super::CommandError;

/// Pauses a running `start` run: its agents stop, its work is kept, and `git orchestra
/// resume` continues it from the phase it was in.
#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The run to pause (default: the newest run; see `git orchestra status`).
    run: Option<String>,
}

/// Journals the request and signals the process driving the run.
pub fn cmd_pause(cwd: &Path, args: &PauseArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let run = pick(&repo, args.run.as_deref(), "pauses")?;
    request_stop(&repo, &run, false)?;
    eprintln!("asked run {run} to pause; `git orchestra resume {run}` continues it");
    Ok(())
}

/// Returns `run`, or the newest run `git orchestra status` shows, checking it is a `start`
/// run: only those pause or have a report, and an older `start` run is never picked in the
/// newest one's place. `what` says what only a `start` run does, e.g. "pauses".
pub fn pick(repo: &RepoInfo, run: Option<&str>, what: &str) -> Result<String, CommandError> {
    let runs = StartJournal::runs(&repo.common_dir).map_err(CommandError::internal)?;
    match run {
        Some(r) if runs.iter().any(|x| x == r) => Ok(r.to_string()),
        Some(r) => Err(
            CommandError::user(format!("no `start` run `{r}` in this repository"))
                .hint("`git orchestra status` lists the runs"),
        ),
        None => {
            let newest = super::pick_run(repo, None)?;
            if runs.contains(&newest) {
                return Ok(newest);
            }
            Err(super::hint_unnamed(
                CommandError::user(format!(
                    "run `{newest}` was not made by `start`, and only a `start` run {what}"
                )),
                true,
                &newest,
            ))
        }
    }
}

/// Journals a stop request for `run` and sends SIGTERM to its driving process if it lives.
pub fn request_stop(repo: &RepoInfo, run: &str, cancel: bool) -> Result<bool, CommandError> {
    let j = StartJournal::open(&repo.common_dir, run).map_err(CommandError::internal)?;
    let state = j.workflow().map_err(CommandError::internal)?.state();
    if state.is_final() {
        return Err(CommandError::user(format!("run {run} is already {state}")));
    }
    j.append(&WorkflowEvent::StopRequested { cancel })
        .map_err(CommandError::internal)?;
    let pid = j
        .entries()
        .map_err(CommandError::internal)?
        .iter()
        .rev()
        .find_map(|e| match e.event {
            WorkflowEvent::Driving { pid } => Some(pid),
            _ => None,
        });
    let Some(pid) = pid else { return Ok(false) };
    // Only a live git-orchestra process is signalled, never a recycled pid.
    let cmdline = fs_err::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if pid != std::process::id() && String::from_utf8_lossy(&cmdline).contains("git-orchestra") {
        // SAFETY: kill(2) on a pid checked just above to be a git-orchestra process.
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
        return Ok(true);
    }
    Ok(false)
}

/// Cancels the `start` run `run`: asks its driving process to stop, waits for it, and
/// journals the cancellation. Returns true when the run has engine packets to clean up too.
pub fn cancel_start(repo: &RepoInfo, run: &str) -> Result<bool, CommandError> {
    let signalled = request_stop(repo, run, true)?;
    let j = StartJournal::open(&repo.common_dir, run).map_err(CommandError::internal)?;
    if signalled {
        // The driver journals `cancelled` itself when it stops; give it a moment.
        for _ in 0..150 {
            let state = j.workflow().map_err(CommandError::internal)?.state();
            if state == git_orchestra::orchestrator::WorkflowState::Cancelled {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let mut wf = j.workflow().map_err(CommandError::internal)?;
    if !wf.state().is_final() {
        j.transition(
            &mut wf,
            git_orchestra::orchestrator::WorkflowState::Cancelled,
            "cancelled with `git orchestra cancel`",
        )
        .map_err(CommandError::internal)?;
    }
    let store = git_orchestra::store::Store::open_existing(&repo.common_dir)
        .map_err(CommandError::internal)?;
    Ok(store
        .map(|s| s.run(run))
        .transpose()
        .map_err(CommandError::internal)?
        .flatten()
        .is_some_and(|r| !r.state.is_finished()))
}

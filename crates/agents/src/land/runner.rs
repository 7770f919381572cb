//! The one runner of landing workers: a fix round ([`super::fix`]) and a conflict round
//! ([`super::conflict`]) both hand their job to [`run`], so the worker command's environment,
//! its fixes file and its confinement by the workers' sandbox, and the in-process worker's
//! turn, are decided once and cannot drift apart between the two kinds of round.
//!
//! The run's worker command gets what to fix in `ORCHESTRA_FIXES_FILE` (with the run, the
//! packet, its worktree and the round in `ORCHESTRA_*`, and the API keys the engine took out
//! of its own environment), confined by `[sandbox]` as in a run; our agent takes it as the
//! next turn of the packet's kept conversation, an agent CLI in its resumed session.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use orchestra_core::engine::{Worker, WorkerJob};
use orchestra_core::plan::Packet;
use orchestra_core::store::{Event, Store};
use orchestra_sys::exec::RunDir;
use orchestra_sys::exec::process::{self, Sandboxes, Spec};

use super::Fixers;

/// Who does a landing round's work: the run's worker command, or the packet's in-process
/// worker (our agent continuing its conversation, an agent CLI resuming its session).
pub(super) enum Who<'a> {
    Command(String),
    Agent(&'a dyn Worker),
}

impl<'a> Who<'a> {
    /// Returns the run's worker command when it has one (`worker_cmd`), else the in-process
    /// worker of `fixers`; `None` when neither can take the round.
    pub(super) fn of(worker_cmd: Option<&str>, fixers: Fixers<'a>) -> Option<Who<'a>> {
        match (worker_cmd, fixers.worker) {
            (Some(command), _) => Some(Who::Command(command.to_string())),
            (None, Some(agent)) => Some(Who::Agent(agent)),
            (None, None) => None,
        }
    }
}

/// One landing round's job for its worker: where it works and what it is told.
pub(super) struct Job<'a> {
    pub common_dir: &'a Path,
    pub run: &'a str,
    pub objective: &'a str,
    pub packet: &'a Packet,
    /// Where the worker works: the round's worktree.
    pub worktree: &'a Path,
    /// What the worker is told: written to `fixes_file` for a worker command, the fixes of
    /// the in-process worker's job.
    pub feedback: &'a str,
    pub fixes_file: &'a Path,
    pub round: u32,
    pub timeout: Duration,
    /// What the worker command is told besides the `ORCHESTRA_*` every round sets (the kind
    /// of round, the conflicting files).
    pub env: Vec<(String, String)>,
    /// The worker command's log.
    pub log: PathBuf,
    /// The in-process worker's transcript's file name in the packet's directory.
    pub transcript: String,
}

/// Has `who` do `job` (a worker command confined by `sandboxes`' workers' sandbox) and
/// returns what it said last, or why it failed.
pub(super) fn run(
    who: &Who<'_>,
    job: &Job<'_>,
    sandboxes: Option<&Sandboxes>,
) -> Result<String, String> {
    if let Some(dir) = job.fixes_file.parent() {
        fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    fs_err::write(job.fixes_file, job.feedback).map_err(|e| e.to_string())?;
    match who {
        Who::Command(command) => run_command(job, command, sandboxes),
        Who::Agent(agent) => agent_turn(*agent, job),
    }
}

/// Runs the worker command in the job's worktree with its fixes file, under the workers'
/// sandbox when `sandboxes` has one.
fn run_command(
    job: &Job<'_>,
    command: &str,
    sandboxes: Option<&Sandboxes>,
) -> Result<String, String> {
    let mut env = vec![
        ("ORCHESTRA_RUN".to_string(), job.run.to_string()),
        ("ORCHESTRA_PACKET".to_string(), job.packet.id.clone()),
        (
            "ORCHESTRA_WORKTREE".to_string(),
            job.worktree.to_string_lossy().into_owned(),
        ),
        (
            "ORCHESTRA_FIXES_FILE".to_string(),
            job.fixes_file.to_string_lossy().into_owned(),
        ),
        ("ORCHESTRA_ROUND".to_string(), job.round.to_string()),
    ];
    env.extend(job.env.iter().cloned());
    // Only the worker command gets the API keys the engine took out of its own environment.
    env.extend(orchestra_sys::exec::command_env::provider_settings());
    env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
    if let Some(dir) = job.log.parent() {
        fs_err::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let spec = Spec {
        command,
        dir: job.worktree,
        env: &env,
        log: &job.log,
        timeout: job.timeout,
        confine: sandboxes.and_then(|s| s.worker.as_deref()),
    };
    let stop = AtomicBool::new(false);
    let out = process::run(&spec, &stop, &mut |_| {}).map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "the worker command failed ({}): {}",
            out.exit_code
                .map_or_else(|| "killed".to_string(), |c| format!("exit code {c}")),
            out.tail.lines().last().unwrap_or_default()
        ));
    }
    Ok(out.tail)
}

/// Has `worker` (our agent, an agent CLI) take the job as the next turn of the packet's kept
/// conversation or CLI session, and returns what it said last, or why it did not finish; its
/// activity (model and tool calls) is journaled with the run's, its transcript kept in the
/// packet's directory beside the run's.
fn agent_turn(worker: &dyn Worker, job: &Job<'_>) -> Result<String, String> {
    let store = Mutex::new(Store::open(job.common_dir).map_err(|e| e.to_string())?);
    let journal = |event: Event| {
        if let Ok(mut store) = store.lock()
            && let Err(e) = store.record(job.run, &event)
        {
            tracing::warn!(error = %e, "an agent event of a landing round was not journaled");
        }
    };
    let dir = RunDir::new(job.common_dir, job.run).packet(&job.packet.id);
    fs_err::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let log = dir.join(&job.transcript);
    let stop = AtomicBool::new(false);
    let work = WorkerJob {
        run: job.run,
        objective: job.objective,
        packet: job.packet,
        worktree: job.worktree,
        common_dir: job.common_dir,
        log: &log,
        stop: &stop,
        timeout: job.timeout,
        journal: &journal,
        fixes: Some(job.feedback),
        round: job.round,
        dependencies: "",
        candidate: None,
    };
    let report = worker.work(&work);
    if !report.success {
        return Err(format!(
            "the packet's agent did not finish: {} (transcript: {})",
            report.summary,
            log.display()
        ));
    }
    Ok(report.summary)
}

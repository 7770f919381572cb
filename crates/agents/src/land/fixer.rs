//! Who does a landing fix round's work in the worktree of the pull request's head: the run's
//! worker command (what failed in `ORCHESTRA_FIXES_FILE`, confined by the workers' sandbox as
//! in a run), or its in-process worker — our agent taking the failure as the next turn of the
//! packet's kept conversation, an agent CLI resuming the packet's session. Either way the
//! engine then commits, re-gates and pushes what the worker left (see [`super::fix`]).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use orchestra_core::engine::{Worker, WorkerJob};
use orchestra_core::plan::Packet;
use orchestra_core::store::{Event, Store};
use orchestra_git::git::Git;
use orchestra_sys::exec::RunDir;
use orchestra_sys::exec::process::{self, Spec};

use super::Fixers;
use super::fix::{Context, Round};

/// Runs fix round `number`'s worker in `wt` and returns what it said last, or why it failed.
pub(super) fn run(
    round: &Round<'_>,
    number: u32,
    fixers: Fixers<'_>,
    ctx: &Context,
    wt: &Path,
) -> Result<String, String> {
    match (&ctx.worker, fixers.worker) {
        (Some(command), _) => command_round(round, number, fixers, ctx, wt, command),
        (None, Some(worker)) => in_process_round(round, number, worker, ctx, wt),
        (None, None) => Err(
            "the run's packets were done by agents, and none was given the \
             fix round: land the run with `git orchestra land`"
                .into(),
        ),
    }
}

/// Runs the run's worker command in `wt` with what failed in `ORCHESTRA_FIXES_FILE`, under
/// the workers' sandbox when `fixers` has one.
fn command_round(
    round: &Round<'_>,
    number: u32,
    fixers: Fixers<'_>,
    ctx: &Context,
    wt: &Path,
    command: &str,
) -> Result<String, String> {
    let logs = ctx.dir.join(format!("{}-round-{number}", round.packet));
    let fixes = logs.join("fixes.md");
    fs_err::create_dir_all(&logs).map_err(|e| e.to_string())?;
    fs_err::write(&fixes, round.feedback).map_err(|e| e.to_string())?;
    let mut env = vec![
        ("ORCHESTRA_RUN".to_string(), round.run.to_string()),
        ("ORCHESTRA_PACKET".to_string(), round.packet.to_string()),
        (
            "ORCHESTRA_WORKTREE".to_string(),
            wt.to_string_lossy().into_owned(),
        ),
        (
            "ORCHESTRA_FIXES_FILE".to_string(),
            fixes.to_string_lossy().into_owned(),
        ),
        ("ORCHESTRA_ROUND".to_string(), number.to_string()),
    ];
    // Only the worker command gets the API keys the engine took out of its own environment.
    env.extend(orchestra_sys::exec::command_env::provider_settings());
    env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
    let log = logs.join("worker.log");
    let spec = Spec {
        command,
        dir: wt,
        env: &env,
        log: &log,
        timeout: ctx.timeout,
        confine: fixers.sandboxes.and_then(|s| s.worker.as_deref()),
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

/// Has `worker` (our agent, an agent CLI) work fix round `number` in `wt`: the failure is
/// the fixes of its job, so it continues the packet's conversation or CLI session.
fn in_process_round(
    round: &Round<'_>,
    number: u32,
    worker: &dyn Worker,
    ctx: &Context,
    wt: &Path,
) -> Result<String, String> {
    let turn = Turn {
        common_dir: &round.repo.common_dir,
        run: round.run,
        objective: &ctx.objective,
        packet: &ctx.packet,
        worktree: wt,
        feedback: round.feedback,
        round: number,
        timeout: ctx.timeout,
        log: format!("land-fix-{number}.log"),
    };
    agent_turn(worker, &turn)
}

/// One turn of a packet's in-process worker in a landing round: what it is told, where.
pub(super) struct Turn<'a> {
    pub common_dir: &'a Path,
    pub run: &'a str,
    pub objective: &'a str,
    pub packet: &'a Packet,
    /// Where the worker works: the round's worktree.
    pub worktree: &'a Path,
    /// What the worker is told: the fixes of its job.
    pub feedback: &'a str,
    pub round: u32,
    pub timeout: Duration,
    /// The transcript's file name in the packet's directory.
    pub log: String,
}

/// Has `worker` (our agent, an agent CLI) take `turn` as the next turn of the packet's kept
/// conversation or CLI session, and returns what it said last, or why it did not finish; its
/// activity (model and tool calls) is journaled with the run's, its transcript kept in the
/// packet's directory beside the run's.
pub(super) fn agent_turn(worker: &dyn Worker, turn: &Turn<'_>) -> Result<String, String> {
    let store = Mutex::new(Store::open(turn.common_dir).map_err(|e| e.to_string())?);
    let journal = |event: Event| {
        if let Ok(mut store) = store.lock()
            && let Err(e) = store.record(turn.run, &event)
        {
            tracing::warn!(error = %e, "an agent event of a landing round was not journaled");
        }
    };
    let dir = RunDir::new(turn.common_dir, turn.run).packet(&turn.packet.id);
    fs_err::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let log = dir.join(&turn.log);
    let stop = AtomicBool::new(false);
    let job = WorkerJob {
        run: turn.run,
        objective: turn.objective,
        packet: turn.packet,
        worktree: turn.worktree,
        common_dir: turn.common_dir,
        log: &log,
        stop: &stop,
        timeout: turn.timeout,
        journal: &journal,
        fixes: Some(turn.feedback),
        round: turn.round,
        dependencies: "",
        candidate: None,
    };
    let report = worker.work(&job);
    if !report.success {
        return Err(format!(
            "the packet's agent did not finish: {} (transcript: {})",
            report.summary,
            log.display()
        ));
    }
    Ok(report.summary)
}

/// Cleans up after fix round `number` worked in `wt` (`made` for the round): a round that
/// pushed nothing first keeps what the worktree holds under a ref, so a person can still look
/// at it, and puts the packet's own worktree back at the head; a worktree the round made is
/// removed.
pub(super) fn after_round(
    round: &Round<'_>,
    git: &Git,
    wt: &Path,
    number: u32,
    pushed: bool,
    made: bool,
) {
    if !pushed && !keep_unpushed(round, git, wt, number) {
        // Unkept work stays where it is, for a person.
        return;
    }
    if made {
        if let Err(e) = git.force_remove_worktree(wt) {
            tracing::warn!(error = %e, path = %wt.display(), "the fix round's worktree was not removed");
        }
        let _ = git.prune_worktrees();
    }
}

/// Commits what the round left in `wt` and keeps it under the round's ref; the packet's own
/// worktree goes back to the head. Returns false when that work could not be kept.
fn keep_unpushed(round: &Round<'_>, git: &Git, wt: &Path, number: u32) -> bool {
    use orchestra_git::git::commit;
    let Ok(pinned) = Git::pinned(&round.repo.common_dir, wt) else {
        return true;
    };
    let message = commit::message(
        &format!("Fix round {number} of pull request #{}", round.number),
        &commit::Trailers {
            run: round.run,
            packet: round.packet,
            role: "",
        },
    );
    let _ = commit::commit_all(&pinned, &message);
    let Ok(head) = pinned.head() else {
        return false;
    };
    if head == round.head_sha {
        return true;
    }
    let kept = orchestra_sys::names::landing_round_ref(round.run, round.packet, number);
    if let Err(e) = commit::keep_ref(git, &kept, &head) {
        tracing::warn!(error = %e, "the unpushed fix round was not kept");
        return false;
    }
    if let Err(e) = commit::reset_to(&pinned, round.head_sha) {
        tracing::warn!(error = %e, "the worktree was not put back at the pull request's head");
    }
    true
}

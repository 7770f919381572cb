//! One packet's pipeline: worktree → worker → commit → scope check → validation → review
//! (when a reviewer is configured; a rejection sends the findings back to the worker as
//! required fixes, for a bounded number of rounds).
//!
//! Each step is journaled before it runs and the packet's `phase` says where it is, so a
//! resumed packet restarts from its worktree's state: a finished worker is not run again, a
//! commit already made is found, and validation simply runs again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::journal::Journal;
use super::symbol_scope;
use super::worker::{PacketReview, Worker, WorkerJob};
use crate::gate;
use crate::plan::{Packet, Plan};
use crate::store::{Event, PacketRecord, PacketState, Phase, RunRecord};
use orchestra_git::git::commit::{self, Trailers};
use orchestra_git::git::{self as gitops, Created, RepoInfo, Reuse, WorktreeRequest};
use orchestra_sys::exec::process::{self, Outcome, Spec};
use orchestra_sys::names;

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
    /// killed process); [`work`] tries again and never returns this.
    Transient(String),
}

/// Runs packet `index` from wherever its record says it stopped, and journals the outcome.
pub(super) fn run(ctx: &Context<'_>, index: usize, record: &PacketRecord) {
    let id = ctx.plan.packets[index].id.clone();
    let _span = tracing::info_span!("packet", run = %ctx.run.id, packet = %id).entered();
    ctx.activity.start(&id);
    let outcome = match ctx.executor {
        Some(executor) => super::remote::pipeline(ctx, executor, index, record),
        None => pipeline(ctx, index, record),
    };
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
}

pub(super) fn record(ctx: &Context<'_>, event: Event) -> Result<(), Halt> {
    if ctx.journal.record_or_keep(event) {
        Ok(())
    } else {
        Err(Halt::Journal)
    }
}

fn pipeline(ctx: &Context<'_>, index: usize, rec: &PacketRecord) -> Result<String, Halt> {
    let packet = &ctx.plan.packets[index];
    let in_flight = matches!(rec.state, PacketState::Running | PacketState::Interrupted);
    let (mut phase, start) = if in_flight {
        let start = rec.start.clone().unwrap_or_else(|| ctx.run.base.clone());
        (rec.phase.unwrap_or(Phase::Worktree), start)
    } else {
        let start = start_point(ctx, packet)?;
        record(
            ctx,
            Event::PacketStarted {
                packet: packet.id.clone(),
                branch: rec.branch.clone(),
                worktree: rec.worktree.clone(),
                start: start.clone(),
                attempt: rec.attempt + 1,
            },
        )?;
        (Phase::Worktree, start)
    };
    // A packet started again (retried) is on its next attempt; its logs keep the old ones.
    let next;
    let rec = if in_flight {
        rec
    } else {
        next = PacketRecord {
            attempt: rec.attempt + 1,
            ..rec.clone()
        };
        &next
    };
    let wt = PathBuf::from(&rec.worktree);
    let dir = ctx.run_dir.packet(&packet.id);
    if in_flight {
        clear_stale_locks(ctx, &rec.branch, &wt)?;
        // The packet runs again: its state follows this run, not the one that stopped.
        record(
            ctx,
            Event::PacketResumed {
                packet: packet.id.clone(),
                attempt: rec.attempt.max(1),
                phase: phase.as_str().to_string(),
            },
        )?;
    }
    let env = environment(ctx, index, packet, &wt, &dir, &start)?;

    if ensure_ready(
        ctx,
        packet,
        rec,
        &wt,
        &env,
        &dir,
        &start,
        phase == Phase::Worktree,
    )? {
        phase = Phase::Worker;
    }

    if phase == Phase::Worker {
        // A retried packet's worker gets the note the retry left, the way fixes reach it.
        match ctx
            .journal
            .retry_note(&packet.id)
            .filter(|_| rec.attempt > 1)
        {
            Some(note) => {
                let text = format!("- A person retrying this packet says: {note}\n");
                let env =
                    with_fixes_file(&env, &dir.join(format!("retry-{}.md", rec.attempt)), &text)?;
                work(ctx, packet, rec, &wt, &env, &dir, Some((&text, 0)))?;
            }
            None => work(ctx, packet, rec, &wt, &env, &dir, None)?,
        }
        phase = Phase::Commit;
    }

    // The engine's last commit on the branch: what a worker's own commits are taken back to.
    let mut last = rec.commit.clone();
    let mut committed = None;
    if phase == Phase::Commit {
        let made = commit_step(ctx, packet, &wt, &start, last.as_deref())?;
        last = Some(made.0.clone());
        committed = Some(made);
    }

    let mut checked = validate(ctx, packet, rec, &wt, &env, &dir, &start, committed)?;
    let mut round = 0u32;
    let mut comment_rounds = 0u32;
    loop {
        // A failed check, or a rejecting review, goes back to the worker as required fixes.
        let counted = round - comment_rounds;
        let fixes = match next_step(ctx, packet, rec, Some(&wt), &start, checked, counted)? {
            // A person's comments on the diff are required fixes too, like a rejection's;
            // they do not count against the rounds the checks and the reviewer have.
            Step::Done(head) => match comments_for_round(ctx, packet, round + 1)? {
                None => return Ok(head),
                Some(comments) => {
                    comment_rounds += 1;
                    comments
                }
            },
            Step::Fix(fixes) => fixes,
        };
        round += 1;
        // The fixed commit replaces the rejected one, so nothing a check or a review rejected
        // (a file outside the scope, a secret) stays in the branch's history.
        commit::uncommit_to(&worktree_git(ctx, &wt)?, &start)
            .map_err(|e| Halt::Fail(format!("cannot take back the rejected commit: {e}")))?;
        let env = with_fixes_file(&env, &dir.join(format!("fixes-{round}.md")), &fixes)?;
        work(ctx, packet, rec, &wt, &env, &dir, Some((&fixes, round)))?;
        let committed = commit_step(ctx, packet, &wt, &start, last.as_deref())?;
        last = Some(committed.0.clone());
        checked = validate(ctx, packet, rec, &wt, &env, &dir, &start, Some(committed))?;
    }
}

/// Returns the comments a person sent on the packet's diff that no fix round took yet, and
/// journals that fix round `round` takes them.
pub(super) fn comments_for_round(
    ctx: &Context<'_>,
    packet: &Packet,
    round: u32,
) -> Result<Option<String>, Halt> {
    let Some(comments) = ctx.journal.pending_comments(&packet.id) else {
        return Ok(None);
    };
    record(
        ctx,
        Event::CommentsDelivered {
            packet: packet.id.clone(),
            round,
        },
    )?;
    Ok(Some(comments))
}

/// Ensures the packet's worktree on every (re)start — created fresh, re-added on its branch's
/// tip, or reused as it is, work in progress included — and, when the packet is in its
/// worktree phase, copies the included files, runs the setup command and journals it ready.
/// Returns true when that phase was done here.
#[allow(clippy::too_many_arguments)]
pub(super) fn ensure_ready(
    ctx: &Context<'_>,
    packet: &Packet,
    rec: &PacketRecord,
    wt: &Path,
    env: &[(String, String)],
    dir: &Path,
    start: &str,
    fresh_phase: bool,
) -> Result<bool, Halt> {
    let request = WorktreeRequest {
        repo: ctx.repo,
        path: wt,
        branch: &rec.branch,
        base: start,
        reuse: Reuse::ReportDirty,
    };
    let sparse = ctx
        .sparse
        .filter(|_| fresh_phase && !wt.exists())
        .and_then(|include| gitops::cone(&packet.files, include, &ctx.repo.toplevel));
    let created = match &sparse {
        Some(cone) => gitops::create_sparse(&request, cone),
        None => ensure_worktree(&request, fresh_phase),
    }
    .map_err(|e| Halt::Fail(format!("could not prepare the worktree: {e}")))?;
    if !fresh_phase {
        return Ok(false);
    }
    if matches!(
        created,
        Created::Fresh | Created::Recreated | Created::Recycled { .. }
    ) {
        gitops::copy_includes(&ctx.repo.toplevel, wt)
            .map_err(|e| Halt::Fail(format!("could not copy .worktreeinclude files: {e}")))?;
    }
    if let Some(setup) = ctx.setup {
        let log = dir.join("setup.log");
        let confine = ctx.sandboxes.setup.as_deref();
        let out = run_confined(ctx, &packet.id, setup, wt, env, &log, confine)?;
        if !out.success() {
            return Err(Halt::Fail(format!(
                "setup command `{setup}` failed ({}): {}",
                out.describe(ctx.timeout),
                out.tail
            )));
        }
    }
    record(
        ctx,
        Event::WorktreeReady {
            packet: packet.id.clone(),
            how: match created {
                Created::Fresh if sparse.is_some() => "fresh, sparse".to_string(),
                Created::Fresh => "fresh".to_string(),
                Created::Recreated => "recreated at its branch tip".to_string(),
                Created::Recycled { from } => format!("recycled from {}", from.display()),
                Created::Reused { dirty } => {
                    format!(
                        "reused{}",
                        if dirty { ", with work in progress" } else { "" }
                    )
                }
            },
        },
    )?;
    Ok(true)
}

/// What comes after a check: the packet is done, or it goes back to its worker with fixes.
pub(super) enum Step {
    Done(String),
    Fix(String),
}

/// Decides what follows `checked` in fix round `round`: a passed check goes to the review
/// (when there is one), a failed check or a rejection becomes fixes until the rounds run out.
pub(super) fn next_step(
    ctx: &Context<'_>,
    packet: &Packet,
    rec: &PacketRecord,
    wt: Option<&Path>,
    start: &str,
    checked: Checked,
    round: u32,
) -> Result<Step, Halt> {
    match checked {
        Checked::Failed { reason, fixes } => {
            if round >= ctx.fix_rounds {
                return Err(Halt::Fail(match round {
                    0 => reason,
                    n => format!(
                        "{reason}\n(after {n} fix round{})",
                        if n == 1 { "" } else { "s" }
                    ),
                }));
            }
            Ok(Step::Fix(fixes))
        }
        Checked::Passed(head) => {
            // The deterministic checks gate every packet, before any model sees it.
            let checks = gate::PacketChecks::for_repo(&ctx.repo.git());
            let verdict = review_step(ctx, packet, wt, start, &head, round, &[&checks])?;
            if verdict.verdict != gate::Decision::Approve {
                let fixes = required_fixes(&verdict);
                if round >= ctx.fix_rounds {
                    return Err(Halt::Fail(format!(
                        "the deterministic checks rejected {}{}; the work stays on {}:\n{fixes}",
                        &head[..head.len().min(12)],
                        match round {
                            0 => String::new(),
                            n => format!(" after {n} fix round{}", if n == 1 { "" } else { "s" }),
                        },
                        rec.branch
                    )));
                }
                return Ok(Step::Fix(fixes));
            }
            let Some(review) = ctx.review else {
                return Ok(Step::Done(head));
            };
            // The stored verdict names both reviewers, so a gate can tell what approved it.
            let verdict = review_step(
                ctx,
                packet,
                wt,
                start,
                &head,
                round,
                &[&checks, review.reviewer],
            )?;
            if verdict.verdict == gate::Decision::Approve {
                return Ok(Step::Done(head));
            }
            let fixes = required_fixes(&verdict);
            if round >= review.max_rounds {
                return Err(Halt::Fail(format!(
                    "the review rejected {} after {round} fix round{}; the work stays on {}:\n{fixes}",
                    &head[..head.len().min(12)],
                    if round == 1 { "" } else { "s" },
                    rec.branch
                )));
            }
            Ok(Step::Fix(fixes))
        }
    }
}

/// Writes `fixes` to `file` and returns `env` with `ORCHESTRA_FIXES_FILE` naming it.
pub(super) fn with_fixes_file(
    env: &[(String, String)],
    file: &Path,
    fixes: &str,
) -> Result<Vec<(String, String)>, Halt> {
    fs_err::write(file, fixes)
        .map_err(|e| Halt::Fail(format!("cannot write the required fixes: {e}")))?;
    let mut env = env.to_vec();
    env.push((
        "ORCHESTRA_FIXES_FILE".into(),
        file.to_string_lossy().into_owned(),
    ));
    Ok(env)
}

/// What the scope check and the validation commands found.
pub(super) enum Checked {
    /// Both passed at this commit.
    Passed(String),
    /// One failed: `reason` for the user, `fixes` for the worker that can repair it.
    Failed { reason: String, fixes: String },
}

/// Runs the packet's worker once, with the review's required fixes when this is a fix round.
pub(super) fn work(
    ctx: &Context<'_>,
    packet: &Packet,
    rec: &PacketRecord,
    wt: &Path,
    env: &[(String, String)],
    dir: &Path,
    fixes: Option<(&str, u32)>,
) -> Result<(), Halt> {
    let mut tries = 1u32;
    loop {
        match work_once(ctx, packet, rec, wt, env, dir, fixes, tries) {
            Err(Halt::Transient(reason)) if tries <= ctx.retries => {
                let delay = ctx.retry_delay.saturating_mul(1 << (tries - 1).min(6));
                record(
                    ctx,
                    Event::WorkerRetrying {
                        packet: packet.id.clone(),
                        attempt: tries + 1,
                        reason: first_line(&reason),
                        delay_ms: delay.as_millis() as u64,
                    },
                )?;
                if !wait_unless_stopped(ctx.stop, delay) {
                    return Err(Halt::Interrupted);
                }
                tries += 1;
            }
            Err(Halt::Transient(reason)) => {
                return Err(Halt::Fail(if tries > 1 {
                    format!("{reason}\n(tried {tries} times)")
                } else {
                    reason
                }));
            }
            other => return other,
        }
    }
}

/// Most characters of one dependency's account in a dependent's task.
const DEPENDENCY_CHARS: usize = 1_200;

/// Returns what each packet `packet` depends on did, for its worker: the files its work
/// changed and what its worker said of it, bounded per dependency.
pub(super) fn dependency_summary(ctx: &Context<'_>, packet: &Packet) -> String {
    if let Some(known) = ctx.dependencies {
        return known.to_string();
    }
    if packet.depends_on.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for dep in &packet.depends_on {
        let Ok(Some(rec)) = ctx.journal.packet(dep) else {
            continue;
        };
        let changed = match (&rec.start, &rec.commit) {
            (Some(start), Some(commit)) => {
                commit::changed_paths(&ctx.repo.git(), start, commit).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let said = ctx.journal.worker_account(dep).unwrap_or_default();
        let title = ctx
            .plan
            .packets
            .iter()
            .find(|p| &p.id == dep)
            .map_or("", |p| p.title.as_str());
        let text = format!(
            "- `{dep}` ({title}), now in this worktree: changed {}. Its worker said: {}",
            if changed.is_empty() {
                "no file".to_string()
            } else {
                changed.join(", ")
            },
            orchestra_sys::redact::clip(said.trim(), DEPENDENCY_CHARS)
        );
        out.push_str(&text);
        out.push('\n');
    }
    out
}

/// Returns the first line of `text`, for a journal entry.
fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

/// Sleeps `delay` in short steps; returns false as soon as `stop` is set.
fn wait_unless_stopped(stop: &AtomicBool, delay: Duration) -> bool {
    let until = std::time::Instant::now() + delay;
    while std::time::Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(delay));
    }
    !stop.load(Ordering::SeqCst)
}

/// Returns `<dir>/<stem>.log`, or when a run that stopped midway left that log, the first
/// `<stem>-resumed-<n>.log` not taken: every run of a worker keeps its log.
fn unused_log(dir: &Path, stem: &str) -> PathBuf {
    let first = dir.join(format!("{stem}.log"));
    if !first.exists() {
        return first;
    }
    (1u32..)
        .map(|n| dir.join(format!("{stem}-resumed-{n}.log")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Runs the packet's worker once (its `tries`-th try of this step).
#[allow(clippy::too_many_arguments)]
fn work_once(
    ctx: &Context<'_>,
    packet: &Packet,
    rec: &PacketRecord,
    wt: &Path,
    env: &[(String, String)],
    dir: &Path,
    fixes: Option<(&str, u32)>,
    tries: u32,
) -> Result<(), Halt> {
    let attempt = rec.attempt.max(1);
    let again = if tries > 1 {
        format!("-try-{tries}")
    } else {
        String::new()
    };
    let stem = match fixes {
        None | Some((_, 0)) => format!("worker-{attempt}{again}"),
        Some((_, round)) => format!("worker-{attempt}-fix-{round}{again}"),
    };
    let log = unused_log(dir, &stem);
    match (ctx.worker_cmd, ctx.worker) {
        (Some(worker_cmd), _) => {
            // Unconfined, it could also have written the other packets' worktrees.
            let siblings = ctx.sandboxes.worker.is_none();
            watched(ctx, &packet.id, siblings, || {
                work_external(ctx, packet, wt, env, &log, worker_cmd)
            })?
        }
        (None, Some(worker)) if worker.commits_itself() => watched(ctx, &packet.id, true, || {
            work_in_process(ctx, worker, packet, wt, &log, fixes)
        })?,
        (None, Some(worker)) => work_in_process(ctx, worker, packet, wt, &log, fixes)?,
        (None, None) => {
            return Err(Halt::Fail(
                "no worker: pass --worker-cmd or configure a model profile".to_string(),
            ));
        }
    }
    Ok(())
}

/// Runs `work`, a worker's run, between two snapshots of what lies outside the packet's
/// worktree (see `watch`); a difference fails the packet, naming what changed, whatever
/// the worker's own outcome.
fn watched(
    ctx: &Context<'_>,
    packet: &str,
    siblings: bool,
    work: impl FnOnce() -> Result<(), Halt>,
) -> Result<(), Halt> {
    let snapshot = || super::watch::snapshot(ctx, packet, siblings).map_err(Halt::Fail);
    let before = snapshot()?;
    let outcome = work();
    let changed = super::watch::changes(ctx.activity, packet, &before, &snapshot()?);
    if changed.is_empty() {
        return outcome;
    }
    Err(Halt::Fail(super::watch::outside_reason(&changed)))
}

/// Runs an in-process worker once and journals it.
fn work_in_process(
    ctx: &Context<'_>,
    worker: &dyn Worker,
    packet: &Packet,
    wt: &Path,
    log: &Path,
    fixes: Option<(&str, u32)>,
) -> Result<(), Halt> {
    record(
        ctx,
        Event::WorkerStarted {
            packet: packet.id.clone(),
            command: worker.label(packet),
            log: log.to_string_lossy().into_owned(),
        },
    )?;
    let started = std::time::Instant::now();
    let job = WorkerJob {
        run: &ctx.run.id,
        objective: &ctx.run.objective,
        packet,
        worktree: wt,
        common_dir: &ctx.repo.common_dir,
        log,
        stop: ctx.stop,
        timeout: ctx.timeout,
        journal: &|event| {
            ctx.journal.record_or_keep(event);
        },
        fixes: fixes.map(|f| f.0),
        dependencies: &dependency_summary(ctx, packet),
    };
    let report = worker.work(&job);
    if report.interrupted {
        return Err(Halt::Interrupted);
    }
    record(
        ctx,
        Event::WorkerFinished {
            packet: packet.id.clone(),
            exit_code: Some(if report.success { 0 } else { 1 }),
            duration_ms: started.elapsed().as_millis() as u64,
            timed_out: false,
            tail: report.summary.clone(),
        },
    )?;
    if !report.success {
        let reason = format!(
            "agent did not complete: {}; its work stays in {} — transcript: {}",
            report.summary,
            wt.display(),
            log.display()
        );
        return Err(if report.transient {
            Halt::Transient(reason)
        } else {
            Halt::Fail(reason)
        });
    }
    Ok(())
}

/// Runs the external worker command once in the packet's worktree and journals it; a
/// timeout or a kill is transient, a non-zero exit is the worker's answer.
fn work_external(
    ctx: &Context<'_>,
    packet: &Packet,
    wt: &Path,
    env: &[(String, String)],
    log: &Path,
    worker_cmd: &str,
) -> Result<(), Halt> {
    record(
        ctx,
        Event::WorkerStarted {
            packet: packet.id.clone(),
            command: worker_cmd.to_string(),
            log: log.to_string_lossy().into_owned(),
        },
    )?;
    // The worker command (an agent CLI, usually) gets the API keys the engine took out
    // of its own environment; setup and validation commands do not.
    let mut env = env.to_vec();
    env.extend(orchestra_sys::exec::command_env::provider_settings());
    env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
    let confine = ctx.sandboxes.worker.as_deref();
    let out = run_confined(ctx, &packet.id, worker_cmd, wt, &env, log, confine)?;
    record(
        ctx,
        Event::WorkerFinished {
            packet: packet.id.clone(),
            exit_code: out.exit_code,
            duration_ms: out.duration.as_millis() as u64,
            timed_out: out.timed_out,
            tail: out.tail.clone(),
        },
    )?;
    if !out.success() {
        let reason = format!(
            "worker failed ({}); its work stays in {} — log: {}\n{}",
            out.describe(ctx.timeout),
            wt.display(),
            log.display(),
            out.tail
        );
        // A timeout or a kill may pass on another try; an exit status is the worker's say.
        let killed = out.exit_code.is_none();
        return Err(if out.timed_out || killed {
            Halt::Transient(reason)
        } else {
            Halt::Fail(reason)
        });
    }
    Ok(())
}

/// Commits what the worker left in the worktree, with the engine's identity and trailers, and
/// returns the branch tip with the paths it changed since `start`.
///
/// An external worker's own commits are taken back first (to `last`, the engine's previous
/// commit, see `commit::take_back_worker_commits`): only the engine's commits, whose whole
/// diff the scope check sees, enter the branch. Our agents cannot commit (their commands
/// cannot write the git directory), and the merges of their subtasks are the engine's.
pub(super) fn commit_step(
    ctx: &Context<'_>,
    packet: &Packet,
    wt: &Path,
    start: &str,
    last: Option<&str>,
) -> Result<(String, Vec<String>), Halt> {
    let message = commit::message(
        &packet.title,
        &Trailers {
            run: &ctx.run.id,
            packet: &packet.id,
            role: &packet.role,
        },
    );
    let git = worktree_git(ctx, wt)?;
    if ctx.worker_cmd.is_some() || ctx.worker.is_some_and(|w| w.commits_itself()) {
        let taken = commit::take_back_worker_commits(&git, start, last)
            .map_err(|e| Halt::Fail(format!("cannot take back the worker's own commits: {e}")))?;
        if let Some(tip) = taken {
            tracing::warn!(%tip, "the worker committed itself; its commits are folded into the engine's");
        }
    }
    let made = commit::commit_all(&git, &message)
        .map_err(|e| Halt::Fail(format!("could not commit the worker's changes: {e}")))?;
    let head = match made {
        Some(head) => head,
        None => git
            .head()
            .map_err(|e| Halt::Fail(format!("cannot read the packet branch: {e}")))?,
    };
    let changed = commit::changed_paths(&git, start, &head)
        .map_err(|e| Halt::Fail(format!("cannot list the packet's changes: {e}")))?;
    record(
        ctx,
        Event::PacketCommitted {
            packet: packet.id.clone(),
            commit: head.clone(),
            // Journaled and shown: a file named after a token is named redacted.
            changed: changed
                .iter()
                .map(|p| crate::gate::mask_secrets(p))
                .collect(),
        },
    )?;
    Ok((head, changed))
}

/// Checks the packet's scope and runs its validation commands; returns the validated commit,
/// or what failed with the fixes its worker needs to make.
///
/// `committed` is the tip and changed paths the commit step just found; a resumed packet passes
/// `None` and they are read from its worktree.
#[allow(clippy::too_many_arguments)]
pub(super) fn validate(
    ctx: &Context<'_>,
    packet: &Packet,
    rec: &PacketRecord,
    wt: &Path,
    env: &[(String, String)],
    dir: &Path,
    start: &str,
    committed: Option<(String, Vec<String>)>,
) -> Result<Checked, Halt> {
    // Validate: scope first (enforced, not advised), then the packet's own commands.
    let (head, changed) = match committed {
        Some(known) => known,
        None => {
            let git = worktree_git(ctx, wt)?;
            let head = git
                .head()
                .map_err(|e| Halt::Fail(format!("cannot read the packet branch: {e}")))?;
            let changed = commit::changed_paths(&git, start, &head)
                .map_err(|e| Halt::Fail(format!("cannot list the packet's changes: {e}")))?;
            (head, changed)
        }
    };
    if changed.is_empty() && !packet.files.is_empty() && !packet.may_be_empty {
        return Ok(Checked::Failed {
            reason: format!(
                "the worker changed no file (declared: {}); nothing was committed. If the packet may rightly change nothing, mark it `may_be_empty = true` in the plan",
                packet.files.join(", ")
            ),
            fixes: format!(
                "- No file changed: the worktree is exactly as the packet started, so none of the work this packet asks for was done. Make the changes in {} and check them before you finish.\n",
                packet.files.join(", ")
            ),
        });
    }
    let scope = packet
        .scope()
        .map_err(|e| Halt::Fail(format!("invalid file scope: {e}")))?;
    let outside: Vec<String> = scope
        .violations(changed.iter().map(String::as_str))
        .into_iter()
        .map(|p| orchestra_sys::redact::quote_path(&crate::gate::mask_secrets(&p)).into_owned())
        .collect();
    if !outside.is_empty() {
        return Ok(Checked::Failed {
            reason: format!(
                "changed files outside the packet's declared scope: {} (declared: {}); the commit is kept on {}",
                outside.join(", "),
                packet.files.join(", "),
                rec.branch
            ),
            fixes: format!(
                "- The scope check failed: this packet may change only {}, but it changed {}. Undo the changes to those files (restore them as they were at the start), and keep your work inside the declared files.\n",
                packet.files.join(", "),
                outside.join(", ")
            ),
        });
    }
    if !packet.symbols.is_empty() {
        for f in symbol_scope::findings(&ctx.repo.toplevel, packet, start, &head, &changed) {
            tracing::warn!(file = %f.file, lines = %f.lines, "edits outside declared symbols");
            record(
                ctx,
                Event::ScopeFinding {
                    packet: packet.id.clone(),
                    file: f.file,
                    lines: f.lines,
                    declared: f.declared,
                },
            )?;
        }
    }
    for (n, command) in packet.validation.iter().enumerate() {
        let log = dir.join(format!("validate-{}.log", n + 1));
        // Validation commands of a packet our agents work on run in the agents' sandbox, an
        // external worker's in the configured one: a model may have written them.
        let confine = match (ctx.worker_cmd, ctx.worker) {
            (None, Some(w)) => w.confine(),
            _ => ctx.sandboxes.validation.as_deref(),
        };
        let out = run_confined(ctx, &packet.id, command, wt, env, &log, confine)?;
        record(
            ctx,
            Event::ValidationFinished {
                packet: packet.id.clone(),
                command: command.clone(),
                exit_code: out.exit_code,
                duration_ms: out.duration.as_millis() as u64,
                timed_out: out.timed_out,
                tail: out.tail.clone(),
            },
        )?;
        if !out.success() {
            return Ok(Checked::Failed {
                reason: format!(
                    "validation `{command}` failed ({}); log: {}\n{}",
                    out.describe(ctx.timeout),
                    log.display(),
                    out.tail
                ),
                fixes: format!(
                    "- The validation command `{command}` failed ({}). Make it pass. The end of its output:\n\n```\n{}\n```\n",
                    out.describe(ctx.timeout),
                    out.tail.trim_end()
                ),
            });
        }
    }
    Ok(Checked::Passed(head))
}

/// Reviews `start..head` with the configured reviewer, storing the verdict in git, and
/// journals the outcome.
fn review_step(
    ctx: &Context<'_>,
    packet: &Packet,
    wt: Option<&Path>,
    start: &str,
    head: &str,
    round: u32,
    reviewers: &[&dyn gate::Reviewer],
) -> Result<gate::Verdict, Halt> {
    let packet_ref = gate::PacketRef {
        run: ctx.run.id.clone(),
        packet: packet.clone(),
        // The worktree is at `head` now: committed and validated (a packet that ran elsewhere
        // has none here; the review makes a scratch checkout).
        checkout: wt.map(Path::to_path_buf),
    };
    record(
        ctx,
        Event::ReviewStarted {
            packet: packet.id.clone(),
            commit: head.to_string(),
            reviewer: reviewers
                .last()
                .map_or_else(String::new, |r| r.name().to_string()),
            round,
        },
    )?;
    let verdict = match gate::review(ctx.repo, start, head, Some(&packet_ref), reviewers) {
        Ok(v) => v,
        // A review cut short by a stop (a signal, a spent budget) is redone on resume.
        Err(_) if ctx.stop.load(Ordering::SeqCst) => return Err(Halt::Interrupted),
        Err(e) => return Err(Halt::Fail(format!("the review could not be done: {e}"))),
    };
    record(
        ctx,
        Event::PacketReviewed {
            packet: packet.id.clone(),
            commit: head.to_string(),
            // The reviewer this step added: the deterministic checks come first on their own.
            reviewer: reviewers
                .last()
                .map_or_else(|| verdict.reviewer.clone(), |r| r.name().to_string()),
            approved: verdict.verdict == gate::Decision::Approve,
            blocking: verdict
                .findings
                .iter()
                .filter(|f| f.severity.rejects())
                .count(),
            round,
            findings: blocking_lines(&verdict),
        },
    )?;
    Ok(verdict)
}

/// Most blocking findings journaled with a review, and most characters per finding.
const JOURNALED_FINDINGS: usize = 5;
const FINDING_CHARS: usize = 240;

/// Returns one bounded line per blocking finding, for the journal and the reports.
fn blocking_lines(verdict: &gate::Verdict) -> Vec<String> {
    verdict.blocking_lines(JOURNALED_FINDINGS, FINDING_CHARS)
}

/// Returns the review's findings as the worker's list of required fixes.
fn required_fixes(verdict: &gate::Verdict) -> String {
    let mut out = String::from(
        "The review rejected your change. Fix these problems (blocking ones first):\n",
    );
    for f in &verdict.findings {
        let place = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" {file}:{line}"),
            (Some(file), None) => format!(" {file}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "- [{}] {}{place}: {} — {}\n",
            f.severity.as_str(),
            f.category,
            f.evidence.trim(),
            f.suggestion.trim()
        ));
    }
    out
}

/// Returns the commit a packet starts from: the run's base without dependencies, the single
/// dependency's work, or the in-memory merge of all its dependencies' work.
pub(super) fn start_point(ctx: &Context<'_>, packet: &Packet) -> Result<String, Halt> {
    let mut start: Option<String> = None;
    for dep in &packet.depends_on {
        let commit = ctx
            .journal
            .packet(dep)
            .map_err(|_| Halt::Journal)?
            .and_then(|r| r.commit)
            .ok_or_else(|| Halt::Fail(format!("dependency `{dep}` has no recorded commit")))?;
        start = Some(match start {
            None => commit,
            Some(acc) => {
                let message = format!(
                    "Merge the dependencies of {}\n\nOrchestra-Run: {}\nOrchestra-Packet: {}\n",
                    packet.id, ctx.run.id, packet.id
                );
                match ctx.repo.git().merge_in_memory(&acc, &commit, &message) {
                    Ok(gitops::MergeOutcome::Merged(id)) => id,
                    Ok(gitops::MergeOutcome::Conflict(paths)) => {
                        return Err(Halt::Fail(format!(
                            "its dependencies' work conflicts in {}; resolve by making one depend on the other",
                            paths.join(", ")
                        )));
                    }
                    Err(e) => return Err(Halt::Fail(format!("cannot merge dependencies: {e}"))),
                }
            }
        });
    }
    Ok(start.unwrap_or_else(|| ctx.run.base.clone()))
}

/// Removes lock files a killed process of this packet may have left: its branch ref's lock and
/// its worktree's index and HEAD locks. Only this packet's own locks are touched, and the run
/// lock guarantees that no other git-orchestra process drives this packet; its previous worker
/// was killed before the resume started. A worktree whose `.git` its worker changed fails the
/// packet here (the link is put back, see [`gitops::Git::pinned`]).
fn clear_stale_locks(ctx: &Context<'_>, branch: &str, wt: &Path) -> Result<(), Halt> {
    let mut locks = vec![
        ctx.repo
            .common_dir
            .join(format!("refs/heads/{branch}.lock")),
    ];
    match gitops::Git::pinned(&ctx.repo.common_dir, wt) {
        Ok(git) => {
            for name in ["index.lock", "HEAD.lock"] {
                if let Ok(path) = git.git_path(name) {
                    locks.push(PathBuf::from(path));
                }
            }
        }
        Err(e @ gitops::WorktreeError::GitLinkChanged { .. }) => {
            return Err(Halt::Fail(format!("cannot run git in the worktree: {e}")));
        }
        // A worktree that is gone is created again; its locks went with it.
        Err(_) => {}
    }
    for lock in locks {
        if lock.exists() {
            tracing::warn!(lock = %lock.display(), "removing a lock file left by a killed process");
            let _ = fs_err::remove_file(&lock);
        }
    }
    Ok(())
}

/// Returns the engine's git runner for the packet's worktree, pinned to the git directory
/// registered for it; a `.git` the worker changed fails the packet.
pub(super) fn worktree_git(ctx: &Context<'_>, wt: &Path) -> Result<gitops::Git, Halt> {
    gitops::Git::pinned(&ctx.repo.common_dir, wt)
        .map_err(|e| Halt::Fail(format!("cannot run git in the worktree: {e}")))
}

/// Creates or reuses the packet's worktree.
///
/// When the packet has not reached its worker yet (`before_worker`), whatever is in the
/// worktree came from an interrupted creation or setup, never from a worker, so it may be
/// repaired: a half-written registration is dropped, a half-populated directory is moved aside
/// (not deleted), and a partial checkout is reset to the branch tip.
fn ensure_worktree(
    request: &WorktreeRequest<'_>,
    before_worker: bool,
) -> Result<Created, gitops::WorktreeError> {
    let created = gitops::create_repairing(request, before_worker)?;
    if before_worker && created == (Created::Reused { dirty: true }) {
        gitops::Git::pinned(&request.repo.common_dir, request.path)?.reset_hard()?;
        return Ok(Created::Reused { dirty: false });
    }
    Ok(created)
}

/// Runs one command in the worktree under `confine` (as the user when `None`), turning an
/// interrupt or a spawn failure into a halt. Every command of a packet starts here.
fn run_confined(
    ctx: &Context<'_>,
    packet: &str,
    command: &str,
    wt: &Path,
    env: &[(String, String)],
    log: &Path,
    confine: Option<&process::Confine>,
) -> Result<Outcome, Halt> {
    let spec = Spec {
        command,
        dir: wt,
        env,
        log,
        timeout: ctx.timeout,
        confine,
    };
    let mut on_spawn = |pgid: i32| {
        ctx.journal.record_or_keep(Event::WorkerSpawned {
            packet: packet.to_string(),
            pgid,
        });
    };
    let out =
        process::run(&spec, ctx.stop, &mut on_spawn).map_err(|e| Halt::Fail(e.to_string()))?;
    if out.interrupted {
        return Err(Halt::Interrupted);
    }
    Ok(out)
}

/// Returns the variables every command of the packet sees, writing the packet file they name.
pub(super) fn environment(
    ctx: &Context<'_>,
    index: usize,
    packet: &Packet,
    wt: &Path,
    dir: &Path,
    start: &str,
) -> Result<Vec<(String, String)>, Halt> {
    let file = ctx.run_dir.packet_file(&packet.id);
    let mut value = serde_json::to_value(packet)
        .map_err(|e| Halt::Fail(format!("cannot serialise the packet: {e}")))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("run".into(), ctx.run.id.clone().into());
        map.insert("objective".into(), ctx.run.objective.clone().into());
        map.insert("base".into(), start.into());
        map.insert(
            "branch".into(),
            names::packet_branch(&ctx.run.id, &packet.id).into(),
        );
        map.insert("worktree".into(), wt.to_string_lossy().into_owned().into());
        let deps = dependency_summary(ctx, packet);
        if !deps.is_empty() {
            map.insert("dependencies".into(), deps.into());
        }
    }
    let text = serde_json::to_string_pretty(&value)
        .map_err(|e| Halt::Fail(format!("cannot serialise the packet: {e}")))?;
    fs_err::create_dir_all(dir)
        .and_then(|()| fs_err::write(&file, text))
        .map_err(|e| Halt::Fail(format!("cannot write the packet file: {e}")))?;
    Ok(vec![
        ("ORCHESTRA_RUN".into(), ctx.run.id.clone()),
        ("ORCHESTRA_PACKET".into(), packet.id.clone()),
        (
            "ORCHESTRA_PACKET_FILE".into(),
            file.to_string_lossy().into_owned(),
        ),
        (
            "ORCHESTRA_WORKTREE".into(),
            wt.to_string_lossy().into_owned(),
        ),
        ("ORCHESTRA_BASE".into(), start.to_string()),
        (
            "ORCHESTRA_PORT_BASE".into(),
            names::port_base(&ctx.run.id, index).to_string(),
        ),
        (
            "ORCHESTRA_PORT_COUNT".into(),
            names::PORTS_PER_PACKET.to_string(),
        ),
    ])
}

//! The worker phase: the packet's worker (an external command or an in-process worker such as
//! our agents) run in its worktree, watched for writes outside it, journaled, and tried again
//! after a failure that may pass on another try.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::started::dependency_summary;
use super::{Halt, Step};
use crate::engine::worker::{Worker, WorkerJob};
use crate::store::Event;

impl Step<'_, '_> {
    /// Runs the worker of a packet reaching its worker phase: a retried packet's worker gets
    /// the note the retry left, the way fixes reach it.
    pub(super) fn first_work(&self) -> Result<(), Halt> {
        let note = self
            .ctx
            .journal
            .retry_note(&self.packet.id)
            .filter(|_| self.rec.attempt > 1);
        match note {
            Some(note) => {
                let text = format!("- A person retrying this packet says: {note}\n");
                let file = self.dir.join(format!("retry-{}.md", self.rec.attempt));
                self.fixing(&file, &text)?.work(Some((&text, 0)))
            }
            None => self.work(None),
        }
    }

    /// Runs the packet's worker once, with the required fixes and their round when this is a
    /// fix round; a transient failure is tried again after a doubling wait, as often as
    /// `[run] retries` allows.
    pub(in crate::engine) fn work(&self, fixes: Option<(&str, u32)>) -> Result<(), Halt> {
        let ctx = self.ctx;
        let mut tries = 1u32;
        loop {
            match self.work_once(fixes, tries) {
                Err(Halt::Transient(reason)) if tries <= ctx.retries => {
                    let delay = ctx.retry_delay.saturating_mul(1 << (tries - 1).min(6));
                    self.record(Event::WorkerRetrying {
                        packet: self.packet.id.clone(),
                        attempt: tries + 1,
                        reason: first_line(&reason),
                        delay_ms: delay.as_millis() as u64,
                    })?;
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

    /// Runs the packet's worker once (its `tries`-th try of this step).
    fn work_once(&self, fixes: Option<(&str, u32)>, tries: u32) -> Result<(), Halt> {
        let ctx = self.ctx;
        let attempt = self.rec.attempt.max(1);
        let again = if tries > 1 {
            format!("-try-{tries}")
        } else {
            String::new()
        };
        let stem = match fixes {
            None | Some((_, 0)) => format!("worker-{attempt}{again}"),
            Some((_, round)) => format!("worker-{attempt}-fix-{round}{again}"),
        };
        let log = unused_log(&self.dir, &stem);
        // A worker command run's tester is its own command when one is configured.
        let tester_cmd = ctx.tester.and_then(|t| t.command.as_deref());
        let worker_cmd = match ctx.worker_cmd {
            Some(own) if self.tester => Some(tester_cmd.unwrap_or(own)),
            own => own,
        };
        match (worker_cmd, ctx.worker) {
            (Some(worker_cmd), _) => {
                // Unconfined, it could also have written the other packets' worktrees; confined
                // where the kernel refuses it the main checkout, it cannot have written there.
                let siblings = ctx.sandboxes.worker.is_none();
                let main = siblings || !ctx.sandboxes.worker_contained;
                let seen = crate::engine::watch::Seen { siblings, main };
                self.watched(seen, || self.work_external(&log, worker_cmd))?
            }
            (None, Some(worker)) if worker.commits_itself() => {
                let seen = crate::engine::watch::Seen {
                    siblings: true,
                    main: true,
                };
                self.watched(seen, || self.work_in_process(worker, &log, fixes))?
            }
            (None, Some(worker)) => self.work_in_process(worker, &log, fixes)?,
            (None, None) => {
                return Err(Halt::Fail(
                    "no worker: pass --worker-cmd or configure a model profile".to_string(),
                ));
            }
        }
        Ok(())
    }

    /// Runs `work`, a worker's run, between two snapshots of what lies outside the packet's
    /// worktree (see `watch`; `seen` says whether they look at the other packets' worktrees
    /// and at the main checkout); a difference fails the packet, naming what changed, whatever
    /// the worker's own outcome.
    fn watched(
        &self,
        seen: crate::engine::watch::Seen,
        work: impl FnOnce() -> Result<(), Halt>,
    ) -> Result<(), Halt> {
        let (ctx, packet) = (self.ctx, self.packet.id.as_str());
        let snapshot = || crate::engine::watch::snapshot(ctx, packet, seen).map_err(Halt::Fail);
        let before = snapshot()?;
        let outcome = work();
        let changed = crate::engine::watch::changes(ctx.activity, packet, &before, &snapshot()?);
        if changed.is_empty() {
            return outcome;
        }
        Err(Halt::Fail(crate::engine::watch::outside_reason(&changed)))
    }

    /// Runs an in-process worker once, logging to `log`, and journals it.
    fn work_in_process(
        &self,
        worker: &dyn Worker,
        log: &Path,
        fixes: Option<(&str, u32)>,
    ) -> Result<(), Halt> {
        let (ctx, packet, wt) = (self.ctx, self.packet, self.wt.as_path());
        self.record(Event::WorkerStarted {
            packet: packet.id.clone(),
            command: worker.label(packet),
            log: log.to_string_lossy().into_owned(),
        })?;
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
            round: fixes.map_or(0, |f| f.1),
            dependencies: &dependency_summary(ctx, packet),
            candidate: self.candidate,
        };
        let report = worker.work(&job);
        if report.interrupted {
            return Err(Halt::Interrupted);
        }
        self.record(Event::WorkerFinished {
            packet: packet.id.clone(),
            exit_code: Some(if report.success { 0 } else { 1 }),
            duration_ms: started.elapsed().as_millis() as u64,
            timed_out: false,
            tail: report.summary.clone(),
        })?;
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

    /// Runs the external worker command once in the packet's worktree, logging to `log`, and
    /// journals it; a timeout or a kill is transient, a non-zero exit is the worker's answer.
    fn work_external(&self, log: &Path, worker_cmd: &str) -> Result<(), Halt> {
        let packet = self.packet;
        self.record(Event::WorkerStarted {
            packet: packet.id.clone(),
            command: worker_cmd.to_string(),
            log: log.to_string_lossy().into_owned(),
        })?;
        // The worker command (an agent CLI, usually) gets the API keys the engine took out
        // of its own environment; setup and validation commands do not.
        let mut env = self.env.clone();
        env.extend(orchestra_sys::exec::command_env::provider_settings());
        env.extend(orchestra_sys::exec::secret_env::stashed().iter().cloned());
        let confine = self.ctx.sandboxes.worker.as_deref();
        let out = self.run_command(worker_cmd, &env, log, confine)?;
        self.record(Event::WorkerFinished {
            packet: packet.id.clone(),
            exit_code: out.exit_code,
            duration_ms: out.duration.as_millis() as u64,
            timed_out: out.timed_out,
            tail: out.tail.clone(),
        })?;
        if !out.success() {
            let reason = format!(
                "worker failed ({}); its work stays in {} — log: {}\n{}",
                out.describe(self.ctx.timeout),
                self.wt.display(),
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

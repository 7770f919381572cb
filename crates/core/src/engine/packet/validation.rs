//! The validation phase: the scope check, then the packet's own validation commands in its
//! worktree, confined like the worker that wrote them.
//!
//! The commands run one after another in one process — one sandbox launch for the list, as a
//! merge's validation does (see [`orchestra_sys::exec::batch`]) — and each keeps its own
//! timeout, log (`validate-<n>.log`), outcome and `ValidationFinished` event. The first that
//! fails ends the list: later commands would only repeat it.

use std::path::PathBuf;

use super::{Halt, Step};
use crate::store::Event;
use orchestra_git::git::commit;
use orchestra_sys::exec::batch::{BatchSpec, run_batch_spawned};
use orchestra_sys::exec::process::{Confine, Outcome};

/// What the scope check and the validation commands found.
pub(in crate::engine) enum Checked {
    /// Both passed at this commit.
    Passed(String),
    /// One failed: `reason` for the user, `fixes` for the worker that can repair it.
    Failed { reason: String, fixes: String },
}

impl Step<'_, '_> {
    /// Checks the packet's scope and runs its validation commands; returns the validated
    /// commit, or what failed with the fixes its worker needs to make.
    ///
    /// `committed` is the tip and changed paths the commit step just found; a resumed packet
    /// passes `None` and they are read from its worktree.
    pub(in crate::engine) fn validate(
        &self,
        committed: Option<(String, Vec<String>)>,
    ) -> Result<Checked, Halt> {
        let (ctx, packet) = (self.ctx, self.packet);
        // Validate: scope first (enforced, not advised), then the packet's own commands.
        let (head, changed) = match committed {
            Some(known) => known,
            None => {
                let git = self.git()?;
                let head = git
                    .head()
                    .map_err(|e| Halt::Fail(format!("cannot read the packet branch: {e}")))?;
                let changed = commit::changed_paths(&git, &self.start, &head)
                    .map_err(|e| Halt::Fail(format!("cannot list the packet's changes: {e}")))?;
                (head, changed)
            }
        };
        if let Some(failed) = self.check_scope(&head, &changed)? {
            return Ok(failed);
        }
        // Validation commands of a packet our agents work on run in the agents' sandbox, an
        // external worker's in the configured one: a model may have written them.
        let confine = match (ctx.worker_cmd, ctx.worker) {
            (None, Some(w)) => w.confine(),
            _ => ctx.sandboxes.validation.as_deref(),
        };
        let ran = self.run_validation_commands(&packet.validation, confine)?;
        for (command, out, log) in ran {
            self.record(Event::ValidationFinished {
                packet: packet.id.clone(),
                command: command.clone(),
                exit_code: out.exit_code,
                duration_ms: out.duration.as_millis() as u64,
                timed_out: out.timed_out,
                tail: out.tail.clone(),
            })?;
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

    /// Runs the project's test command `command` on a best-of-N candidate's validated work,
    /// confined as its validation is (logged under `tests/`); returns why it failed, `None`
    /// when it passed.
    pub(super) fn candidate_tests(&self, command: &str) -> Result<Option<String>, Halt> {
        let confine = match (self.ctx.worker_cmd, self.ctx.worker) {
            (None, Some(w)) => w.confine(),
            _ => self.ctx.sandboxes.validation.as_deref(),
        };
        let mut step = self.clone();
        step.dir = self.dir.join("tests");
        fs_err::create_dir_all(&step.dir)
            .map_err(|e| Halt::Fail(format!("cannot prepare the tests' log: {e}")))?;
        let commands = [command.to_string()];
        let ran = step.run_validation_commands(&commands, confine)?;
        Ok(ran
            .into_iter()
            .find(|(_, out, _)| !out.success())
            .map(|(c, out, log)| {
                format!(
                    "the project's tests `{c}` failed ({}); log: {}\n{}",
                    out.describe(self.ctx.timeout),
                    log.display(),
                    out.tail
                )
            }))
    }

    /// Runs `commands` in the worktree in one process under `confine` and returns each that
    /// ran with its outcome and log, stopping after the first that fails; an interrupt halts.
    pub(super) fn run_validation_commands<'c>(
        &self,
        commands: &'c [String],
        confine: Option<&Confine>,
    ) -> Result<Vec<(&'c String, Outcome, PathBuf)>, Halt> {
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        let logs: Vec<PathBuf> = (1..=commands.len())
            .map(|n| self.dir.join(format!("validate-{n}.log")))
            .collect();
        // The shell's whole output, cut into the logs above once it ends (then removed).
        let whole = self.dir.join("validate.log");
        let spec = BatchSpec {
            commands,
            dir: &self.wt,
            env: &self.env,
            logs: &logs,
            log: &whole,
            timeout: self.ctx.timeout,
            confine,
        };
        // Under the packet's own id, as every command of the packet (see `run_command`).
        let mut on_spawn = |pgid: i32| {
            self.ctx.journal.record_or_keep(Event::WorkerSpawned {
                packet: self.packet.id.clone(),
                pgid,
            });
        };
        let outcomes = run_batch_spawned(&spec, self.ctx.stop, &mut on_spawn)
            .map_err(|e| Halt::Fail(e.to_string()))?;
        let _ = fs_err::remove_file(&whole);
        if outcomes.iter().any(|o| o.interrupted) {
            return Err(Halt::Interrupted);
        }
        Ok(commands
            .iter()
            .zip(outcomes)
            .zip(logs)
            .map(|((c, o), l)| (c, o, l))
            .collect())
    }
}

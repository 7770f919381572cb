//! The validation phase: the scope check, then the packet's own validation commands in its
//! worktree, confined like the worker that wrote them.

use super::{Halt, Step};
use crate::store::Event;
use orchestra_git::git::commit;

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
        for (n, command) in packet.validation.iter().enumerate() {
            let log = self.dir.join(format!("validate-{}.log", n + 1));
            // Validation commands of a packet our agents work on run in the agents' sandbox,
            // an external worker's in the configured one: a model may have written them.
            let confine = match (ctx.worker_cmd, ctx.worker) {
                (None, Some(w)) => w.confine(),
                _ => ctx.sandboxes.validation.as_deref(),
            };
            let out = self.run_command(command, &self.env, &log, confine)?;
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
}

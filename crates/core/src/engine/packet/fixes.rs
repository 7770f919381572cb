//! Fix rounds: what follows a check (the packet is done, or goes back to its worker with the
//! fixes a failed check, a rejecting review or a person's comments ask for), and the loop of
//! rounds both the local pipeline and the remote coordinator run.

use std::path::Path;

use super::validation::Checked;
use super::{Halt, Step};
use crate::store::Event;

/// What comes after a check: the packet is done at a commit, or it goes back to its worker
/// with fixes.
pub(in crate::engine) enum Next {
    Done(String),
    Fix(String),
}

impl<'s, 'a> Step<'s, 'a> {
    /// Runs fix rounds from `checked` until the packet is done and returns its commit:
    /// `again(round, fixes)` works fix round `round` with its required fixes and returns what
    /// its checks found. A person's comments on the diff are required fixes too, like a
    /// rejection's; they do not count against the rounds the checks and the reviewer have.
    pub(in crate::engine) fn rounds(
        &self,
        mut checked: Checked,
        mut again: impl FnMut(u32, String) -> Result<Checked, Halt>,
    ) -> Result<String, Halt> {
        let mut round = 0u32;
        let mut comment_rounds = 0u32;
        loop {
            // A failed check, or a rejecting review, goes back to the worker as required fixes.
            let counted = round - comment_rounds;
            let fixes = match self.next(checked, counted)? {
                Next::Done(head) => match self.comments_for_round(round + 1)? {
                    None => return Ok(head),
                    Some(comments) => {
                        comment_rounds += 1;
                        comments
                    }
                },
                Next::Fix(fixes) => fixes,
            };
            round += 1;
            checked = again(round, fixes)?;
        }
    }

    /// Decides what follows `checked` in fix round `round`: a passed check goes to the
    /// deterministic checks and then the review (when there is one), a failed check or a
    /// rejection becomes fixes until the rounds run out.
    fn next(&self, checked: Checked, round: u32) -> Result<Next, Halt> {
        match checked {
            Checked::Failed { reason, fixes } => {
                if round >= self.ctx.fix_rounds {
                    return Err(Halt::Fail(match round {
                        0 => reason,
                        n => format!(
                            "{reason}\n(after {n} fix round{})",
                            if n == 1 { "" } else { "s" }
                        ),
                    }));
                }
                Ok(Next::Fix(fixes))
            }
            Checked::Passed(head) => {
                // The deterministic checks gate every packet, before any model sees it.
                let checks = self.ctx.packet_checks();
                // Read once, by the checks: a model review sees the same range.
                let read = std::cell::OnceCell::new();
                if let Some(fix) = self.deterministic_checks(checks, (&head, &read), round)? {
                    return Ok(fix);
                }
                self.review(checks, (head, &read), round)
            }
        }
    }

    /// Returns the comments a person sent on the packet's diff that no fix round took yet,
    /// and journals that fix round `round` takes them.
    fn comments_for_round(&self, round: u32) -> Result<Option<String>, Halt> {
        let Some(comments) = self.ctx.journal.pending_comments(&self.packet.id) else {
            return Ok(None);
        };
        self.record(Event::CommentsDelivered {
            packet: self.packet.id.clone(),
            round,
        })?;
        Ok(Some(comments))
    }

    /// Writes `fixes` to `file` and returns this step with `ORCHESTRA_FIXES_FILE` naming it
    /// in its commands' environment.
    pub(in crate::engine) fn fixing(&self, file: &Path, fixes: &str) -> Result<Step<'s, 'a>, Halt> {
        fs_err::write(file, fixes)
            .map_err(|e| Halt::Fail(format!("cannot write the required fixes: {e}")))?;
        let mut step = self.clone();
        step.env.push((
            "ORCHESTRA_FIXES_FILE".into(),
            file.to_string_lossy().into_owned(),
        ));
        Ok(step)
    }
}

//! The deterministic checks phase: every packet's validated commit goes through
//! `gate::PacketChecks` (secrets, links, …) before any model reviews it.

use super::fixes::Next;
use super::review::required_fixes;
use super::{Halt, Step};
use crate::gate;

impl Step<'_, '_> {
    /// Returns what follows the deterministic checks of `head` in fix round `round`: `None`
    /// when they approve, fixes when they reject, a failure once the fix rounds are spent.
    /// The range they read is kept in `read` for the review after them.
    pub(super) fn deterministic_checks(
        &self,
        checks: &gate::PacketChecks,
        (head, read): (&str, &std::cell::OnceCell<gate::ReadRange>),
        round: u32,
    ) -> Result<Option<Next>, Halt> {
        let verdict = self.review_step((head, read), round, &[checks])?;
        if verdict.verdict == gate::Decision::Approve {
            return Ok(None);
        }
        let fixes = required_fixes(&verdict);
        if round >= self.ctx.fix_rounds {
            return Err(Halt::Fail(format!(
                "the deterministic checks rejected {}{}; the work stays on {}:\n{fixes}",
                &head[..head.len().min(12)],
                match round {
                    0 => String::new(),
                    n => format!(" after {n} fix round{}", if n == 1 { "" } else { "s" }),
                },
                self.rec.branch
            )));
        }
        Ok(Some(Next::Fix(fixes)))
    }
}

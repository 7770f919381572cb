//! The deterministic checks phase: every packet's validated commit goes through
//! `gate::PacketChecks` (secrets, links, …) before any model reviews it, and every
//! validated candidate of a best-of-N packet goes through them before the choice.

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
        // A model review after them stores the verdict of both: theirs alone only if it rejects.
        let superseded = self.ctx.review.is_some();
        let verdict = self.review_step((head, read), (round, superseded), &[checks])?;
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

    /// Returns why the deterministic checks reject candidate commit `head`, naming the
    /// checks that did and their blocking findings (redacted); `None` when they approve.
    /// A candidate they reject cannot win: the packet would only fail them after the choice.
    pub(super) fn candidate_checks(&self, head: &str) -> Result<Option<String>, Halt> {
        let checks = self.ctx.packet_checks();
        let read = std::cell::OnceCell::new();
        let verdict = self.review_step((head, &read), (0, false), &[checks])?;
        if verdict.verdict == gate::Decision::Approve {
            return Ok(None);
        }
        let mut names: Vec<&str> = Vec::new();
        for f in verdict.findings.iter().filter(|f| f.severity.rejects()) {
            if !names.contains(&f.category.as_str()) {
                names.push(&f.category);
            }
        }
        Ok(Some(format!(
            "the deterministic checks rejected it ({}): {}",
            names.join(", "),
            verdict.blocking_lines(5, 240).join("; ")
        )))
    }
}

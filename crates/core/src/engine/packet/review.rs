//! The review phase: the configured reviewer's verdict on a packet's checked commit, stored in
//! git and journaled; a rejection's findings become the worker's required fixes.

use std::borrow::Cow;

use super::fixes::Next;
use super::{Halt, Step};
use crate::gate;
use crate::store::Event;

/// Most blocking findings journaled with a review, and most characters per finding.
const JOURNALED_FINDINGS: usize = 5;
const FINDING_CHARS: usize = 240;

impl Step<'_, '_> {
    /// Returns what follows the configured reviewer's verdict on `head` in fix round `round`
    /// (done when no reviewer is configured); the stored verdict names both `checks` and the
    /// reviewer, so a gate can tell what approved it. `read` holds the range when the checks
    /// read it already.
    pub(super) fn review(
        &self,
        checks: &gate::PacketChecks,
        (head, read): (String, &std::cell::OnceCell<gate::ReadRange>),
        round: u32,
    ) -> Result<Next, Halt> {
        let Some(review) = self.ctx.review else {
            return Ok(Next::Done(head));
        };
        let verdict =
            self.review_step((&head, read), (round, false), &[checks, review.reviewer])?;
        if verdict.verdict == gate::Decision::Approve {
            return Ok(Next::Done(head));
        }
        let fixes = required_fixes(&verdict);
        if round >= review.max_rounds {
            return Err(Halt::Fail(format!(
                "the review rejected {} after {round} fix round{}; the work stays on {}:\n{fixes}",
                &head[..head.len().min(12)],
                if round == 1 { "" } else { "s" },
                self.rec.branch
            )));
        }
        Ok(Next::Fix(fixes))
    }

    /// Reviews `start..head` with `reviewers`, storing the verdict in git, and journals the
    /// outcome under the last reviewer's name. The range is read into `read` unless an earlier
    /// step of the same commit read it there already. With `superseded`, an approval is not
    /// stored: the model review that follows stores the verdict of the same commit (checks and
    /// model together), which would replace it — a rejection, the last word, is stored.
    pub(super) fn review_step(
        &self,
        (head, read): (&str, &std::cell::OnceCell<gate::ReadRange>),
        (round, superseded): (u32, bool),
        reviewers: &[&dyn gate::Reviewer],
    ) -> Result<gate::Verdict, Halt> {
        let (ctx, packet) = (self.ctx, self.packet);
        let packet_ref = gate::PacketRef {
            run: ctx.run.id.clone(),
            packet: packet.clone(),
            // The worktree is at `head` now: committed and validated (a packet that ran
            // elsewhere has none here; the review makes a scratch checkout).
            checkout: ctx.executor.is_none().then(|| self.wt.clone()),
            notes: self.chosen_candidate().into_iter().collect(),
        };
        self.record(Event::ReviewStarted {
            packet: packet.id.clone(),
            commit: head.to_string(),
            reviewer: reviewers
                .last()
                .map_or_else(String::new, |r| r.name().to_string()),
            round,
        })?;
        let reviewed = match read.get() {
            Some(r) if r.tip == head && r.base == self.start => Ok(Cow::Borrowed(r)),
            Some(_) => gate::read_range(ctx.repo, &self.start, head).map(Cow::Owned),
            None => gate::read_range(ctx.repo, &self.start, head)
                .map(|r| Cow::Borrowed(read.get_or_init(|| r))),
        }
        .and_then(|read| gate::judge_read(ctx.repo, &read, Some(&packet_ref), reviewers))
        .and_then(|verdict| {
            if !superseded || verdict.verdict != gate::Decision::Approve {
                gate::write_verdict(&ctx.repo.git(), &verdict)?;
            }
            Ok(verdict)
        });
        let verdict = match reviewed {
            Ok(v) => v,
            // A review cut short by a stop (a signal, a spent budget) is redone on resume.
            Err(_) if ctx.stop.load(std::sync::atomic::Ordering::SeqCst) => {
                return Err(Halt::Interrupted);
            }
            Err(e) => return Err(Halt::Fail(format!("the review could not be done: {e}"))),
        };
        self.record(Event::PacketReviewed {
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
            findings: verdict.blocking_lines(JOURNALED_FINDINGS, FINDING_CHARS),
        })?;
        Ok(verdict)
    }
}

/// Returns the review's findings as the worker's list of required fixes.
pub(super) fn required_fixes(verdict: &gate::Verdict) -> String {
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

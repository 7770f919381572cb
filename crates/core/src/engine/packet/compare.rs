//! The reviewer's comparison of a best-of-N packet's surviving candidates: when two or more
//! candidates passed the scope check and validation and the packet has a reviewer, one call
//! shows it all their diffs side by side (labelled `c1`…`cN`, scrubbed and clipped, see
//! `gate::compare`) and its choice picks the winner. No reviewer, a reviewer that does not
//! compare, an unusable answer or a failed call leave the choice to the smallest change, and
//! the verdict notes say which.
//!
//! The call's tokens and cost are journaled as one of the reviewer's model calls on the
//! packet, so they count with the packet's other costs, and in the `CandidateChosen` event.

use super::candidates::Candidate;
use super::{Halt, Step};
use crate::gate::{self, COMPARE_DIFF_CHARS, CompareInput};
use crate::store::Event;

/// The role the comparison's model call is journaled under.
const REVIEWER_ROLE: &str = "reviewer";

/// What the comparison of the surviving candidates came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Judged {
    /// The candidate the reviewer chose, when its answer named a surviving one.
    pub choice: Option<u32>,
    /// The reviewer's reason, or why no usable choice was made.
    pub note: String,
    /// The reviewer asked, when one was.
    pub reviewer: Option<String>,
    /// Tokens the call used.
    pub tokens: u64,
    /// What the call cost, in billionths of the currency unit, when priced.
    pub cost_nanos: Option<u64>,
}

impl Judged {
    /// Returns a comparison that chose nothing, for `note`'s reason, by `reviewer` if one was
    /// asked.
    fn none(reviewer: Option<&str>, note: String) -> Judged {
        Judged {
            choice: None,
            note,
            reviewer: reviewer.map(str::to_string),
            tokens: 0,
            cost_nanos: None,
        }
    }
}

impl Step<'_, '_> {
    /// Returns what the packet's reviewer made of the candidates of `all` that passed, compared
    /// side by side; `None` when fewer than two passed (there is nothing to compare).
    pub(super) fn compare_candidates(&self, all: &[Candidate]) -> Result<Option<Judged>, Halt> {
        let passed: Vec<(u32, &str, u64)> = all
            .iter()
            .filter(|c| c.passed)
            .filter_map(|c| Some((c.number, c.commit.as_deref()?, c.changed_lines)))
            .collect();
        if passed.len() < 2 {
            return Ok(None);
        }
        let Some(review) = self.ctx.review else {
            return Ok(Some(Judged::none(
                None,
                "no reviewer is configured to compare them".into(),
            )));
        };
        let name = review.reviewer.name().to_string();
        let diffs =
            match gate::candidate_diffs(self.ctx.repo, &self.start, &passed, COMPARE_DIFF_CHARS) {
                Ok(diffs) => diffs,
                Err(e) => {
                    return Ok(Some(Judged::none(
                        Some(&name),
                        format!("the candidates' diffs could not be read for the reviewer: {e}"),
                    )));
                }
            };
        let input = CompareInput {
            repo: self.ctx.repo,
            packet: self.packet,
            candidates: &diffs,
        };
        let compared = match review.reviewer.compare(&input) {
            Ok(Some(c)) => c,
            Ok(None) => {
                return Ok(Some(Judged::none(
                    None,
                    format!("the reviewer `{name}` does not compare candidates"),
                )));
            }
            // A comparison cut short by a stop is made again on resume.
            Err(_) if self.ctx.stop.load(std::sync::atomic::Ordering::SeqCst) => {
                return Err(Halt::Interrupted);
            }
            Err(e) => {
                return Ok(Some(Judged::none(
                    Some(&name),
                    format!("the reviewer's comparison failed: {e}"),
                )));
            }
        };
        let cost_nanos = compared.cost.map(|c| (c * 1e9).round().max(0.0) as u64);
        self.record(Event::AgentModelCall {
            packet: self.packet.id.clone(),
            role: REVIEWER_ROLE.into(),
            model: compared.model.clone(),
            turn: 0,
            input_tokens: compared.usage.input_tokens,
            output_tokens: compared.usage.output_tokens,
            cost_nanos,
            duration_ms: compared.duration_ms,
        })?;
        let survivors: Vec<u32> = passed.iter().map(|p| p.0).collect();
        let (choice, note) = match compared.choice {
            Some(k) if survivors.contains(&k) => (Some(k), compared.reason),
            Some(k) => (
                None,
                format!("the reviewer chose c{k}, which is not one of the candidates that passed"),
            ),
            None => (None, compared.reason),
        };
        Ok(Some(Judged {
            choice,
            note: gate::mask_secrets(note.trim()),
            reviewer: Some(name),
            tokens: compared.usage.input_tokens + compared.usage.output_tokens,
            cost_nanos,
        }))
    }
}

/// Returns the sentence the verdict notes keep about `judged`, the comparison that chose the
/// winner or left the choice to the smallest change.
pub(super) fn comparison_note(judged: &Judged) -> String {
    let spent = match judged.cost_nanos {
        Some(n) if judged.tokens > 0 => {
            format!(" ({} tokens, cost {:.4})", judged.tokens, n as f64 / 1e9)
        }
        _ if judged.tokens > 0 => format!(" ({} tokens)", judged.tokens),
        _ => String::new(),
    };
    let who = judged.reviewer.as_deref().unwrap_or("reviewer");
    match judged.choice {
        Some(k) => format!(
            "the reviewer `{who}` compared the candidates that passed side by side and chose c{k}{spent}: {}",
            judged.note
        ),
        None if judged.reviewer.is_some() => format!(
            "the reviewer `{who}` made no usable choice{spent}, so the smaller change won: {}",
            judged.note
        ),
        None => format!("the smaller change won: {}", judged.note),
    }
}

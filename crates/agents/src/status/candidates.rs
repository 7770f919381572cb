//! The candidates of a run's best-of-N packets, read from the journal: what each came to and
//! which won and why, for `status`, `status --json`, the report and the web view.

use serde::Serialize;

use orchestra_core::store::{Event, EventKind, Store, StoreError};

/// A best-of-N packet's candidates on its latest attempt, and the winner when one was chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PacketCandidates {
    pub packet: String,
    pub attempt: u32,
    /// Every candidate that ended, by number (they work at once and end in any order).
    pub candidates: Vec<CandidateResult>,
    /// The winning candidate's number, once chosen.
    pub winner: Option<u32>,
    /// Why the winner won and what the others came to.
    pub reasons: Option<String>,
    /// The reviewer that compared the candidates that passed, when one was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// Tokens the reviewer's comparison used (0 without one).
    pub review_tokens: u64,
}

/// What one candidate came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateResult {
    pub candidate: u32,
    pub commit: Option<String>,
    /// True when it passed the scope check and the packet's validation.
    pub passed: bool,
    pub changed_lines: u64,
    /// Why it did not pass (empty when it did).
    pub reason: String,
    /// The arm of `[best_of] arms` it worked with, when candidates vary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
}

/// Returns the candidates of `run`'s best-of-N packets, one entry per packet in the order
/// their first candidate ended; a packet worked again keeps only its latest attempt's.
pub fn candidates(store: &Store, run: &str) -> Result<Vec<PacketCandidates>, StoreError> {
    let mut out: Vec<PacketCandidates> = Vec::new();
    let kinds = [EventKind::CandidateEnded, EventKind::CandidateChosen];
    for entry in store.events_of_kinds(run, &kinds)? {
        match entry.event {
            Event::CandidateEnded {
                packet,
                attempt,
                candidate,
                commit,
                passed,
                changed_lines,
                reason,
                arm,
            } => {
                let entry = of_attempt(&mut out, &packet, attempt);
                entry.candidates.retain(|c| c.candidate != candidate);
                let at = entry
                    .candidates
                    .partition_point(|c| c.candidate < candidate);
                entry.candidates.insert(
                    at,
                    CandidateResult {
                        candidate,
                        commit,
                        passed,
                        changed_lines,
                        reason,
                        arm,
                    },
                );
            }
            Event::CandidateChosen {
                packet,
                attempt,
                candidate,
                reasons,
                reviewer,
                review_tokens,
                ..
            } => {
                let entry = of_attempt(&mut out, &packet, attempt);
                entry.winner = Some(candidate);
                entry.reasons = Some(reasons);
                entry.reviewer = reviewer;
                entry.review_tokens = review_tokens;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Returns `packet`'s entry in `out` for `attempt`, starting it afresh when the packet has
/// none or an older attempt's.
fn of_attempt<'o>(
    out: &'o mut Vec<PacketCandidates>,
    packet: &str,
    attempt: u32,
) -> &'o mut PacketCandidates {
    let at = match out.iter().position(|p| p.packet == packet) {
        Some(i) => {
            if out[i].attempt != attempt {
                out[i] = fresh(packet, attempt);
            }
            i
        }
        None => {
            out.push(fresh(packet, attempt));
            out.len() - 1
        }
    };
    &mut out[at]
}

fn fresh(packet: &str, attempt: u32) -> PacketCandidates {
    PacketCandidates {
        packet: packet.to_string(),
        attempt,
        candidates: Vec::new(),
        winner: None,
        reasons: None,
        reviewer: None,
        review_tokens: 0,
    }
}

/// Returns the lines `status` shows for `packets`' candidates: per packet, the winner (or
/// that none passed yet) and each candidate's result.
pub fn lines(packets: &[PacketCandidates]) -> Vec<String> {
    let mut out = Vec::new();
    for p in packets {
        out.push(match p.winner {
            Some(k) => format!("{}: candidate {k} of {} won", p.packet, p.candidates.len()),
            None => format!("{}: no candidate chosen", p.packet),
        });
        for c in &p.candidates {
            let what = if c.passed {
                format!(
                    "passed, {} changed line{}",
                    c.changed_lines,
                    if c.changed_lines == 1 { "" } else { "s" }
                )
            } else {
                c.reason.lines().next().unwrap_or("failed").to_string()
            };
            match &c.arm {
                Some(arm) => out.push(format!("  c{} [{arm}]: {what}", c.candidate)),
                None => out.push(format!("  c{}: {what}", c.candidate)),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(candidate: u32, passed: bool) -> CandidateResult {
        CandidateResult {
            candidate,
            commit: None,
            passed,
            changed_lines: 1,
            reason: if passed {
                String::new()
            } else {
                "validation `x` failed\nlog".into()
            },
            arm: None,
        }
    }

    #[test]
    fn a_packet_worked_again_keeps_only_its_latest_attempts_candidates() {
        let mut out = Vec::new();
        of_attempt(&mut out, "p1", 1)
            .candidates
            .push(result(1, false));
        of_attempt(&mut out, "p1", 2)
            .candidates
            .push(result(1, true));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].attempt, 2);
        assert_eq!(out[0].candidates, [result(1, true)]);
    }

    #[test]
    fn the_lines_name_the_winner_and_each_candidates_first_line() {
        let packet = PacketCandidates {
            packet: "p1".into(),
            attempt: 1,
            candidates: vec![result(1, false), result(2, true)],
            winner: Some(2),
            reasons: None,
            reviewer: None,
            review_tokens: 0,
        };
        assert_eq!(
            lines(&[packet]),
            [
                "p1: candidate 2 of 2 won",
                "  c1: validation `x` failed",
                "  c2: passed, 1 changed line"
            ]
        );
    }
}

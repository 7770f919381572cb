//! The candidates phase of a best-of-N packet (`attempts = N` in the plan, `run --best-of N`):
//! N candidates work the packet at once (as many as the run's `max_parallel`, see `fan_out.rs`),
//! each in its own worktree on its own branch
//! (`orchestra/<run>/<packet>.c<k>`, beside the packet's), and go through the commit, the
//! scope check, the packet's validation and the deterministic checks; the one that passes with
//! the smallest change becomes the packet's work, which then goes on through the review and
//! the fix rounds like any packet's.
//!
//! Selection is grounded in execution: a candidate that fails its scope check, validation or
//! the deterministic checks cannot win, nor, with `[best_of] tester`, one failing the tests
//! the tester wrote for the packet (`tester.rs`); when two or more pass, the packet's reviewer
//! compares their diffs side by side (`compare.rs`) and its choice wins; without a usable
//! choice the smaller change wins (the earlier candidate on a tie).
//! Every candidate's commit is kept as `refs/orchestra/candidates/<run>/<packet>/c<k>` until
//! `gc`; the candidates' worktrees and branches are removed once the choice is made.
//!
//! A resumed packet does not run a candidate again that ended on this attempt (its
//! `CandidateEnded` event holds its result and its branch its commit); a candidate that was
//! in flight starts again from a clean worktree.

use std::path::PathBuf;

use super::compare::{Judged, comparison_note};
use super::tester::{Tested, Written};
use super::{Checked, Halt, Step};
use crate::config::{STRATEGY_ARM, arm_of};
use crate::store::{Event, EventKind};
use orchestra_git::git::commit;
use orchestra_sys::names;

/// What one candidate came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Candidate {
    pub number: u32,
    pub commit: Option<String>,
    pub passed: bool,
    pub changed_lines: u64,
    pub reason: String,
    /// The arm of `[best_of] arms` it worked with, when candidates vary.
    pub arm: Option<String>,
}

impl Candidate {
    /// Returns the event journaling what this candidate of `packet`'s `attempt` came to.
    pub(super) fn ended(&self, packet: &crate::plan::Packet, attempt: u32) -> Event {
        Event::CandidateEnded {
            packet: packet.id.clone(),
            attempt,
            candidate: self.number,
            commit: self.commit.clone(),
            passed: self.passed,
            changed_lines: self.changed_lines,
            reason: self.reason.clone(),
            arm: self.arm.clone(),
        }
    }
}

/// Returns the ref a packet's candidate `k` is kept under until `gc`.
pub(super) fn candidate_ref(run: &str, packet: &str, k: u32) -> String {
    format!("{}/c{k}", candidates_prefix(run, packet))
}

/// Returns the prefix under which a packet's candidates are kept,
/// `refs/orchestra/candidates/<run>/<packet>`.
fn candidates_prefix(run: &str, packet: &str) -> String {
    format!(
        "refs/orchestra/candidates/{}/{}",
        names::sanitize(run, 80),
        names::sanitize(packet, 64)
    )
}

/// Returns the prefix under which all of a run's candidates are kept, for `gc`.
pub(in crate::engine) fn run_candidates_prefix(run: &str) -> String {
    format!("refs/orchestra/candidates/{}/", names::sanitize(run, 80))
}

/// Returns the candidate that wins among `all`: `picked` (the reviewer's choice) when it
/// passed, else one that passed with the fewest changed lines, the earliest on a tie; `None`
/// when none passed.
pub(super) fn choose(all: &[Candidate], picked: Option<u32>) -> Option<&Candidate> {
    let passed = all.iter().filter(|c| c.passed && c.commit.is_some());
    if let Some(k) = picked
        && let Some(c) = passed.clone().find(|c| c.number == k)
    {
        return Some(c);
    }
    passed.min_by_key(|c| (c.changed_lines, c.number))
}

/// Returns why `winner` won among `all`, for the journal and the verdict notes; `judged` is
/// the reviewer's comparison of those that passed, when two or more did, and `tested` true
/// when those that passed also passed the tester's tests.
pub(super) fn reasons(
    winner: &Candidate,
    all: &[Candidate],
    judged: Option<&Judged>,
    tested: bool,
) -> String {
    let passed: Vec<&Candidate> = all.iter().filter(|c| c.passed).collect();
    let arm = winner
        .arm
        .as_ref()
        .map_or_else(String::new, |a| format!(" (arm `{a}`)"));
    let checks = if tested {
        "the scope check, validation, the deterministic checks and the tester's tests"
    } else {
        "the scope check, validation and the deterministic checks"
    };
    let mut out = format!(
        "candidate {} of {} chosen{arm}: it passed {checks}",
        winner.number,
        all.len()
    );
    if passed.len() == 1 {
        out.push_str(", the only one that did");
    } else if judged.is_some_and(|j| j.choice == Some(winner.number)) {
        out.push_str(&format!(
            ", as {} of {} did, and the reviewer chose it ({} changed lines)",
            passed.len(),
            all.len(),
            winner.changed_lines
        ));
    } else {
        out.push_str(&format!(
            ", as {} of {} did, with the smallest change ({} changed lines)",
            passed.len(),
            all.len(),
            winner.changed_lines
        ));
    }
    if let Some(j) = judged {
        out.push_str(&format!("\n{}", comparison_note(j)));
    }
    for other in all.iter().filter(|c| c.number != winner.number) {
        out.push_str(&format!(
            "\n- candidate {}: {}",
            other.number,
            summary(other)
        ));
    }
    out
}

/// Returns one line saying what candidate `c` came to (and with which arm, when it had one).
fn summary(c: &Candidate) -> String {
    let what = if c.passed {
        format!("passed, {} changed lines", c.changed_lines)
    } else {
        c.reason.lines().next().unwrap_or("failed").to_string()
    };
    match &c.arm {
        Some(arm) => format!("[arm {arm}] {what}"),
        None => what,
    }
}

/// Returns why a packet none of whose candidates passed fails, candidate by candidate.
fn no_winner(all: &[Candidate]) -> String {
    let mut out = format!("none of its {} candidates passed:", all.len());
    for c in all {
        out.push_str(&format!(
            "\n- candidate {}: {}",
            c.number,
            c.reason.trim_end()
        ));
    }
    out
}

impl Step<'_, '_> {
    /// Works the packet with `n` candidates, chooses the winner, moves the packet's branch
    /// (checked out in its worktree, which holds nothing of its own yet) to the winner's
    /// commit and journals the choice; returns that commit. No candidate passing fails the
    /// packet with each candidate's reason.
    pub(super) fn best_of(&self, n: u32) -> Result<String, Halt> {
        // The tester writes its tests first: the candidates' worktrees never hold them.
        let tester = self.tester_tests()?;
        let ended = self.ended_candidates()?;
        let mut all: Vec<Candidate> = (1..=n)
            .filter_map(|k| ended.iter().rev().find(|c| c.number == k).cloned())
            .collect();
        let pending: Vec<u32> = (1..=n)
            .filter(|k| all.iter().all(|c| c.number != *k))
            .collect();
        all.extend(self.run_candidates(&pending)?);
        all.sort_by_key(|c| c.number);
        let tested = match &tester {
            Some(Written::Tests(tests)) => Some(self.apply_tester_tests(&mut all, tests)?),
            Some(Written::Without(reason)) => Some(Tested::not_held(format!(
                "the tester wrote no tests the candidates could run: {}",
                reason.lines().next().unwrap_or("")
            ))),
            None => None,
        };
        let judged = self.compare_candidates(&all)?;
        let picked = judged.as_ref().and_then(|j| j.choice);
        let Some(winner) = choose(&all, picked) else {
            self.keep_candidates(&all)?;
            return Err(Halt::Fail(no_winner(&all)));
        };
        let commit_id = winner.commit.clone().unwrap_or_default();
        commit::reset_to(&self.git()?, &commit_id).map_err(|e| {
            Halt::Fail(format!(
                "cannot move the packet to its chosen candidate: {e}"
            ))
        })?;
        self.keep_candidates(&all)?;
        self.record(Event::CandidateChosen {
            packet: self.packet.id.clone(),
            attempt: self.rec.attempt,
            candidate: winner.number,
            commit: commit_id.clone(),
            reasons: match &tested {
                Some(t) => format!(
                    "{}\n{}",
                    reasons(winner, &all, judged.as_ref(), t.held),
                    t.note
                ),
                None => reasons(winner, &all, judged.as_ref(), false),
            },
            reviewer: judged.as_ref().and_then(|j| j.reviewer.clone()),
            review_tokens: judged.as_ref().map_or(0, |j| j.tokens),
            review_cost_nanos: judged.as_ref().and_then(|j| j.cost_nanos),
        })?;
        Ok(commit_id)
    }

    /// Returns why this attempt's candidate was chosen, when the packet is a best-of-N one:
    /// the note its verdicts keep.
    pub(super) fn chosen_candidate(&self) -> Option<String> {
        if self.packet.candidates() < 2 {
            return None;
        }
        let (id, attempt) = (&self.packet.id, self.rec.attempt);
        let entries = self
            .ctx
            .journal
            .read(|store, run| store.events_of_kind(run, EventKind::CandidateChosen))
            .ok()?;
        entries.into_iter().rev().find_map(|e| match e.event {
            Event::CandidateChosen {
                packet,
                attempt: a,
                reasons,
                ..
            } if &packet == id && a == attempt => Some(reasons),
            _ => None,
        })
    }

    /// Returns the candidates of this packet's attempt that ended before (a resumed packet's).
    fn ended_candidates(&self) -> Result<Vec<Candidate>, Halt> {
        let (id, attempt) = (&self.packet.id, self.rec.attempt);
        let entries = self
            .ctx
            .journal
            .read(|store, run| store.events_of_kind(run, EventKind::CandidateEnded))
            .map_err(|_| Halt::Journal)?;
        Ok(entries
            .into_iter()
            .filter_map(|e| match e.event {
                Event::CandidateEnded {
                    packet,
                    attempt: a,
                    candidate,
                    commit,
                    passed,
                    changed_lines,
                    reason,
                    arm,
                } if &packet == id && a == attempt => Some(Candidate {
                    number: candidate,
                    commit,
                    passed,
                    changed_lines,
                    reason,
                    arm,
                }),
                _ => None,
            })
            .collect())
    }

    /// Returns the step of candidate `k`: its own branch, worktree and log directory, and its
    /// number in `ORCHESTRA_CANDIDATE`; its events are journaled under `<packet>.c<k>`.
    fn candidate_step(&self, k: u32) -> Result<Self, Halt> {
        let mut step = self.clone();
        step.rec.branch = format!("{}.c{k}", self.rec.branch);
        step.wt = PathBuf::from(format!("{}.c{k}", self.wt.display()));
        step.dir = self.dir.join(format!("c{k}"));
        step.candidate = Some(k);
        step.env = step.environment()?;
        step.env
            .push(("ORCHESTRA_CANDIDATE".to_string(), k.to_string()));
        if let Some(arm) = self.candidate_arm(k)
            && let Some(text) = arm.strip_prefix(STRATEGY_ARM)
        {
            step.env
                .push(("ORCHESTRA_STRATEGY".to_string(), text.trim().to_string()));
        }
        Ok(step)
    }

    /// Returns the arm candidate `k` works with: our agent's (see `Worker::arm`), or for a
    /// worker command its `strategy:` arm of `[best_of] arms` (other arms change our agents
    /// only).
    fn candidate_arm(&self, k: u32) -> Option<String> {
        match (self.ctx.worker_cmd, self.ctx.worker) {
            (None, Some(w)) => w.arm(self.packet, k),
            _ => arm_of(self.ctx.arms, k)
                .filter(|a| a.starts_with(STRATEGY_ARM))
                .map(str::to_string),
        }
    }

    /// Runs candidate `k` from a clean worktree through the worker, the commit, the scope check
    /// and the validation, and journals what it came to.
    pub(super) fn candidate(&self, k: u32) -> Result<Candidate, Halt> {
        // A candidate cut short by a crash starts again from a clean worktree.
        self.remove_candidate(k);
        let step = self.candidate_step(k)?;
        let arm = self.candidate_arm(k);
        self.record(Event::CandidateStarted {
            packet: self.packet.id.clone(),
            attempt: self.rec.attempt,
            candidate: k,
            branch: step.rec.branch.clone(),
            worktree: step.wt.to_string_lossy().into_owned(),
            arm: arm.clone(),
        })?;
        let mut result = Candidate {
            number: k,
            commit: None,
            passed: false,
            changed_lines: 0,
            reason: String::new(),
            arm,
        };
        step.ensure_ready(true)?;
        // A retried packet's candidates get the note the retry left, as its worker would.
        let worked = match step.first_work() {
            Err(Halt::Fail(reason)) => Err(reason),
            Err(other) => return Err(other),
            Ok(()) => Ok(()),
        };
        // What a failed worker left is committed too: its candidate ref keeps it.
        let committed = step.commit(None);
        match (worked, committed) {
            (Err(reason), made) => {
                result.commit = made.ok().map(|m| m.0);
                result.reason = reason;
            }
            (Ok(()), Err(Halt::Fail(reason))) => result.reason = reason,
            (Ok(()), Err(other)) => return Err(other),
            (Ok(()), Ok(made)) => {
                let head = made.0.clone();
                result.commit = Some(head.clone());
                result.changed_lines = commit::changed_lines(&step.git()?, &step.start, &head)
                    .map_err(|e| {
                        Halt::Fail(format!("cannot measure the candidate's change: {e}"))
                    })?;
                match step.validate(Some(made))? {
                    Checked::Passed(_) => match step.candidate_checks(&head)? {
                        None => match self.ctx.tests {
                            Some(tests) => match step.candidate_tests(tests)? {
                                None => result.passed = true,
                                Some(reason) => result.reason = reason,
                            },
                            None => result.passed = true,
                        },
                        Some(reason) => result.reason = reason,
                    },
                    Checked::Failed { reason, .. } => result.reason = reason,
                }
            }
        }
        self.record(result.ended(self.packet, self.rec.attempt))?;
        Ok(result)
    }

    /// Keeps every candidate's commit under its candidate ref, then removes the candidates'
    /// worktrees and branches (their work is in the refs).
    fn keep_candidates(&self, all: &[Candidate]) -> Result<(), Halt> {
        let git = self.ctx.repo.git();
        for c in all {
            if let Some(id) = &c.commit {
                let name = candidate_ref(&self.ctx.run.id, &self.packet.id, c.number);
                // Only this packet's thread writes its candidates' refs: a lock is a killed
                // process's.
                let lock = self.ctx.repo.common_dir.join(format!("{name}.lock"));
                if lock.exists() {
                    tracing::warn!(lock = %lock.display(), "removing a lock file left by a killed process");
                    let _ = fs_err::remove_file(&lock);
                }
                commit::keep_ref(&git, &name, id)
                    .map_err(|e| Halt::Fail(format!("cannot keep candidate {}: {e}", c.number)))?;
            }
            self.remove_candidate(c.number);
        }
        Ok(())
    }

    /// Removes candidate `k`'s worktree and branch, when they exist: after the choice (its
    /// commit is kept under its ref), or before it starts again from a clean worktree.
    fn remove_candidate(&self, k: u32) {
        let git = self.ctx.repo.git();
        let branch = format!("{}.c{k}", self.rec.branch);
        let wt = PathBuf::from(format!("{}.c{k}", self.wt.display()));
        // A process killed while creating this candidate's branch or working in its worktree
        // left their locks; only this thread drives candidate `k`, so they are stale.
        // (A worktree whose `.git` link its worker changed is removed below all the same.)
        if super::worktree::clear_stale_locks(self.ctx, &branch, &wt).is_err() {
            tracing::warn!(worktree = %wt.display(), "a candidate's worktree has a changed .git link");
        }
        // Other candidates register their worktrees at the same time: a prune must not see
        // one half-written.
        let _registrations = orchestra_git::git::registration_lock();
        if wt.exists()
            && let Err(e) = git.force_remove_worktree(&wt)
        {
            tracing::warn!(worktree = %wt.display(), error = %e, "cannot remove a candidate's worktree");
            return;
        }
        let _ = git.prune_worktrees();
        let branch_ref = format!("refs/heads/{branch}");
        if git.resolve_commit(&branch_ref).ok().flatten().is_some() {
            let _ = git.force_delete_branch(&branch);
        }
    }
}

/// Returns `event` as the packet's `member`'s (candidate `c<k>`, the `tests` of its tester):
/// the packet it names becomes `<packet>.<member>`, so the member's steps are journaled without
/// moving the packet's own phase.
pub(super) fn as_member(event: Event, member: &str) -> Event {
    let Ok(mut value) = serde_json::to_value(&event) else {
        return event;
    };
    if let Some(packet) = value
        .get_mut("packet")
        .and_then(|p| p.as_str().map(str::to_string))
    {
        value["packet"] = format!("{packet}.{member}").into();
    }
    serde_json::from_value(value).unwrap_or(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(number: u32, passed: bool, changed_lines: u64) -> Candidate {
        Candidate {
            number,
            commit: Some(format!("c{number}")),
            passed,
            changed_lines,
            reason: if passed {
                String::new()
            } else {
                "validation `x` failed".into()
            },
            arm: None,
        }
    }

    #[test]
    fn the_smallest_passing_change_wins_and_ties_go_to_the_earlier() {
        let all = [
            candidate(1, false, 1),
            candidate(2, true, 9),
            candidate(3, true, 4),
        ];
        assert_eq!(choose(&all, None).map(|c| c.number), Some(3));
        // The reviewer's choice wins when it passed, never when it did not.
        assert_eq!(choose(&all, Some(2)).map(|c| c.number), Some(2));
        assert_eq!(choose(&all, Some(1)).map(|c| c.number), Some(3));
        let tie = [candidate(1, true, 4), candidate(2, true, 4)];
        assert_eq!(choose(&tie, None).map(|c| c.number), Some(1));
        assert_eq!(choose(&[candidate(1, false, 0)], None), None);
        let why = reasons(&all[2], &all, None, false);
        assert!(why.contains("candidate 3 of 3"), "{why}");
        assert!(why.contains("candidate 1: validation `x` failed"), "{why}");
    }

    #[test]
    fn a_candidates_events_name_the_candidate_not_the_packet() {
        let event = as_member(
            Event::WorktreeReady {
                packet: "p".into(),
                how: "fresh".into(),
            },
            "c2",
        );
        assert_eq!(event.packet(), Some("p.c2"));
    }
}

//! Where a packet's time went: the wall time of each phase of its pipeline, derived from the
//! timestamps of the journal events that bracket the phases.
//!
//! No event of its own is needed: `PacketStarted` (or `PacketResumed`) opens the worktree
//! phase, the setup command's `WorkerSpawned` before `WorktreeReady` opens setup,
//! `WorkerStarted`…`WorkerFinished` bracket the worker, `PacketCommitted` ends the commit and
//! opens the scope check and validation, `ReviewStarted`…`PacketReviewed` bracket the
//! deterministic checks or a model's review, and the merge coordinator's events bracket each
//! packet's integration (from the previous integration step to its `PacketIntegrated` or
//! `PacketSentBack`; a batch validated together counts for its first packet). Retries and fix
//! rounds add to the same phases.

use std::collections::BTreeMap;

use crate::store::{Event, JournalEntry, PhaseDurations, TimedPhase};

/// Returns each packet's phase durations from a run's journal `entries` (in journal order).
pub fn packet_timings(entries: &[JournalEntry]) -> BTreeMap<String, PhaseDurations> {
    let mut timings: BTreeMap<String, PhaseDurations> = BTreeMap::new();
    let mut open: BTreeMap<String, (TimedPhase, i64)> = BTreeMap::new();
    let mut merge_clock: Option<i64> = None;
    for entry in entries {
        let ts = entry.ts_ms;
        match &entry.event {
            Event::MergeStarted { .. } => merge_clock = Some(ts),
            Event::MergeFinished { .. } => merge_clock = None,
            Event::PacketIntegrated { packet, .. } | Event::PacketSentBack { packet, .. } => {
                if let Some(since) = merge_clock.replace(ts) {
                    add(&mut timings, packet, TimedPhase::Integration, since, ts);
                }
            }
            event => {
                let Some(packet) = event.packet() else {
                    continue;
                };
                let current = open.remove(packet);
                if let Some((phase, since)) = current {
                    add(&mut timings, packet, phase, since, ts);
                }
                if let Some(next) = next_phase(event, current.map(|(p, _)| p)) {
                    open.insert(packet.to_string(), (next, ts));
                }
            }
        }
    }
    timings
}

/// Returns the phase `event` opens for its packet, given the one that was open (`None`: the
/// packet waits or is done).
fn next_phase(event: &Event, current: Option<TimedPhase>) -> Option<TimedPhase> {
    match event {
        Event::PacketStarted { .. } | Event::PacketResumed { .. } => Some(TimedPhase::Worktree),
        // The first process spawned while the worktree is prepared is the setup command.
        Event::WorkerSpawned { .. } if current == Some(TimedPhase::Worktree) => {
            Some(TimedPhase::Setup)
        }
        Event::WorkerStarted { .. } | Event::WorkerRetrying { .. } => Some(TimedPhase::Worker),
        Event::WorkerFinished { .. } => Some(TimedPhase::Commit),
        Event::PacketCommitted { .. } => Some(TimedPhase::Validation),
        Event::ReviewStarted { reviewer, .. } if reviewer == crate::gate::DETERMINISTIC => {
            Some(TimedPhase::Checks)
        }
        Event::ReviewStarted { .. } => Some(TimedPhase::Review),
        Event::WorktreeReady { .. }
        | Event::PacketReviewed { .. }
        | Event::PacketSucceeded { .. }
        | Event::PacketFailed { .. }
        | Event::PacketSkipped { .. }
        | Event::PacketInterrupted { .. } => None,
        // Anything else (a validation command ending, a scope finding, an agent's model call)
        // happens inside the open phase.
        _ => current,
    }
}

fn add(
    timings: &mut BTreeMap<String, PhaseDurations>,
    packet: &str,
    phase: TimedPhase,
    since: i64,
    ts: i64,
) {
    let ms = u64::try_from(ts.saturating_sub(since)).unwrap_or(0);
    *timings
        .entry(packet.to_string())
        .or_default()
        .entry(phase)
        .or_default() += ms;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ts_ms: i64, event: Event) -> JournalEntry {
        JournalEntry {
            seq: ts_ms,
            ts_ms,
            event,
        }
    }

    #[test]
    fn each_phase_gets_the_time_between_the_events_that_bracket_it() {
        let p = || "p1".to_string();
        let entries = vec![
            at(
                0,
                Event::PacketStarted {
                    packet: p(),
                    branch: String::new(),
                    worktree: String::new(),
                    start: String::new(),
                    attempt: 1,
                },
            ),
            at(
                10,
                Event::WorkerSpawned {
                    packet: p(),
                    pgid: 1,
                },
            ),
            at(
                30,
                Event::WorktreeReady {
                    packet: p(),
                    how: "fresh".into(),
                },
            ),
            at(
                31,
                Event::WorkerStarted {
                    packet: p(),
                    command: String::new(),
                    log: String::new(),
                },
            ),
            at(
                531,
                Event::WorkerFinished {
                    packet: p(),
                    exit_code: Some(0),
                    duration_ms: 500,
                    timed_out: false,
                    tail: String::new(),
                },
            ),
            at(
                541,
                Event::PacketCommitted {
                    packet: p(),
                    commit: String::new(),
                    changed: vec![],
                },
            ),
            at(
                561,
                Event::ReviewStarted {
                    packet: p(),
                    commit: String::new(),
                    reviewer: crate::gate::DETERMINISTIC.into(),
                    round: 0,
                },
            ),
            at(
                566,
                Event::PacketReviewed {
                    packet: p(),
                    commit: String::new(),
                    reviewer: String::new(),
                    approved: true,
                    blocking: 0,
                    round: 0,
                    findings: vec![],
                },
            ),
            at(
                567,
                Event::PacketSucceeded {
                    packet: p(),
                    commit: String::new(),
                },
            ),
            at(
                600,
                Event::MergeStarted {
                    target: String::new(),
                    integration: String::new(),
                    packets: vec![p()],
                    already: vec![],
                },
            ),
            at(
                640,
                Event::PacketIntegrated {
                    packet: p(),
                    commit: String::new(),
                },
            ),
        ];
        let t = &packet_timings(&entries)["p1"];
        let got: Vec<(&str, u64)> = t.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            got,
            [
                ("worktree", 10),
                ("setup", 20),
                ("worker", 500),
                ("commit", 10),
                ("validation", 20),
                ("checks", 5),
                ("integration", 40)
            ]
        );
        assert_eq!(
            crate::store::phase_totals([t, t])[&TimedPhase::Worker],
            1000
        );
    }
}

//! The executor seam: where a packet's work runs. `local` (no executor) is the packet
//! pipeline in a worktree beside the repository; a remote executor hands the work — worker,
//! commit, scope check, validation — to `git orchestra packet exec` on another machine and
//! gets back the packet branch and the events the work journaled there. Gates, fix rounds,
//! merge and pull requests stay with the coordinator. The executors themselves (ssh, GitHub
//! Actions) live above the engine, in `orchestra_agents::executor`.
//!
//! What travels, all through a git remote both sides reach: the start commit
//! (`refs/orchestra/base/<run>/<packet>`), the job as a JSON blob
//! (`refs/orchestra/jobs/<run>/<packet>`: packet, start, branch, worker command, fixes —
//! never a key), the branch of a fix round; back come the branch and
//! `refs/orchestra/events/<run>/<packet>`, a blob of JSON lines ([`Line`]).

mod coordinator;
mod exec;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::plan::Packet;
use crate::store::Event;
use orchestra_git::git::RepoInfo;

pub(super) use coordinator::pipeline;
pub use exec::{ExecOptions, ExecReport, exec};

/// Runs packets' work somewhere other than beside the repository.
pub trait Executor: Sync {
    /// Returns the executor's name as configured (`ssh`).
    fn kind(&self) -> &'static str;

    /// Returns where packets may run, one entry per host, for `plan check`.
    fn places(&self) -> Vec<String>;

    /// Runs one job on some host and brings its branch and events into `d.repo`; tries
    /// another host when one fails before answering. `Err` says why no host answered.
    fn dispatch(&self, d: &Dispatch<'_>) -> Result<Dispatched, String>;
}

/// Returns `Ok` if and only if no packet of `plan` has candidates (`attempts` above 1): a
/// remote job works one packet on one branch, so candidates run only beside the repository and
/// a plan with some is refused on the executor named `executor` before any packet starts.
pub fn check_candidates(
    plan: &crate::plan::Plan,
    executor: &str,
) -> Result<(), super::EngineError> {
    match plan.packets.iter().find(|p| p.candidates() > 1) {
        None => Ok(()),
        Some(p) => Err(super::EngineError::CandidatesElsewhere {
            packet: p.id.clone(),
            candidates: p.candidates(),
            executor: executor.to_string(),
        }),
    }
}

/// Returns the lines of the job's result when a dispatch before this one (by a coordinator
/// that stopped before importing it) already brought the result and the branch here.
pub fn earlier_result(d: &Dispatch<'_>) -> Option<Vec<Line>> {
    let git = d.repo.git();
    let text = git
        .read_blob_ref(&events_ref(&d.job.run, &d.job.packet.id))
        .ok()??;
    let lines = parse_lines(&text);
    result_of(&lines, d.job.attempt, d.job.round)?;
    git.resolve(&format!("refs/heads/{}", d.job.branch))
        .ok()
        .flatten()?;
    Some(lines)
}

/// One job to hand to an executor.
pub struct Dispatch<'a> {
    pub repo: &'a RepoInfo,
    pub job: &'a Job,
    /// True when the packet branch exists here and must travel too (a fix round).
    pub with_branch: bool,
    pub stop: &'a AtomicBool,
    /// Longest the remote side may take (the run's timeout plus the transfers).
    pub timeout: Duration,
    /// Where the transport's own output is logged.
    pub log_dir: &'a Path,
    /// Journals that the job went to a host; `false` when the journal failed.
    pub on_host: &'a (dyn Fn(&str) -> bool + Sync),
}

/// What came back from a host.
#[derive(Debug)]
pub struct Dispatched {
    pub host: String,
    /// The lines the job wrote (its events and its result), already in the local repository's
    /// events ref.
    pub lines: Vec<Line>,
}

/// A packet's work as the remote side needs it: no secret ever goes in here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub run: String,
    pub objective: String,
    pub packet: Packet,
    /// The commit the packet starts from (pushed as `refs/orchestra/base/<run>/<packet>`).
    pub start: String,
    pub branch: String,
    /// The external worker command; empty when the packet is worked by our agents (with the
    /// model profiles configured where it runs).
    pub worker_cmd: String,
    pub timeout_secs: u64,
    pub setup: Option<String>,
    pub attempt: u32,
    /// The fix round (0 for the first work); with `fixes`, what to fix.
    pub round: u32,
    pub fixes: Option<String>,
    /// What the packets this one depends on did (their changed files, what their workers
    /// said), for the packet file's `dependencies`.
    #[serde(default)]
    pub dependencies: String,
}

/// One line of a packet's events ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub attempt: u32,
    pub round: u32,
    #[serde(flatten)]
    pub what: LineKind,
}

/// An event the remote side journaled, or how its work ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Event(Event),
    Result(ExecResult),
}

/// How one job ended on its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ExecResult {
    /// Committed, in scope and validated at `head` (pushed on the packet branch).
    Passed { head: String },
    /// The scope check or validation failed at the pushed commit: `fixes` for a fix round.
    Checked { reason: String, fixes: String },
    /// The work failed (the worker, the worktree); the packet fails with `reason`.
    Failed { reason: String },
}

/// Returns the ref the start commit of `packet` travels in.
pub fn base_ref(run: &str, packet: &str) -> String {
    format!("refs/orchestra/base/{run}/{packet}")
}

/// Returns the ref the job of `packet` travels in.
pub fn job_ref(run: &str, packet: &str) -> String {
    format!("refs/orchestra/jobs/{run}/{packet}")
}

/// Returns the ref the events of `packet` come back in.
pub fn events_ref(run: &str, packet: &str) -> String {
    format!("refs/orchestra/events/{run}/{packet}")
}

/// Parses an events ref's JSON lines; a line that does not parse is skipped with a warning.
pub fn parse_lines(text: &[u8]) -> Vec<Line> {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(line) => Some(line),
            Err(e) => {
                tracing::warn!(error = %e, "skipping an events line that does not parse");
                None
            }
        })
        .collect()
}

/// Returns the result of `(attempt, round)` among `lines`, if that job finished.
pub fn result_of(lines: &[Line], attempt: u32, round: u32) -> Option<&ExecResult> {
    lines.iter().rev().find_map(|l| match &l.what {
        LineKind::Result(r) if l.attempt == attempt && l.round == round => Some(r),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_results_are_found_by_attempt_and_round() {
        let lines = vec![
            Line {
                attempt: 1,
                round: 0,
                what: LineKind::Event(Event::WorktreeReady {
                    packet: "a".into(),
                    how: "fresh".into(),
                }),
            },
            Line {
                attempt: 1,
                round: 0,
                what: LineKind::Result(ExecResult::Passed { head: "abc".into() }),
            },
        ];
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        assert!(
            text.contains(r#""event":{"type":"worktree_ready""#),
            "{text}"
        );
        let parsed = parse_lines(format!("{text}not json\n").as_bytes());
        assert_eq!(parsed, lines);
        assert_eq!(
            result_of(&parsed, 1, 0),
            Some(&ExecResult::Passed { head: "abc".into() })
        );
        assert_eq!(result_of(&parsed, 1, 1), None);
        assert_eq!(result_of(&parsed, 2, 0), None);
    }
}

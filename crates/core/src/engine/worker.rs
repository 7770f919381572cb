//! The worker seam: who does a packet's work phase — an external command (`--worker-cmd`) or
//! an in-process worker such as our own agents.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::plan::Packet;

/// What an in-process worker gets for one packet.
pub struct WorkerJob<'a> {
    pub run: &'a str,
    pub objective: &'a str,
    pub packet: &'a Packet,
    /// The packet's worktree, on its branch; the engine commits what is left there.
    pub worktree: &'a Path,
    /// The repository's common git directory as the engine found it: the way to the worktree's
    /// git metadata that its own (writable) `.git` file cannot redirect.
    pub common_dir: &'a Path,
    /// A log file the worker may write its transcript to.
    pub log: &'a Path,
    pub stop: &'a AtomicBool,
    pub timeout: Duration,
    /// Journals an event of the worker's own (agent states, model and tool calls) in the run
    /// store; the engine's events stay the engine's.
    pub journal: &'a (dyn Fn(crate::store::Event) + Sync),
    /// The review's required fixes, when this is a fix round after a rejection.
    pub fixes: Option<&'a str>,
    /// The fix round this work is: 0 for the packet's first work, 1 for the first round of
    /// fixes, and so on (a round taking a person's comments on the diff counts too).
    pub round: u32,
    /// What the packets this one depends on did (see `dependency_summary`); empty when it
    /// depends on none.
    pub dependencies: &'a str,
    /// The candidate (1…N) this work is, for a best-of-N packet's candidates: the worker
    /// varies it by its arm (see [`Worker::arm`]).
    pub candidate: Option<u32>,
}

/// How an in-process worker's work phase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    /// True when the work is done and should be committed and validated.
    pub success: bool,
    /// True when the stop flag ended the work (the packet restarts on resume).
    pub interrupted: bool,
    /// A short account for the journal: summary on success, reason otherwise.
    pub summary: String,
    /// True when the failure may pass if the work is tried again (a model outage, a stall, a
    /// timeout); the engine then runs the worker again, with backoff, a bounded number of times.
    pub transient: bool,
}

/// Does a packet's work phase in-process; shared by all packet threads.
pub trait Worker: Sync {
    /// Returns a label for the journal, e.g. `agent:coder`.
    fn label(&self, packet: &Packet) -> String;

    /// Does the work of `job` in its worktree.
    fn work(&self, job: &WorkerJob<'_>) -> WorkerReport;

    /// Returns the confinement the packet's validation commands run under — the sandbox of the
    /// worker's own commands, since a model may have written them (a plan's or a subtask's) —
    /// or `None` to run them as the user.
    fn confine(&self) -> Option<&orchestra_sys::exec::process::Confine> {
        None
    }

    /// True when the worker may make commits of its own (an agent CLI outside a sandbox),
    /// which the engine takes back before committing, as an external command's.
    fn commits_itself(&self) -> bool {
        false
    }

    /// Returns the arm candidate `candidate` (1…N) of `packet` works with — the worker it
    /// varies to, such as a profile name — or `None` when candidates do not vary.
    fn arm(&self, packet: &Packet, candidate: u32) -> Option<String> {
        let _ = (packet, candidate);
        None
    }
}

/// The review step of the packet pipeline: who reviews a validated packet, and how many fix
/// rounds a rejection gets before the packet fails.
pub struct PacketReview<'a> {
    pub reviewer: &'a (dyn crate::gate::Reviewer + Sync),
    pub max_rounds: u32,
}

pub use crate::config::DEFAULT_FIX_ROUNDS;

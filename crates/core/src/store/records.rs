//! Rows of the run store as typed records, and the states they can be in.

use serde::Serialize;

/// The lifecycle state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Created, never started.
    Created,
    /// A process is (or was, until it was killed) executing it.
    Running,
    /// Stopped by an interrupt; `resume` continues it.
    Interrupted,
    /// Every packet succeeded.
    Completed,
    /// Finished with at least one packet failed or skipped.
    Failed,
    /// Cancelled by the user.
    Cancelled,
}

impl RunState {
    /// Returns the name stored in the database and shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Created => "created",
            RunState::Running => "running",
            RunState::Interrupted => "interrupted",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }

    /// Returns the state named `s`, or `None` for an unknown name.
    pub fn parse(s: &str) -> Option<RunState> {
        Some(match s {
            "created" => RunState::Created,
            "running" => RunState::Running,
            "interrupted" => RunState::Interrupted,
            "completed" => RunState::Completed,
            "failed" => RunState::Failed,
            "cancelled" => RunState::Cancelled,
            _ => return None,
        })
    }

    /// Returns true if and only if no further work will happen on the run without a new start.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunState::Completed | RunState::Failed | RunState::Cancelled
        )
    }
}

/// The lifecycle state of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketState {
    /// Waiting for its dependencies or a free slot.
    Pending,
    /// Being worked on; `phase` says where.
    Running,
    /// Stopped by an interrupt mid-way; restarts from its worktree on resume.
    Interrupted,
    /// Passed its checks; the work is on its branch.
    Succeeded,
    /// Failed; `reason` says why.
    Failed,
    /// Not run because a dependency did not succeed.
    Skipped,
    /// Not run, or stopped, because the run was cancelled.
    Cancelled,
}

impl PacketState {
    /// Returns the name stored in the database and shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            PacketState::Pending => "pending",
            PacketState::Running => "running",
            PacketState::Interrupted => "interrupted",
            PacketState::Succeeded => "succeeded",
            PacketState::Failed => "failed",
            PacketState::Skipped => "skipped",
            PacketState::Cancelled => "cancelled",
        }
    }

    /// Returns the state named `s`, or `None` for an unknown name.
    pub fn parse(s: &str) -> Option<PacketState> {
        Some(match s {
            "pending" => PacketState::Pending,
            "running" => PacketState::Running,
            "interrupted" => PacketState::Interrupted,
            "succeeded" => PacketState::Succeeded,
            "failed" => PacketState::Failed,
            "skipped" => PacketState::Skipped,
            "cancelled" => PacketState::Cancelled,
            _ => return None,
        })
    }

    /// Returns true if and only if the packet will not change state again in this run.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            PacketState::Succeeded
                | PacketState::Failed
                | PacketState::Skipped
                | PacketState::Cancelled
        )
    }
}

/// Where a running packet is in its pipeline; a resume restarts it from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Preparing its worktree.
    Worktree,
    /// Its worker command is running (or must run again).
    Worker,
    /// The worker finished; its changes must be committed.
    Commit,
    /// Committed; scope and validation checks run.
    Validate,
    /// Checked; a reviewer (the deterministic checks or a model) is judging it. Resumed like
    /// `Validate`: the checks run again, then the review.
    Review,
}

impl Phase {
    /// Returns the name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Worktree => "worktree",
            Phase::Worker => "worker",
            Phase::Commit => "commit",
            Phase::Validate => "validate",
            Phase::Review => "review",
        }
    }

    /// Returns the phase named `s`, or `None` for an unknown name.
    pub fn parse(s: &str) -> Option<Phase> {
        Some(match s {
            "worktree" => Phase::Worktree,
            "worker" => Phase::Worker,
            "commit" => Phase::Commit,
            "validate" => Phase::Validate,
            "review" => Phase::Review,
            _ => return None,
        })
    }
}

/// One run as stored.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub id: String,
    pub objective: String,
    pub base: String,
    #[serde(skip)]
    pub plan_toml: String,
    pub plan_path: String,
    pub worker_cmd: Option<String>,
    pub max_parallel: usize,
    pub timeout_secs: u64,
    pub worktree_root: String,
    pub state: RunState,
    pub pid: Option<u32>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl RunRecord {
    /// Returns the run's plan parsed from its stored text, named by the path it was read from.
    ///
    /// The stored text is what the run was created with, so every reader of a run's plan
    /// (engine, merge, review, publishing, report) sees the same packets.
    pub fn plan(&self) -> Result<crate::plan::Plan, crate::plan::PlanError> {
        crate::plan::Plan::from_toml_str(&self.plan_toml, &self.plan_path)
    }
}

/// One packet of a run as stored.
#[derive(Debug, Clone, Serialize)]
pub struct PacketRecord {
    pub id: String,
    pub index: usize,
    pub title: String,
    pub role: String,
    pub state: PacketState,
    pub phase: Option<Phase>,
    pub branch: String,
    pub worktree: String,
    pub attempt: u32,
    /// The commit the packet's branch started from (its dependencies' merged work, or the base).
    pub start: Option<String>,
    pub commit: Option<String>,
    pub reason: Option<String>,
    pub pgid: Option<i32>,
    pub removed: bool,
    pub backup: Option<String>,
    pub updated_ms: i64,
    /// Milliseconds per phase of the packet's pipeline, derived from the journal by status
    /// queries (empty as the packet table stores it).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub timings: super::PhaseDurations,
}

/// What is needed to create a run and its packets.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: String,
    pub objective: String,
    pub base: String,
    pub plan_toml: String,
    pub plan_path: String,
    pub worker_cmd: Option<String>,
    pub max_parallel: usize,
    pub timeout_secs: u64,
    pub worktree_root: String,
    pub packets: Vec<NewPacket>,
}

/// What is needed to create one packet row.
#[derive(Debug, Clone)]
pub struct NewPacket {
    pub id: String,
    pub title: String,
    pub role: String,
    pub branch: String,
    pub worktree: String,
}

/// One journal entry as read back.
#[derive(Debug, Clone, Serialize)]
pub struct JournalEntry {
    pub seq: i64,
    pub ts_ms: i64,
    #[serde(flatten)]
    pub event: super::Event,
}

//! What a merge did, for the terminal and `--json`.

use serde::Serialize;

/// One validated batch of packets.
#[derive(Debug, Clone, Serialize)]
pub struct Batch {
    pub packets: Vec<String>,
    /// The candidate commit that was validated.
    pub candidate: String,
    pub passed: bool,
}

/// A packet that was not integrated, and why.
#[derive(Debug, Clone, Serialize)]
pub struct SentBack {
    pub packet: String,
    pub reason: String,
    /// Conflicting paths, when the reason is a conflict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The validation command the packet's clean merge broke, when that is the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<BrokenCommand>,
}

/// A validation command that failed on the merged tree, and the end of its output.
#[derive(Debug, Clone, Serialize)]
pub struct BrokenCommand {
    pub command: String,
    pub tail: String,
}

/// The outcome of `integrate`.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    pub run: String,
    pub target: String,
    /// The integration branch's short name.
    pub integration: String,
    /// The integration branch's tip at the end.
    pub commit: String,
    /// Packets integrated by this merge, in order.
    pub integrated: Vec<String>,
    /// Packets that were on the integration branch already.
    pub already_integrated: Vec<String>,
    pub sent_back: Vec<SentBack>,
    pub batches: Vec<Batch>,
    /// True when the target branch points at the integration tip.
    pub target_advanced: bool,
    /// Why the target was not advanced, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_note: Option<String>,
    /// True if and only if this merge moved the target's ref (`target_advanced` with the
    /// target already at the integration tip leaves it false).
    pub target_moved: bool,
}

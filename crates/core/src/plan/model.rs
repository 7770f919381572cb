//! The plan and its packets as the engine sees them, after parsing.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::PlanError;
use super::parse::SourceMap;
use super::scope::Scope;

/// The role a packet gets when its table names none.
pub const DEFAULT_ROLE: &str = "coder";

/// One objective split into packets of work, as read from a plan file.
///
/// The serialized form mirrors the TOML shape (`[[packet]]` tables under the key `packet`), so a
/// plan written back out reads in again unchanged. Locations in the source file are kept aside
/// (not serialized) so that `validate` can point at the offending line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// What the whole run must achieve.
    pub objective: String,
    /// The commit-ish the run starts from; `None` means the current branch's commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The most workers that may run at once, packets and their candidates together; `None`
    /// leaves it to the configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<usize>,
    /// The packets, in plan order (the order that breaks scheduling ties).
    #[serde(default, rename = "packet")]
    pub packets: Vec<Packet>,
    /// Where each value sat in the source text, when the plan came from one.
    #[serde(skip)]
    pub(crate) source: Option<Arc<SourceMap>>,
}

/// The smallest unit of delegated work: what to do, which files it may touch, what it waits for
/// and how its result is checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packet {
    /// A stable name (`[a-z0-9-]`, at most 48 characters) used in branch and worktree names.
    pub id: String,
    /// A one-line summary.
    pub title: String,
    /// The agent role that does the work (`coder` when omitted).
    #[serde(default = "default_role")]
    pub role: String,
    /// The instructions the worker receives.
    pub description: String,
    /// The declared scope: repository-relative paths or globs the packet may change.
    pub files: Vec<String>,
    /// The symbols the packet plans to edit, as `path:Qualified.name` entries whose path is one
    /// of `files` (e.g. `src/app.py:Client.send`). Two packets that share a file may run in
    /// parallel when both name their symbols there and the symbols' definitions are apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
    /// Ids of packets whose work must be merged before this one starts.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Shell commands run in the packet's worktree; all must succeed for the gate to pass.
    #[serde(default)]
    pub validation: Vec<String>,
    /// Free-text criteria the reviewer checks.
    #[serde(default)]
    pub acceptance: Vec<String>,
    /// Free-text risks the reviewer and the report mention.
    #[serde(default)]
    pub risks: Vec<String>,
    /// True when the packet may rightly change nothing (an investigation, a check); otherwise
    /// a packet that declares files and changes none of them is not done.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub may_be_empty: bool,
    /// How many candidates work the packet side by side (1 to [`MAX_ATTEMPTS`]); the one that
    /// passes its validation with the smallest change becomes the packet's work. `None` is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// True when the planner or the plan reviewer judged the packet risky; with `[start]
    /// best_of = "auto"` a risky packet without its own `attempts` gets `[best_of] n`
    /// candidates. Otherwise only shown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub risky: bool,
}

/// The most candidates one packet may fan out to.
pub const MAX_ATTEMPTS: u32 = 8;

fn default_role() -> String {
    DEFAULT_ROLE.to_string()
}

impl Plan {
    /// Returns a plan with no source locations, for plans built in code or from model output.
    pub fn new(objective: impl Into<String>, packets: Vec<Packet>) -> Plan {
        Plan {
            objective: objective.into(),
            base: None,
            max_parallel: None,
            packets,
            source: None,
        }
    }

    /// Returns the name of the file the plan was read from, if it was read from one.
    pub fn source_name(&self) -> Option<&str> {
        self.source.as_deref().map(SourceMap::name)
    }

    /// Returns where the `base` value sits in the source file, to point errors about it there.
    pub fn base_location(&self) -> Option<super::Location> {
        let source = self.source.as_deref()?;
        source.base.as_ref().map(|span| source.locate(span.start))
    }
}

impl Plan {
    /// Returns where `symbols` entry `entry` of packet `packet` sits in the source file.
    pub fn symbol_location(&self, packet: usize, entry: usize) -> Option<super::Location> {
        let source = self.source.as_deref()?;
        let id = &self.packets.get(packet)?.id;
        let span = source.packet(packet, id)?.symbols.get(entry)?;
        Some(source.locate(span.start))
    }
}

impl Packet {
    /// Returns how many candidates work the packet: its `attempts`, at least one.
    pub fn candidates(&self) -> u32 {
        self.attempts.unwrap_or(1).max(1)
    }

    /// Returns the compiled declared scope, or the first pattern that cannot be compiled.
    ///
    /// `validate` reports every bad pattern; this stops at the first because callers that need
    /// a scope (gates, the scheduler) only run on validated plans.
    pub fn scope(&self) -> Result<Scope, PlanError> {
        Scope::new(&self.files).map_err(|e| PlanError::Pattern {
            packet: self.id.clone(),
            pattern: e.pattern,
            problem: e.problem,
        })
    }
}

//! What a run's page reads of its journal: the gates it passed (reviews, merge batches), its
//! spend over time, when each packet started, and its report.

use serde::Serialize;

use crate::store::{Event, Store};

use super::Run;

/// One journaled event with its time, as a page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct GateEntry {
    pub ts_ms: i64,
    pub event: Event,
}

/// The run's gates from its journal: each packet review, the merge coordinator's batches and
/// what it sent back, and the tokens and cost of its model calls over time.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Gates {
    pub reviews: Vec<GateEntry>,
    pub merge: Vec<GateEntry>,
    /// One point per model call: its time, the tokens so far, the cost so far in dollars.
    pub spend: Vec<(i64, u64, f64)>,
}

impl Run {
    /// Returns the run's gates, or `None` when the repository has no store yet.
    pub fn gates(&self) -> Option<Gates> {
        let store = Store::open_existing(self.common()).ok().flatten()?;
        // Only the kinds shown are read: tool calls and agent states, the bulk of a run's
        // journal, are not decoded on every refresh of a page.
        let entries = store
            .events_of_kinds(
                &self.id,
                &[
                    "packet_reviewed",
                    "merge_started",
                    "packet_conflicted",
                    "merge_validation_finished",
                    "packet_integrated",
                    "packet_sent_back",
                    "merge_finished",
                    "agent_model_call",
                ],
            )
            .unwrap_or_default();
        let mut gates = Gates::default();
        let (mut tokens, mut nanos) = (0u64, 0u64);
        for e in entries {
            let entry = GateEntry {
                ts_ms: e.ts_ms,
                event: e.event,
            };
            match &entry.event {
                Event::PacketReviewed { .. } => gates.reviews.push(entry),
                Event::MergeStarted { .. }
                | Event::PacketConflicted { .. }
                | Event::MergeValidationFinished { .. }
                | Event::PacketIntegrated { .. }
                | Event::PacketSentBack { .. }
                | Event::MergeFinished { .. } => gates.merge.push(entry),
                Event::AgentModelCall {
                    input_tokens,
                    output_tokens,
                    cost_nanos,
                    ..
                } => {
                    tokens += input_tokens + output_tokens;
                    nanos += cost_nanos.unwrap_or(0);
                    gates.spend.push((entry.ts_ms, tokens, nanos as f64 / 1e9));
                }
                _ => {}
            }
        }
        Some(gates)
    }

    /// Returns one packet's review verdicts, oldest first.
    pub fn reviews_of(&self, packet: &str) -> Vec<GateEntry> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| s.events_of_kind(&self.id, "packet_reviewed").ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|e| matches!(&e.event, Event::PacketReviewed { packet: p, .. } if p == packet))
            .map(|e| GateEntry {
                ts_ms: e.ts_ms,
                event: e.event,
            })
            .collect()
    }

    /// Returns when each packet of the run started, oldest first (a packet that started again
    /// appears again).
    pub fn packet_starts(&self) -> Vec<(String, i64)> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| s.events_of_kind(&self.id, "packet_started").ok())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::PacketStarted { packet, .. } => Some((packet, e.ts_ms)),
                _ => None,
            })
            .collect()
    }

    /// Returns the token usage of the run's agents as the engine journaled it.
    pub fn agent_usage(&self) -> Vec<crate::store::AgentUsage> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| s.agent_usage(&self.id).ok())
            .unwrap_or_default()
    }

    /// Returns the run's final report (Markdown) once written.
    pub fn report(&self) -> Option<String> {
        fs_err::read_to_string(crate::exec::run_dir(self.common(), &self.id).join("report.md")).ok()
    }

    /// Returns the run's directory, where its packets' transcripts are.
    pub fn dir(&self) -> std::path::PathBuf {
        crate::exec::run_dir(self.common(), &self.id)
    }
}

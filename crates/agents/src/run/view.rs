//! What a run's page reads of its journal: the gates it passed (reviews, merge batches), its
//! spend over time, when each packet started, and its report.

use serde::Serialize;

use crate::status;
use orchestra_core::config::Price;
use orchestra_core::store::{Event, EventKind, PacketRecord, Store};

use super::LifecycleError;

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
    /// One point per model call, from the one accounting the header and `status` show: its
    /// time, the tokens so far, the cost so far in dollars (`None` while no call had a price).
    pub spend: Vec<(i64, u64, Option<f64>)>,
}

impl Run {
    /// Returns the run's gates, or `None` when the repository has no store yet; `price` prices
    /// the model calls as `[prices]` does.
    pub fn gates(&self, price: &dyn Fn(&str) -> Option<Price>) -> Option<Gates> {
        let store = Store::open_existing(self.common()).ok().flatten()?;
        // Only the kinds shown are read: tool calls and agent states, the bulk of a run's
        // journal, are not decoded on every refresh of a page.
        let entries = store
            .events_of_kinds(
                &self.id,
                &[
                    EventKind::PacketReviewed,
                    EventKind::MergeStarted,
                    EventKind::PacketConflicted,
                    EventKind::MergeValidationFinished,
                    EventKind::PacketIntegrated,
                    EventKind::PacketSentBack,
                    EventKind::MergeFinished,
                ],
            )
            .unwrap_or_default();
        let mut gates = Gates::default();
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
                _ => {}
            }
        }
        gates.spend = status::spend_points(&status::model_calls(self.common(), &self.id), price)
            .into_iter()
            .map(|p| (p.ts_ms, p.tokens, p.cost))
            .collect();
        Some(gates)
    }

    /// Returns a packet's own change: against its start, or against the integration tip its
    /// conflict resolution merged; `None` before its first commit.
    pub fn own_change(
        &self,
        packet: &PacketRecord,
    ) -> Result<Option<orchestra_core::merge::OwnChange>, LifecycleError> {
        let store = Store::open(self.common())?;
        let git = orchestra_git::git::Git::new(self.common());
        Ok(orchestra_core::merge::own_change(
            &git, &store, &self.id, packet,
        )?)
    }

    /// Returns one packet's review verdicts, oldest first.
    pub fn reviews_of(&self, packet: &str) -> Vec<GateEntry> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| {
                s.events_of_kind(&self.id, orchestra_core::store::EventKind::PacketReviewed)
                    .ok()
            })
            .unwrap_or_default()
            .into_iter()
            .filter(|e| matches!(&e.event, Event::PacketReviewed { packet: p, .. } if p == packet))
            .map(|e| GateEntry {
                ts_ms: e.ts_ms,
                event: e.event,
            })
            .collect()
    }

    /// Returns a best-of-N packet's candidates on its latest attempt — what each came to and
    /// why the winner won — or `None` for a packet worked by one.
    pub fn candidates_of(&self, packet: &str) -> Option<status::PacketCandidates> {
        let store = Store::open_existing(self.common()).ok().flatten()?;
        status::packet_candidates(&store, &self.id)
            .ok()?
            .into_iter()
            .find(|c| c.packet == packet)
    }

    /// Returns when each packet of the run started, oldest first (a packet that started again
    /// appears again).
    pub fn packet_starts(&self) -> Vec<(String, i64)> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| {
                s.events_of_kind(&self.id, orchestra_core::store::EventKind::PacketStarted)
                    .ok()
            })
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::PacketStarted { packet, .. } => Some((packet, e.ts_ms)),
                _ => None,
            })
            .collect()
    }

    /// Returns the token usage of the run's agents as the engine journaled it.
    pub fn agent_usage(&self) -> Vec<orchestra_core::store::AgentUsage> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| s.agent_usage(&self.id).ok())
            .unwrap_or_default()
    }

    /// Returns the run's final report (Markdown) once written, followed by where its pull
    /// requests stand now when the run was landed (`git orchestra land` follows them after the
    /// report was written, so that section is read from the journal each time).
    pub fn report(&self) -> Option<String> {
        let mut text = fs_err::read_to_string(self.dir().report_md()).ok()?;
        if let Some(section) = crate::land::markdown(&self.landing(), orchestra_sys::exec::now_ms())
        {
            text.push_str(&format!("\n{section}"));
        }
        Some(text)
    }

    /// Returns where each of the run's pull requests stood at `land`'s last look (empty when
    /// the run was never landed).
    pub fn landing(&self) -> Vec<crate::land::PrLanding> {
        Store::open_existing(self.common())
            .ok()
            .flatten()
            .and_then(|s| crate::land::states(self.common(), &s, &self.id).ok())
            .unwrap_or_default()
    }

    /// Returns the run's directory, where its packets' transcripts are.
    pub fn dir(&self) -> orchestra_sys::exec::RunDir {
        orchestra_sys::exec::RunDir::new(self.common(), &self.id)
    }
}

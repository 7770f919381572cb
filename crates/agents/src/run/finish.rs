//! Finishing a run: publishing its succeeded packets as pull requests (on a forge, or as
//! local Markdown files), and for a `start` run journaling where they are, so `status` and
//! a resume know it published.

use std::collections::BTreeMap;

use crate::orchestrator::{self, Report, StartJournal, WorkflowEvent};
use orchestra_core::forge::{self, Forge, ForgeError, PrReport, PublishOptions};

use super::{LifecycleError, Run, RunKind};

impl Run {
    /// Opens or updates one pull request per succeeded packet of the run (stacked where
    /// packets depend on each other) on `forge`, or writes them as local files without one.
    pub fn publish(
        &self,
        forge: Option<&dyn Forge>,
        opts: &PublishOptions,
    ) -> Result<PrReport, ForgeError> {
        forge::publish(&self.repo, &self.id, forge, opts)
    }

    /// Journals where a `start` run's pull requests of `report` are (their URL, else their
    /// local file); a run `start` did not make keeps no such record.
    pub fn record_published(&self, report: &PrReport) -> Result<(), LifecycleError> {
        if self.kind != RunKind::Start {
            return Ok(());
        }
        let prs = report
            .entries
            .iter()
            .map(|e| orchestrator::PublishedPr {
                packet: e.packet.clone(),
                location: e
                    .url
                    .clone()
                    .unwrap_or_else(|| e.file.display().to_string()),
            })
            .collect();
        StartJournal::open(self.common(), &self.id)?.append(&WorkflowEvent::Published { prs })?;
        Ok(())
    }
}

/// Returns each packet's section of a `start` run's final report, by packet id: what its pull
/// request's body adds.
pub fn report_notes(report: Option<&Report>) -> BTreeMap<String, String> {
    report
        .iter()
        .flat_map(|r| &r.packets)
        .map(|p| (p.id.clone(), orchestrator::report::render_packet(p)))
        .collect()
}

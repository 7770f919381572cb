//! Landing a run: following its pull requests on the forge until they are merged, closed by a
//! person, or wait for one (see [`crate::land`]).

use orchestra_core::forge::Forge;
use orchestra_core::store::Event;

use super::Run;
use crate::land::{self, Fixers, LandError, LandOptions, LandReport};

impl Run {
    /// Follows this run's pull requests on `forge` as `opts` says, calling `on_event` with each
    /// journaled step, and returns where each stands at the end.
    pub fn land(
        &self,
        forge: &dyn Forge,
        opts: &LandOptions,
        on_event: &mut dyn FnMut(&Event),
    ) -> Result<LandReport, LandError> {
        land::land(&self.repo, &self.id, forge, opts, on_event)
    }

    /// Follows this run's pull requests as [`Run::land`] does, with `fixers` working and
    /// re-gating its fix rounds (the run's agents, review and sandboxes).
    pub fn land_with(
        &self,
        forge: &dyn Forge,
        opts: &LandOptions,
        fixers: Fixers<'_>,
        on_event: &mut dyn FnMut(&Event),
    ) -> Result<LandReport, LandError> {
        land::land_with(&self.repo, &self.id, forge, opts, fixers, on_event)
    }
}

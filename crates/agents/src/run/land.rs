//! Landing a run: following its pull requests on the forge until they are merged, closed by a
//! person, or wait for one (see [`crate::land`]).

use orchestra_core::forge::Forge;
use orchestra_core::store::{Event, Store};

use super::{LifecycleError, Run};
use crate::land::{self, LandError, LandOptions, LandReport};

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

    /// Returns the latest landing step journaled for each packet's pull request (observed,
    /// merged, waiting for a person), by packet id; empty when the run was never landed.
    pub fn landing(&self) -> Result<std::collections::BTreeMap<String, Event>, LifecycleError> {
        match Store::open_existing(self.common())? {
            Some(store) => Ok(land::observed(&store, &self.id)?),
            None => Ok(Default::default()),
        }
    }
}

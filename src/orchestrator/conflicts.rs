//! Handling of a packet the merge coordinator sent back for conflicts during `start`: the
//! shared resolution of [`crate::merge::resolve`] with the packet's agent as the worker.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::engine::Worker;
use crate::merge::{self, ConflictWorker, ResolveError};
use crate::plan::Packet;
use crate::store::{PacketRecord, Store};

/// Why a conflict was not resolved.
pub type ConflictError = ResolveError;

/// What one resolution needs.
pub struct Resolution<'a> {
    pub common_dir: &'a Path,
    pub run: &'a str,
    pub objective: &'a str,
    pub record: &'a PacketRecord,
    pub packet: &'a Packet,
    pub integration: &'a str,
    pub paths: &'a [String],
    /// The directory the resolution's notes and transcript go to.
    pub dir: &'a Path,
    pub round: u32,
    pub stop: &'a AtomicBool,
    pub timeout: Duration,
}

/// Resolves one conflicted packet with `worker`; returns the packet's new commit.
pub fn resolve(r: &Resolution<'_>, worker: &dyn Worker) -> Result<String, ConflictError> {
    let onto = format!("refs/heads/{}", r.integration);
    let journal = |event| -> Result<(), crate::store::StoreError> {
        Store::open(r.common_dir)?.record(r.run, &event).map(|_| ())
    };
    merge::resolve_conflicts(
        &merge::Resolution {
            run: r.run,
            objective: r.objective,
            record: r.record,
            packet: r.packet,
            integration: r.integration,
            onto: &onto,
            paths: r.paths,
            dir: r.dir,
            round: r.round,
            stop: r.stop,
            timeout: r.timeout,
            revalidate: false,
            journal: &journal,
        },
        ConflictWorker::Agent(worker),
    )
}

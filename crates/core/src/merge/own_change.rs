//! A packet's own change: the commit range every view of a packet's diff shows.
//!
//! A packet's change is normally its commit against the point it started from. Once a conflict
//! (or a validation the merge broke) was resolved by merging the integration branch into the
//! packet's branch, that range also holds every packet integrated before it; from then on the
//! packet's own change is measured against the integration tip it merged (the `onto` of its
//! `PacketResolved`).

use crate::store::{Event, PacketRecord, Store, StoreError};
use orchestra_git::git::{Git, GitError};

/// Why a packet's change could not be located.
#[derive(Debug, thiserror::Error)]
pub enum OwnChangeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] GitError),
}

/// The commits between which a packet's own change lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnChange {
    /// What the change is measured against: the packet's start, or the integration tip its
    /// latest conflict resolution merged.
    pub base: String,
    /// The packet's latest commit.
    pub tip: String,
    /// True when `base` is an integration tip a resolution merged rather than the start.
    pub merged_onto: bool,
}

/// Returns the range of `packet`'s own change in `run`, or `None` when it has no commit yet.
///
/// The latest resolution whose commit the packet's tip still contains sets the base; a packet
/// redone from its start since then (its tip no longer descends from it) is measured from its
/// start again.
pub fn own_change(
    git: &Git,
    store: &Store,
    run: &str,
    packet: &PacketRecord,
) -> Result<Option<OwnChange>, OwnChangeError> {
    let (Some(start), Some(tip)) = (&packet.start, &packet.commit) else {
        return Ok(None);
    };
    let resolutions: Vec<(String, String)> = store
        .events_of_kind(run, crate::store::EventKind::PacketResolved)?
        .into_iter()
        .filter_map(|e| match e.event {
            Event::PacketResolved {
                packet: p,
                commit,
                onto,
            } if p == packet.id => Some((commit, onto)),
            _ => None,
        })
        .collect();
    for (commit, onto) in resolutions.into_iter().rev() {
        if git.is_ancestor(&commit, tip)? {
            return Ok(Some(OwnChange {
                base: onto,
                tip: tip.clone(),
                merged_onto: true,
            }));
        }
    }
    Ok(Some(OwnChange {
        base: start.clone(),
        tip: tip.clone(),
        merged_onto: false,
    }))
}

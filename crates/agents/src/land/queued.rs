//! Pull requests the forge merges itself: once landing handed one to GitLab's merge train or
//! to "merge when pipeline succeeds", it is journaled once ([`Event::PrQueued`]) with how and
//! its place on the train, and each later look shows the same wait instead of a generic one,
//! so `status`, the web view and the report say since when the forge has it — also after
//! `land` was restarted, which reads the hand-over back from the journal.

use orchestra_core::forge::PrStatus;
use orchestra_core::store::{Event, EventKind, Store};

use super::{Followed, Journal, LandError};

/// A pull request the forge merges itself, at the head it was handed over with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Queued {
    pub head_sha: String,
    /// What landing waits for, as the forge put it (`GitLab to merge it when …`).
    pub how: String,
    /// Its place on the merge train (1 merges next), when the forge said.
    pub position: Option<u64>,
}

impl Queued {
    /// Returns what landing waits for while the forge has it.
    pub fn waiting(&self) -> String {
        waiting_text(&self.how, self.position)
    }
}

/// Returns what landing waits for while the forge merges it `how`, at `position` on the train.
pub(super) fn waiting_text(how: &str, position: Option<u64>) -> String {
    match position {
        Some(n) => format!("{how}, in merge train position {n}"),
        None => how.to_string(),
    }
}

/// Puts the last hand-over to the forge each pull request of `followed` had in earlier
/// `land`s of `run` back, so a restarted `land` keeps showing the same wait since the same
/// time.
pub(super) fn restore(
    store: &Store,
    run: &str,
    followed: &mut [Followed],
) -> Result<(), LandError> {
    for e in store.events_of_kind(run, EventKind::PrQueued)? {
        if let Event::PrQueued {
            packet,
            head_sha,
            how,
            position,
            ..
        } = e.event
            && let Some(f) = followed.iter_mut().find(|f| f.packet == packet)
        {
            f.queued = Some(Queued {
                head_sha,
                how,
                position,
            });
        }
    }
    Ok(())
}

/// Notes that the forge merges `f`'s pull request (at `status`'s head) itself `how`, at
/// `position` on its train: journaled when that is new, and returns the summary line.
pub(super) fn note(
    store: &mut Store,
    f: &mut Followed,
    status: &PrStatus,
    how: String,
    position: Option<u64>,
    journal: &mut Journal<'_>,
) -> Result<String, LandError> {
    // A later look at a car on the train may not say its place: it keeps the one last said.
    let position = position.or_else(|| {
        f.queued
            .as_ref()
            .filter(|q| q.head_sha == status.head_sha && q.how == how)
            .and_then(|q| q.position)
    });
    let queued = Queued {
        head_sha: status.head_sha.clone(),
        how,
        position,
    };
    let waiting = queued.waiting();
    if f.queued.as_ref() != Some(&queued) {
        journal(
            store,
            Event::PrQueued {
                packet: f.packet.clone(),
                number: f.number,
                head_sha: queued.head_sha.clone(),
                how: queued.how.clone(),
                position: queued.position,
            },
        )?;
        // What the next looks observe while the forge has it: nothing new to journal.
        f.observed = Some(("open".into(), status.head_sha.clone(), waiting.clone()));
        f.queued = Some(queued);
    }
    Ok(format!("waiting for {waiting}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_on_the_train_is_part_of_the_wait() {
        let q = Queued {
            head_sha: "abc".into(),
            how: "GitLab's merge train to merge it".into(),
            position: Some(2),
        };
        assert_eq!(
            q.waiting(),
            "GitLab's merge train to merge it, in merge train position 2"
        );
        assert_eq!(
            waiting_text("GitLab to merge it when its pipeline succeeds", None),
            "GitLab to merge it when its pipeline succeeds"
        );
    }
}

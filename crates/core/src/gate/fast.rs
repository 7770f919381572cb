//! The pre-push gate's fast path: answers "is every pushed tip's tree approved?" inside the
//! process, reading the notes ref with gix, so a push of reviewed work spawns no `git` at all.
//!
//! It only ever says yes or "look closer": any doubt (an object it cannot read, a ref it does
//! not know, a verdict that does not approve) sends the caller to the full check in
//! [`super::hook::check_push`], which explains refusals and may review. Deletions and refs the
//! remote already has pass here exactly as they pass there; notes refs always go to the full
//! check, which reads what they hold (an annotated tag does too: verdicts name commits).

use std::path::Path;

use super::hook::PushUpdate;
use super::verdict::{ApprovalPolicy, NOTES_REF, Verdict};

/// Returns true if and only if every update is a deletion, changes nothing, or pushes a tip
/// whose tree carries a verdict `policy` accepts. `dir` is where the hook runs; `GIT_DIR` wins
/// when git set it.
pub fn all_approved(dir: &Path, updates: &[PushUpdate], policy: ApprovalPolicy) -> bool {
    // Replace refs are never followed: the verdict is for the tree the pushed commit names.
    let overrides = ["core.useReplaceRefs=false"];
    let repo = match std::env::var_os("GIT_DIR") {
        Some(git_dir) => gix::open_opts(
            dir.join(git_dir),
            gix::open::Options::default().config_overrides(overrides),
        ),
        None => {
            let trust = gix::sec::trust::Mapping::<gix::open::Options>::default();
            gix::ThreadSafeRepository::discover_opts(
                dir,
                Default::default(),
                gix::sec::trust::Mapping {
                    full: trust.full.config_overrides(overrides),
                    reduced: trust.reduced.config_overrides(overrides),
                },
            )
            .map(Into::into)
        }
    };
    let Ok(repo) = repo else {
        return false;
    };
    let is_zero = |id: &str| !id.is_empty() && id.bytes().all(|b| b == b'0');
    let mut notes: Option<gix::ObjectId> = None;
    for u in updates {
        if is_zero(&u.local_oid) || u.local_oid == u.remote_oid {
            continue;
        }
        // What a notes ref holds is checked by the full check.
        if u.remote_ref.starts_with("refs/notes/") {
            return false;
        }
        let notes_tree = match notes {
            Some(t) => t,
            None => match notes_tree(&repo) {
                Some(t) => {
                    notes = Some(t);
                    t
                }
                None => return false,
            },
        };
        if !tip_approved(&repo, notes_tree, &u.local_oid, policy) {
            return false;
        }
    }
    true
}

/// Returns the tree of the notes ref's tip.
fn notes_tree(repo: &gix::Repository) -> Option<gix::ObjectId> {
    let mut reference = repo.try_find_reference(NOTES_REF).ok()??;
    let commit = reference.peel_to_commit().ok()?;
    commit.tree_id().ok().map(|id| id.detach())
}

fn tip_approved(
    repo: &gix::Repository,
    notes: gix::ObjectId,
    tip_hex: &str,
    policy: ApprovalPolicy,
) -> bool {
    let Ok(tip) = gix::ObjectId::from_hex(tip_hex.as_bytes()) else {
        return false;
    };
    let Some(tree) = repo
        .find_object(tip)
        .ok()
        .and_then(|o| o.peel_to_commit().ok())
        .and_then(|c| c.tree_id().ok())
    else {
        return false;
    };
    let tree_hex = tree.to_string();
    let Some(text) = note_blob(repo, notes, &tree_hex) else {
        return false;
    };
    // Only the commit that was reviewed: its history is what the review scanned. Another commit
    // with the same tree may hold other history, which the full check reads.
    serde_json::from_slice::<Verdict>(&text)
        .is_ok_and(|v| policy.accepts(&v) && v.tree == tree_hex && v.commit == tip_hex)
}

/// Returns the note on the object `hex`, following git's fan-out directories (`ab/cdef…`).
fn note_blob(repo: &gix::Repository, root: gix::ObjectId, hex: &str) -> Option<Vec<u8>> {
    let mut tree_id = root;
    let mut rest = hex;
    loop {
        let tree = repo.find_object(tree_id).ok()?.try_into_tree().ok()?;
        let mut next = None;
        {
            let decoded = tree.decode().ok()?;
            for e in &decoded.entries {
                if e.filename == rest.as_bytes() && !e.mode.is_tree() {
                    return repo.find_object(e.oid).ok().map(|o| o.data.clone());
                }
                if rest.len() > 2 && e.mode.is_tree() && e.filename == &rest.as_bytes()[..2] {
                    next = Some(e.oid.to_owned());
                }
            }
        }
        tree_id = next?;
        rest = &rest[2..];
    }
}

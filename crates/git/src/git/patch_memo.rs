//! The patches read lately between two commit ids, kept for the next reader in the process: a
//! packet's model reviewer and the run's report read the same patch, and two object ids pin
//! it, so the second reader needs no git process.
//!
//! Only ranges named by full object ids are kept (a ref name moves); the memory is bounded,
//! the oldest patches going first.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Most bytes of patches kept at once.
const KEPT_BYTES: usize = 16 << 20;

/// A patch's repository (the runner's directory: its configuration shapes the patch), base
/// and tip.
type Key = (PathBuf, String, String);

/// The kept patches, oldest first.
static KEPT: OnceLock<Mutex<VecDeque<(Key, String)>>> = OnceLock::new();

/// Returns the key of `base..tip` in `dir`, `None` unless both are full object ids.
fn key(dir: &Path, base: &str, tip: &str) -> Option<Key> {
    (super::head_file::is_object_id(base) && super::head_file::is_object_id(tip))
        .then(|| (dir.to_path_buf(), base.to_string(), tip.to_string()))
}

/// Returns the kept patch of `base..tip` read in `dir`, if one is kept.
pub(super) fn get(dir: &Path, base: &str, tip: &str) -> Option<String> {
    let key = key(dir, base, tip)?;
    let kept = KEPT.get()?.lock().ok()?;
    kept.iter().find(|(k, _)| *k == key).map(|(_, p)| p.clone())
}

/// Keeps `patch`, read in `dir` for `base..tip`, dropping the oldest patches beyond the bound;
/// a patch larger than a quarter of the bound is not kept.
pub(super) fn keep(dir: &Path, base: &str, tip: &str, patch: &str) {
    let Some(key) = key(dir, base, tip) else {
        return;
    };
    if patch.len() > KEPT_BYTES / 4 {
        return;
    }
    let Ok(mut kept) = KEPT.get_or_init(Default::default).lock() else {
        return;
    };
    if kept.iter().any(|(k, _)| *k == key) {
        return;
    }
    kept.push_back((key, patch.to_string()));
    let mut total: usize = kept.iter().map(|(_, p)| p.len()).sum();
    while total > KEPT_BYTES {
        match kept.pop_front() {
            Some((_, p)) => total -= p.len(),
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ranges_of_object_ids_are_kept() {
        let (a, b) = ("1".repeat(40), "2".repeat(40));
        let dir = Path::new("/nonexistent/patch-memo-test");
        keep(dir, &a, "HEAD", "moving");
        assert_eq!(get(dir, &a, "HEAD"), None);
        keep(dir, &a, &b, "pinned");
        assert_eq!(get(dir, &a, &b).as_deref(), Some("pinned"));
        assert_eq!(get(Path::new("/elsewhere"), &a, &b), None);
    }
}

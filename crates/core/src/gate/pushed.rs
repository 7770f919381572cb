//! What a push publishes besides branch tips, as the pre-push gate judges it: which commits the
//! remote already has (in the remote's own words, never this repository's remote-tracking refs,
//! which anyone who can write refs here sets), that the verdicts' notes ref holds notes and
//! nothing else, and what the messages of annotated tags say.

use super::GateError;
use super::checks::{Finding, Severity};
use super::hook::PushUpdate;
use super::secrets;
use orchestra_git::git::Git;

/// Returns the ids of the commits (and tags) `remote` already has that exist here: the
/// `<remote oid>`s git passed the hook and every id the remote advertises (`git ls-remote`).
/// A remote that cannot be asked leaves the hook's own ids, so more is reviewed, never less.
pub fn published(
    git: &Git,
    remote: &str,
    updates: &[PushUpdate],
) -> Result<Vec<String>, GateError> {
    let is_zero = |id: &str| id.bytes().all(|b| b == b'0');
    let mut ids: Vec<String> = updates
        .iter()
        .map(|u| u.remote_oid.clone())
        .filter(|id| !id.is_empty() && !is_zero(id))
        .collect();
    match git.advertised_ids(remote) {
        Ok(advertised) => ids.extend(advertised),
        Err(e) => tracing::warn!(%remote, error = %e, "cannot list the remote's refs"),
    }
    ids.sort();
    ids.dedup();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let present = git.object_sizes(&refs)?;
    ids.retain(|id| present.contains_key(id));
    Ok(ids)
}

/// Returns why the commits `update` would add to the notes ref are not notes — the first
/// entry of a new commit's tree that is not a blob named by an object id (in git's fan-out
/// directories) — or `None` when every one holds notes only.
pub fn not_notes(
    git: &Git,
    update: &PushUpdate,
    published: &[String],
) -> Result<Option<String>, GateError> {
    let mut known = published.to_vec();
    if git.object_type(&update.remote_oid)?.is_some() {
        known.push(update.remote_oid.clone());
    }
    for commit in git.new_to(&update.local_oid, &known)? {
        for (mode, kind, path) in git.tree_entries(&commit)? {
            if mode != "100644" || kind != "blob" || !is_note_path(&path) {
                let short = &commit[..commit.len().min(12)];
                return Ok(Some(format!(
                    "commit {short} holds `{}` ({kind} {mode}), which is not a note",
                    secrets::safe_to_show(&path)
                )));
            }
        }
    }
    Ok(None)
}

/// Returns true if and only if `path` names a note: an object id in hex (40 or 64 digits),
/// split into fan-out directories of two digits each.
fn is_note_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let Some(last) = parts.pop() else {
        return false;
    };
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    let len = parts.iter().map(|p| p.len()).sum::<usize>() + last.len();
    parts.iter().all(|p| p.len() == 2 && hex(p)) && hex(last) && (len == 40 || len == 64)
}

/// Returns a blocker for every credential in the message (or headers) of the annotated tag
/// `id` and of the tags it points at in turn; nothing when `id` is not a tag.
pub fn tag_findings(git: &Git, id: &str, name: &str) -> Result<Vec<Finding>, GateError> {
    let mut out = Vec::new();
    let mut next = id.to_string();
    // A tag of a tag of …: each object is published; the chain is short in practice.
    for _ in 0..16 {
        if git.object_type(&next)?.as_deref() != Some("tag") {
            break;
        }
        let text = git.tag_object(&next)?;
        for line in text.lines() {
            for m in secrets::scan_line(line) {
                out.push(Finding {
                    severity: Severity::Blocker,
                    category: "secret".into(),
                    file: None,
                    line: None,
                    evidence: format!(
                        "{} `{}` in the message of annotated tag {}",
                        m.kind.describe(),
                        m.redacted,
                        secrets::safe_to_show(name)
                    ),
                    suggestion: "delete the tag and make it again without the credential (`git tag -d`, `git tag -a`), and revoke the credential".into(),
                });
            }
        }
        let Some(object) = text.lines().find_map(|l| l.strip_prefix("object ")) else {
            break;
        };
        next = object.trim().to_string();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_paths_are_object_ids_in_fan_out_directories() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        assert!(is_note_path(id));
        assert!(is_note_path(&format!("{}/{}", &id[..2], &id[2..])));
        assert!(is_note_path(&format!(
            "{}/{}/{}",
            &id[..2],
            &id[2..4],
            &id[4..]
        )));
        assert!(!is_note_path("src/main.rs"));
        assert!(!is_note_path(&format!("{}/{}", &id[..3], &id[3..])));
        assert!(!is_note_path(&id[..39]));
    }
}

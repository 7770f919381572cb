//! Verdicts kept in git: a JSON note under [`NOTES_REF`] on the reviewed commit, and the same
//! note on the commit's tree so "was this exact tree approved?" is one lookup.
//!
//! Notes travel with the repository (`git push origin refs/notes/orchestra/review`), survive
//! the run store, and are written with the engine's fixed identity so users without a
//! configured git identity can review.

use serde::{Deserialize, Serialize};

use super::GateError;
use super::checks::Finding;
use orchestra_git::git::Git;

/// The notes ref verdicts live under.
pub const NOTES_REF: &str = "refs/notes/orchestra/review";

/// Approve or reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
}

/// One review's result as stored in git.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Format version of this record.
    pub version: u32,
    /// The reviewed commit (the range's tip).
    pub commit: String,
    /// Its tree: identical trees share a verdict.
    pub tree: String,
    /// The commit the range was reviewed against.
    pub base: String,
    /// Who reviewed: `deterministic`, or a model reviewer's name.
    pub reviewer: String,
    pub verdict: Decision,
    /// The checks that ran.
    pub checks: Vec<String>,
    pub findings: Vec<Finding>,
    /// `<run>/<packet>` when the range was a known packet's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet: Option<String>,
    /// When the review finished, RFC 3339 UTC.
    pub timestamp: String,
    /// What the pipeline knew of the reviewed work beyond its checks: why a best-of-N
    /// packet's candidate was chosen over the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The name the deterministic reviewer signs verdicts with.
pub const DETERMINISTIC: &str = "deterministic";

impl Verdict {
    /// Returns the reviewers that approved or rejected together, in order (`reviewer` joins
    /// them with `+`).
    pub fn reviewers(&self) -> impl Iterator<Item = &str> {
        self.reviewer.split('+').filter(|r| !r.is_empty())
    }

    /// Returns one line per blocking finding (at most `max`, each at most `chars` characters):
    /// `[blocker] secrets src/a.rs:3: <redacted evidence>`.
    pub fn blocking_lines(&self, max: usize, chars: usize) -> Vec<String> {
        self.findings
            .iter()
            .filter(|f| f.severity.rejects())
            .take(max)
            .map(|f| {
                let place = f
                    .file
                    .as_deref()
                    .map_or(String::new(), |file| match f.line {
                        Some(line) => format!(" {file}:{line}"),
                        None => format!(" {file}"),
                    });
                let line = format!(
                    "[{}] {}{place}: {}",
                    f.severity.as_str(),
                    f.category,
                    f.evidence.trim()
                );
                match line.char_indices().nth(chars) {
                    Some((cut, _)) => format!("{}…", &line[..cut]),
                    None => line,
                }
            })
            .collect()
    }

    /// Returns true if and only if a reviewer other than the deterministic checks took part.
    pub fn by_model(&self) -> bool {
        self.reviewers().any(|r| r != DETERMINISTIC)
    }
}

/// Which approvals suffice: once a model reviewer is configured, a verdict the deterministic
/// checks signed alone is not enough; the range is reviewed again with the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApprovalPolicy {
    pub model_required: bool,
}

impl ApprovalPolicy {
    /// Returns true if and only if `verdict` approves and its reviewers satisfy the policy.
    pub fn accepts(&self, verdict: &Verdict) -> bool {
        verdict.verdict == Decision::Approve && (!self.model_required || verdict.by_model())
    }
}

/// Stores `verdict` as the note of its commit and of its tree, replacing earlier notes.
pub fn write_verdict(git: &Git, verdict: &Verdict) -> Result<(), GateError> {
    let json = serde_json::to_string_pretty(verdict).map_err(|e| GateError::CorruptVerdict {
        object: verdict.commit.clone(),
        message: e.to_string(),
    })?;
    for object in [&verdict.commit, &verdict.tree] {
        add_note(git, object, &json)?;
    }
    Ok(())
}

/// Stores `verdict` as the note of its commit only: it speaks for the range `base..commit`,
/// not for every commit with the same tree (the integration branch's verdict, whose tree also
/// holds the target's own history).
pub fn write_range_verdict(git: &Git, verdict: &Verdict) -> Result<(), GateError> {
    let json = serde_json::to_string_pretty(verdict).map_err(|e| GateError::CorruptVerdict {
        object: verdict.commit.clone(),
        message: e.to_string(),
    })?;
    add_note(git, &verdict.commit, &json)
}

/// Writes one note, retrying briefly when another process holds the notes ref's lock.
fn add_note(git: &Git, object: &str, text: &str) -> Result<(), GateError> {
    Ok(git.add_note(NOTES_REF, object, text)?)
}

/// Returns the verdict stored on `object` (a commit or tree id), `None` when there is none.
pub fn read_verdict(git: &Git, object: &str) -> Result<Option<Verdict>, GateError> {
    // The caller resolved the object already, so no note means "no verdict".
    let Some(text) = git.note(NOTES_REF, object)? else {
        return Ok(None);
    };
    parse_verdict(object, &text).map(Some)
}

/// Returns the verdict notes of those of `objects` (commit or tree ids) that have one, unparsed
/// (see [`parse_verdict`]), read together (see [`Git::notes_of`]): for a caller about to read
/// many, one at a time.
pub fn verdict_notes(
    git: &Git,
    objects: &[&str],
) -> Result<std::collections::HashMap<String, String>, GateError> {
    Ok(git.notes_of(NOTES_REF, objects)?)
}

/// Returns the verdict a note of `object` holds.
pub fn parse_verdict(object: &str, text: &str) -> Result<Verdict, GateError> {
    serde_json::from_str(text).map_err(|e| GateError::CorruptVerdict {
        object: object.to_string(),
        message: e.to_string(),
    })
}

/// Returns the approving verdict recorded for `tree`, if the latest verdict on it approves.
pub fn approved_for_tree(git: &Git, tree: &str) -> Result<Option<Verdict>, GateError> {
    Ok(read_verdict(git, tree)?.filter(|v| v.verdict == Decision::Approve && v.tree == tree))
}

/// Returns `secs` since the Unix epoch as an RFC 3339 UTC timestamp (`2026-01-01T00:00:00Z`).
pub fn rfc3339_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_timestamps() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(1_767_225_600), "2026-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400 + 3661), "2000-02-29T01:01:01Z");
    }
}

//! Comparing a best-of-N packet's surviving candidates side by side: what a comparing reviewer
//! reads (each candidate's diff, labelled `c<k>`, scrubbed of credentials and clipped so all
//! of them fit one prompt) and what it answers (the candidate it chose and why, with what the
//! call cost).
//!
//! Only candidates that passed the execution checks (scope check and validation) are
//! compared; the comparison picks among them and never lets a failed one win. A reviewer that
//! cannot compare, an unusable answer or a failed call leave the choice to the smallest change.

use orchestra_git::git::RepoInfo;

use super::GateError;
use crate::llm::Usage;
use crate::plan::Packet;

/// Most characters of all candidates' diffs together in one comparison; each candidate gets
/// an equal share, clipped at a line end.
pub const COMPARE_DIFF_CHARS: usize = 48_000;

/// One surviving candidate's change as a comparing reviewer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateDiff {
    /// The candidate's number (1…N): its label is `c<number>`.
    pub number: u32,
    /// Lines its change adds and removes.
    pub changed_lines: u64,
    /// Its diff against the packet's start, credentials redacted, clipped to its share.
    pub diff: String,
    /// True when the diff was clipped to fit.
    pub clipped: bool,
}

/// What a comparing reviewer is given: the packet and its surviving candidates' diffs.
pub struct CompareInput<'a> {
    pub repo: &'a RepoInfo,
    pub packet: &'a Packet,
    pub candidates: &'a [CandidateDiff],
}

/// What a comparison came to: the candidate chosen (when the answer named a usable one), why,
/// and what the call cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The chosen candidate's number; `None` when the answer could not be used.
    pub choice: Option<u32>,
    /// The reviewer's reason, or why its answer could not be used.
    pub reason: String,
    /// The model that answered, as journaled (`profile:model`).
    pub model: String,
    /// Tokens the call used.
    pub usage: Usage,
    /// What the call cost, when `[prices]` knows the model.
    pub cost: Option<f64>,
    /// How long the call took.
    pub duration_ms: u64,
}

/// Returns the diffs of `candidates` (number, commit, changed lines) against `start`, each
/// scrubbed of credentials and clipped to an equal share of `limit` characters.
pub fn candidate_diffs(
    repo: &RepoInfo,
    start: &str,
    candidates: &[(u32, &str, u64)],
    limit: usize,
) -> Result<Vec<CandidateDiff>, GateError> {
    let git = repo.git();
    let share = limit / candidates.len().max(1);
    candidates
        .iter()
        .map(|&(number, commit, changed_lines)| {
            let patch = git.diff_patch(start, commit)?;
            let (diff, clipped) = clip(&scrub(&patch), share);
            Ok(CandidateDiff {
                number,
                changed_lines,
                diff,
                clipped,
            })
        })
        .collect()
}

/// Returns `diff` with every credential redacted and every private key block left out.
pub fn scrub(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    let mut in_key = false;
    for line in diff.split_inclusive('\n') {
        let armour = line.contains("-----BEGIN") && line.contains("PRIVATE KEY");
        if armour {
            in_key = true;
            out.push_str("[a private key was left out]\n");
        }
        if in_key {
            if line.contains("-----END") {
                in_key = false;
            }
            continue;
        }
        out.push_str(&super::secrets::redact_text(line));
    }
    out
}

/// Returns the first `limit` characters of `text`, cut back to a line end, with a line saying
/// how much was left out; and whether anything was.
fn clip(text: &str, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_string(), false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    let mut out = text[..end].to_string();
    out.push_str(&format!(
        "[… {} more characters of this diff left out]\n",
        text.len() - end
    ));
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_diff_is_clipped_at_a_line_end_and_says_so() {
        let text = "+aaaa\n+bbbb\n+cccc\n";
        let (out, clipped) = clip(text, 9);
        assert!(clipped);
        assert!(out.starts_with("+aaaa\n["), "{out}");
        assert!(out.contains("12 more characters"), "{out}");
        assert_eq!(clip(text, 100), (text.to_string(), false));
    }

    #[test]
    fn credentials_and_private_keys_never_reach_the_comparison() {
        let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
        let diff = format!(
            "+token = \"{token}\"\n+-----BEGIN RSA PRIVATE KEY-----\n+MIIEow\n+-----END RSA PRIVATE KEY-----\n+after\n"
        );
        let out = scrub(&diff);
        assert!(!out.contains(&token), "{out}");
        assert!(!out.contains("MIIEow"), "{out}");
        assert!(out.contains("a private key was left out"), "{out}");
        assert!(out.ends_with("+after\n"), "{out}");
    }
}

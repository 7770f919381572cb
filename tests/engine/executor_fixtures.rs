//! Plans the executor tests share (ssh stand-in and GitHub Actions alike): the worker writing
//! one file named after its packet, three packets of which the third depends on the first two,
//! and packet `a` alone.

use std::path::PathBuf;

use crate::support::*;

/// The worker: one file named after its packet.
pub(super) const WORKER: &str =
    r#"printf 'done by %s\n' "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;

/// Writes `plan.toml` of `objective` with packets `a` and `b`, and `c` after both, each
/// validated by its file; returns its path.
pub(super) fn three_packets(repo: &TestRepo, objective: &str) -> PathBuf {
    let body = format!(
        "objective = \"{objective}\"\n\n{}{}{}",
        packet("a", "\"out-a.txt\"", "", "\"test -f out-a.txt\""),
        packet("b", "\"out-b.txt\"", "", "\"test -f out-b.txt\""),
        packet(
            "c",
            "\"out-c.txt\"",
            "\"a\", \"b\"",
            "\"test -f out-a.txt && test -f out-c.txt\""
        ),
    );
    repo.write_plan("plan.toml", &body)
}

/// Writes `plan.toml` of `objective` with packet `a` alone, validated by its file; returns its
/// path.
pub(super) fn packet_a(repo: &TestRepo, objective: &str) -> PathBuf {
    repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"{objective}\"\n\n{}",
            packet("a", "\"out-a.txt\"", "", "\"test -f out-a.txt\"")
        ),
    )
}

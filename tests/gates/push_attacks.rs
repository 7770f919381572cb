//! Pushes that try to get past the pre-push gate: a notes ref other than the verdicts', or
//! one that carries code instead of notes; a credential in an annotated tag's message; and
//! commits hidden behind a remote-tracking ref the remote never advertised. Each is a real
//! `git push` to a local bare remote with the hook installed.

use crate::gates::hook::{git_out, install, remote_has, with_remote};
use crate::support::*;

const GHP: &str = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";
const VALUE: &str = "q8Zr2LmX9vT4bN7cW1sK5dF3";

/// Returns true if and only if the bare `remote` has the ref `name`.
fn remote_has_ref(remote: &std::path::Path, name: &str) -> bool {
    git_out(remote, &["rev-parse", "--verify", "--quiet", name], false)
        .status
        .success()
}

#[test]
fn only_the_verdicts_notes_ref_passes_unreviewed_and_only_holding_notes() {
    let (repo, remote) = with_remote();
    install(&repo);
    // Notes under another name are reviewed like anything else: unreviewed, refused.
    repo.git(&[
        "notes",
        "--ref",
        "refs/notes/exfil",
        "add",
        "-m",
        "the code",
        "HEAD",
    ]);
    let out = git_out(&repo.path, &["push", "origin", "refs/notes/exfil"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!remote_has_ref(&remote, "refs/notes/exfil"));
    // A branch's commits pushed under the verdicts' notes ref are no notes: refused.
    repo.git(&["checkout", "-q", "-b", "code"]);
    repo.write("src/secret.rs", "pub fn s() {}\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "code"]);
    let out = git_out(
        &repo.path,
        &["push", "origin", "code:refs/notes/orchestra/review"],
        true,
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("not a notes tree"), "{}", text(&out));
    assert!(!remote_has_ref(&remote, "refs/notes/orchestra/review"));
    // Real verdict notes still go out without a review.
    let out = orchestra(&repo.path, &["review", "main..code"]);
    assert!(out.status.success(), "{}", text(&out));
    // Reviewed code is still no notes.
    let out = git_out(
        &repo.path,
        &["push", "origin", "code:refs/notes/orchestra/review"],
        true,
    );
    assert!(!out.status.success(), "{}", text(&out));
    let notes = "refs/notes/orchestra/review";
    let out = git_out(&repo.path, &["push", "origin", notes], true);
    assert!(out.status.success(), "{}", text(&out));
    assert!(remote_has_ref(&remote, notes));
    // A note is published with the ref: one holding a credential is refused, never echoed.
    let before = repo.git(&["rev-parse", notes]);
    repo.git(&[
        "notes",
        "--ref",
        notes,
        "add",
        "-f",
        "-m",
        &format!("key {GHP}"),
        "main",
    ]);
    let out = git_out(&repo.path, &["push", "origin", notes], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains(GHP), "{}", text(&out));
    let theirs = git_out(&remote, &["rev-parse", notes], false);
    assert_eq!(String::from_utf8_lossy(&theirs.stdout).trim(), before);
}

#[test]
fn a_credential_in_an_annotated_tag_message_is_refused_and_never_echoed() {
    let (repo, remote) = with_remote();
    install(&repo);
    // The tagged commit is already on the remote: only the tag object is new.
    repo.git(&[
        "tag",
        "-a",
        "v1",
        "-m",
        &format!("release\n\ndeploy key {GHP}"),
    ]);
    let out = git_out(&repo.path, &["push", "origin", "v1"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!remote_has_ref(&remote, "refs/tags/v1"));
    assert!(text(&out).contains("tag"), "{}", text(&out));
    assert!(!text(&out).contains(GHP), "{}", text(&out));
    // Nor does a tag of a reviewed commit get out on the commit's approval.
    crate::gates::hook::commit_on_feature(&repo, "src/a.rs", "pub fn a() {}\n");
    let out = orchestra(&repo.path, &["review", "main..feature"]);
    assert!(out.status.success(), "{}", text(&out));
    repo.git(&["tag", "-a", "v1.1", "-m", &format!("key {GHP}")]);
    let out = git_out(&repo.path, &["push", "origin", "v1.1"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!remote_has_ref(&remote, "refs/tags/v1.1"));
    assert!(!text(&out).contains(GHP), "{}", text(&out));
    repo.git(&["checkout", "-q", "main"]);
    // A clean annotated tag of a published commit goes out.
    repo.git(&["tag", "-a", "v2", "-m", "release two"]);
    let out = git_out(&repo.path, &["push", "origin", "v2"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert!(remote_has_ref(&remote, "refs/tags/v2"));
}

#[test]
fn a_forged_remote_tracking_ref_does_not_hide_commits_from_the_gate() {
    let (repo, remote) = with_remote();
    install(&repo);
    let commit = |files: &[(&str, Option<&str>)], message: &str| {
        for (path, body) in files {
            match body {
                Some(body) => repo.write(path, body),
                None => {
                    repo.git(&["rm", "-q", path]);
                }
            }
        }
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-qm", message]);
    };
    // A clean branch is reviewed: its tree carries the approval.
    repo.git(&["checkout", "-q", "-b", "clean"]);
    commit(&[("src/a.rs", Some("pub fn a() {}\n"))], "work");
    let out = orchestra(&repo.path, &["review", "main..clean"]);
    assert!(out.status.success(), "{}", text(&out));
    // Another branch reaches the same tree through a credential committed and removed, and a
    // remote-tracking ref the remote never had claims those commits are published already.
    repo.git(&["checkout", "-q", "-b", "sneaky", "main"]);
    let env = format!("DB_PASSWORD={VALUE}\n");
    commit(&[(".env", Some(&env))], "configure");
    commit(&[(".env", None)], "oops");
    repo.git(&["update-ref", "refs/remotes/origin/published", "HEAD"]);
    commit(&[("src/a.rs", Some("pub fn a() {}\n"))], "work");
    let out = git_out(&repo.path, &["push", "origin", "sneaky"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!remote_has(&remote, "sneaky"));
    assert!(!text(&out).contains(VALUE), "{}", text(&out));
}

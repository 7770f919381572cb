//! Restack conflicts sent back to the packet's worker, through `git orchestra land` against the
//! fake GitHub following a real bare remote: p1 squash-merged while someone else's change to
//! p2's file landed on main, so moving p2's own commit onto main conflicts. The worker gets the
//! conflict (`ORCHESTRA_FIX_KIND=conflict`, the file, its hunks, both sides' commits) in a
//! worktree where the rebase stopped; its resolution keeps both sides, is pushed with a lease
//! and lands, p2's old head saved and its commit kept. A worker that leaves the markers pushes
//! nothing: the pull request waits for a person, naming the file. A pull request that conflicts
//! with main that moved goes to its worker the same way. The worker runs in the workers'
//! sandbox, as in a run.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::publish_with;
use crate::forge::pull_requests::{TOKEN, packet, run_env, setup};
use crate::support::*;

/// Writes its packet's file; in a conflict round keeps what it was told in `seen` and, unless
/// `seen/leave` exists, resolves by keeping main's line and then its own.
fn worker(seen: &Path) -> String {
    format!(
        r#"if [ "$ORCHESTRA_FIX_KIND" = conflict ]; then cp "$ORCHESTRA_FIXES_FILE" "{s}/conflict-$ORCHESTRA_PACKET-$ORCHESTRA_ROUND.md"; printf '%s\n' "$ORCHESTRA_CONFLICTS" > "{s}/paths"; if [ ! -f "{s}/leave" ]; then printf "someone else's\n$ORCHESTRA_PACKET's work\n" > "out-$ORCHESTRA_PACKET.txt"; fi; else echo "$ORCHESTRA_PACKET's work" > "out-$ORCHESTRA_PACKET.txt"; fi"#,
        s = seen.display()
    )
}

/// Runs `plan` with `--pr` and the conflict-resolving worker, pull request heads following the
/// bare remote; returns the repository, the bare remote, the worker's `seen` directory and the
/// run's id.
fn published(forge: &FakeForge, plan: &str) -> (TestRepo, PathBuf, PathBuf, String) {
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    let seen = repo.scratch().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    publish_with(&repo, plan, &worker(&seen), &[("GH_TOKEN", TOKEN)]);
    forge.follow_git(&bare);
    // The worker keeps what it was told outside its worktree, where its sandbox lets it.
    repo.scratch_writable();
    let run = run_id(&repo.path);
    (repo, bare, seen, run)
}

/// Pushes someone else's version of `file` to main of the bare remote.
pub(crate) fn someone_writes(repo: &TestRepo, bare: &Path, file: &str) {
    let other = repo.scratch().join("other");
    git(
        repo.tmp.path(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join(file), "someone else's\n").unwrap();
    git(&other, &["add", file]);
    git(
        &other,
        &["commit", "-qm", &format!("Someone else writes {file}")],
    );
    git(&other, &["push", "-q", "origin", "HEAD:main"]);
    std::fs::remove_dir_all(&other).unwrap();
}

/// Runs p1 ← p2 ← p3 with `--pr`, squash-merges p1 as a person and pushes someone else's
/// version of p2's file to main.
fn conflicted(forge: &FakeForge) -> (TestRepo, PathBuf, PathBuf, String) {
    let plan = format!(
        "{}{}{}",
        packet("p1", "", ""),
        packet("p2", "\"p1\"", ""),
        packet("p3", "\"p2\"", "")
    );
    let (repo, bare, seen, run) = published(forge, &plan);
    assert_eq!(forge.pulls().len(), 3);
    forge.merge_as_person(1, "squash");
    someone_writes(&repo, &bare, "out-p2.txt");
    (repo, bare, seen, run)
}

fn land(repo: &TestRepo) -> Output {
    run_env(repo, &["land"], &[("GH_TOKEN", TOKEN)])
}

/// Returns the commit `rev` names in `dir`.
fn rev(dir: &Path, rev: &str) -> String {
    git(dir, &["rev-parse", rev]).trim().to_string()
}

#[test]
fn a_restack_conflict_goes_to_the_packets_worker_and_its_resolution_is_pushed_and_lands() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen, run) = conflicted(&forge);
    let b2 = format!("refs/heads/orchestra/{run}/p2");
    let old2 = rev(&bare, &b2);
    let message2 = git(&bare, &["log", "-1", "--format=%B", &old2]);

    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p2 #2: restacked onto main"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(all.contains("p3 #3: merged"), "{all}");

    // The worker was told what conflicts, where, and what each side meant.
    let told = std::fs::read_to_string(seen.join("conflict-p2-1.md")).unwrap();
    for want in [
        "kind: conflict",
        "`out-p2.txt`",
        "<<<<<<<",
        "someone else's",
        "p2's work",
        ">>>>>>>",
        "Someone else writes out-p2.txt",
    ] {
        assert!(told.contains(want), "{want:?} not in:\n{told}");
    }
    assert_eq!(
        std::fs::read_to_string(seen.join("paths")).unwrap(),
        "out-p2.txt\n"
    );
    // Both sides are on main; p2's commit is kept (rebased, its message intact) and its old
    // head saved.
    assert_eq!(
        git(&bare, &["show", "main:out-p2.txt"]),
        "someone else's\np2's work"
    );
    assert_eq!(git(&bare, &["show", "main:out-p3.txt"]), "p3's work");
    let messages = git(&bare, &["log", "--format=%B%x00", "main"]);
    assert!(messages.contains(message2.trim()), "{messages}");
    let saved = repo.git(&[
        "for-each-ref",
        "--format=%(objectname)",
        "refs/orchestra/saved/",
    ]);
    assert!(saved.contains(&old2), "{saved}");
    let pulls = forge.pulls();
    assert_eq!(pulls[1]["merged"], true);
    assert_eq!(pulls[1]["base"]["ref"], "main");
}

#[test]
fn a_worker_that_leaves_conflict_markers_pushes_nothing_and_the_pr_waits_for_a_person() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen, run) = conflicted(&forge);
    std::fs::write(seen.join("leave"), "").unwrap();
    let b2 = format!("refs/heads/orchestra/{run}/p2");
    let old2 = rev(&bare, &b2);

    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains(
            "p2 #2: waits for a person: restacking it onto `main` conflicts in `out-p2.txt`; \
             fix round 1 did not resolve it: conflict markers remain in `out-p2.txt`"
        ),
        "{all}"
    );
    assert!(
        all.contains("p3 #3: waits for a person: p2, which this one builds on, waits for one"),
        "{all}"
    );
    assert!(seen.join("conflict-p2-1.md").exists());
    assert_eq!(rev(&bare, &b2), old2, "nothing pushed");
    assert_eq!(forge.pulls()[1]["merged"], false);
    assert_eq!(git(&bare, &["show", "main:out-p2.txt"]), "someone else's");

    // Landing again does not send the same head back a second time.
    let again = land(&repo);
    assert!(again.status.success(), "{}", text(&again));
    assert!(!seen.join("conflict-p2-2.md").exists());
    assert_eq!(rev(&bare, &b2), old2);
}

#[test]
fn a_pull_request_that_conflicts_with_main_that_moved_is_rebased_by_its_worker_and_lands() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen, run) = published(&forge, &packet("p1", "", ""));
    let b1 = format!("refs/heads/orchestra/{run}/p1");
    let old1 = rev(&bare, &b1);
    someone_writes(&repo, &bare, "out-p1.txt");

    let out = land(&repo);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");
    let told = std::fs::read_to_string(seen.join("conflict-p1-1.md")).unwrap();
    assert!(
        told.contains("kind: conflict")
            && told.contains("`out-p1.txt`")
            && told.contains("Someone else writes out-p1.txt"),
        "{told}"
    );
    assert_eq!(
        git(&bare, &["show", "main:out-p1.txt"]),
        "someone else's\np1's work"
    );
    let saved = repo.git(&[
        "for-each-ref",
        "--format=%(objectname)",
        "refs/orchestra/saved/",
    ]);
    assert!(saved.contains(&old1), "{saved}");
}

#[test]
fn a_worker_command_resolving_a_restack_conflict_runs_in_the_workers_sandbox() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen, _) = conflicted(&forge);
    // The scratch directory is no longer writable: the worker's copy of what it was told
    // there must fail, while its resolution in its own worktree goes through.
    repo.user_config("");

    let out = land(&repo);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(
        !seen.join("conflict-p2-1.md").exists(),
        "written unconfined"
    );
    assert!(!seen.join("paths").exists(), "written unconfined");
    assert_eq!(
        git(&bare, &["show", "main:out-p2.txt"]),
        "someone else's\np2's work"
    );
}

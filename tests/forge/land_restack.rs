//! Restacking through `git orchestra land` against the fake GitHub following a real bare
//! remote: a parent squash-merged by a person makes its stacked children move their own
//! commits onto the new main (their old heads saved, every change of theirs kept) before they
//! are retargeted and land in order; a restack that conflicts with no fix round left pushes
//! nothing and waits for a person, naming the file.

use std::path::Path;
use std::process::Output;

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{configure, run_pr};
use crate::forge::pull_requests::{TOKEN, packet, run_env, setup, write_plan};
use crate::support::*;

/// Writes the packet's own file.
const WORKER: &str = r#"echo "$ORCHESTRA_PACKET's work" > "out-$ORCHESTRA_PACKET.txt""#;

/// Runs p1 ← p2 ← p3 with `--pr` on a fake forge following the bare remote; returns the
/// repository, the bare remote and the run's id.
fn stacked(forge: &FakeForge) -> (TestRepo, std::path::PathBuf, String) {
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    let plan = write_plan(
        &repo,
        &format!(
            "{}{}{}",
            packet("p1", "", ""),
            packet("p2", "\"p1\"", ""),
            packet("p3", "\"p2\"", "")
        ),
    );
    let out = run_pr(&repo, &plan, WORKER, &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 3);
    configure(&repo, "[land]\npoll_secs = 1\n");
    forge.follow_git(&bare);
    let run = run_id(&repo.path);
    (repo, bare, run)
}

fn land(repo: &TestRepo) -> Output {
    run_env(repo, &["land"], &[("GH_TOKEN", TOKEN)])
}

/// Returns the commit `rev` names in `dir`.
fn rev(dir: &Path, rev: &str) -> String {
    git(dir, &["rev-parse", rev]).trim().to_string()
}

/// Returns the files `from..to` changes, with their content at `to`.
fn changes(dir: &Path, from: &str, to: &str) -> Vec<(String, String)> {
    git(dir, &["diff", "--name-only", from, to])
        .lines()
        .map(|f| (f.to_string(), git(dir, &["show", &format!("{to}:{f}")])))
        .collect()
}

/// Returns true if and only if `a` is an ancestor of `b` in `dir`.
fn is_ancestor(dir: &Path, a: &str, b: &str) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["merge-base", "--is-ancestor", a, b])
        .status()
        .unwrap()
        .success()
}

#[test]
fn a_squash_merged_parent_restacks_its_children_onto_main_and_they_land_in_order() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, run) = stacked(&forge);
    let branch = |p: &str| format!("orchestra/{run}/{p}");
    let old: Vec<String> = ["p1", "p2", "p3"]
        .iter()
        .map(|p| rev(&bare, &format!("refs/heads/{}", branch(p))))
        .collect();
    let own2 = changes(&bare, &old[0], &old[1]);
    let own3 = changes(&bare, &old[1], &old[2]);
    assert_eq!(own2.len(), 1, "{own2:?}");
    forge.merge_as_person(1, "squash");
    assert!(
        !is_ancestor(&bare, &old[0], "main"),
        "a squash leaves p1's commit out"
    );
    let start = forge.calls().len();

    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p2 #2: restacked onto main"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(all.contains("p3 #3: merged"), "{all}");

    // Each child's own changes are on its new head, whose history no longer holds p1's commit.
    let new2 = rev(&bare, &format!("refs/heads/{}", branch("p2")));
    let new3 = rev(&bare, &format!("refs/heads/{}", branch("p3")));
    assert_ne!(new2, old[1]);
    assert_ne!(new3, old[2]);
    for (new, own) in [(&new2, &own2), (&new3, &own3)] {
        for (file, content) in own {
            assert_eq!(&git(&bare, &["show", &format!("{new}:{file}")]), content);
        }
    }
    assert!(
        !is_ancestor(&bare, &old[0], &new2) && !is_ancestor(&bare, &old[0], &new3),
        "restacked, not merely retargeted"
    );
    // The old heads are kept in the repository that landed them.
    let saved = repo.git(&[
        "for-each-ref",
        "--format=%(objectname)",
        "refs/orchestra/saved/",
    ]);
    assert!(
        saved.contains(&old[1]) && saved.contains(&old[2]),
        "{saved}"
    );
    // Everything is on main, each file once; p2 and p3 retargeted and merged in order.
    for p in ["p1", "p2", "p3"] {
        assert_eq!(
            git(&bare, &["show", &format!("main:out-{p}.txt")]),
            format!("{p}'s work")
        );
    }
    let pulls = forge.pulls();
    assert_eq!(pulls[1]["base"]["ref"], "main");
    assert_eq!(pulls[2]["base"]["ref"], "main");
    let writes: Vec<String> = forge.calls()[start..]
        .iter()
        .filter(|c| c.starts_with("PUT") || c.starts_with("PATCH /repos/acme/widgets/pulls"))
        .cloned()
        .collect();
    assert_eq!(
        writes,
        [
            "PATCH /repos/acme/widgets/pulls/2",
            "PUT /repos/acme/widgets/pulls/2/merge",
            "PATCH /repos/acme/widgets/pulls/3",
            "PUT /repos/acme/widgets/pulls/3/merge",
        ]
    );
}

#[test]
fn a_restack_that_conflicts_pushes_nothing_and_waits_for_a_person_naming_the_file() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, run) = stacked(&forge);
    // No fix round is left to send the conflict back to the worker.
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        "[land]\npoll_secs = 1\nmax_rounds = 0\n",
    )
    .unwrap();
    let b2 = format!("refs/heads/orchestra/{run}/p2");
    let old2 = rev(&bare, &b2);
    forge.merge_as_person(1, "squash");
    // Someone else's change to the same file lands on main meanwhile.
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
    std::fs::write(other.join("out-p2.txt"), "someone else's\n").unwrap();
    git(&other, &["add", "out-p2.txt"]);
    git(&other, &["commit", "-qm", "theirs"]);
    git(&other, &["push", "-q", "origin", "HEAD:main"]);

    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains(
            "p2 #2: waits for a person: restacking it onto `main` conflicts in `out-p2.txt`"
        ),
        "{all}"
    );
    assert!(
        all.contains("p3 #3: waits for a person: p2, which this one builds on, waits for one"),
        "{all}"
    );
    assert_eq!(rev(&bare, &b2), old2, "nothing pushed");
    assert_eq!(forge.pulls()[1]["merged"], false);
    assert_eq!(
        git(&bare, &["show", "main:out-p2.txt"]),
        "someone else's",
        "main keeps its side"
    );
}

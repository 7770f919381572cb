//! A merging `start` parks each succeeded packet's worktree at once for the next packet, and a
//! packet whose work conflicts at integration is resolved in its worktree checked out again.

use std::path::PathBuf;

use git_orchestra::git::{self, RepoInfo};

use crate::support::{hermetic, orchestra, run_id, status_json, text};

#[test]
fn a_merging_start_parks_succeeded_worktrees_and_resolves_a_conflict_in_one_checked_out_again() {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = orchestra(tmp.path(), &["demo", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let repo = dir.join("greeter");
    let run = run_id(&repo);
    let store = git_orchestra::store::Store::open(&repo.join(".git")).unwrap();
    let ev: Vec<serde_json::Value> = store
        .events(&run, 0)
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(&e.event).unwrap())
        .collect();
    let at = |kind: &str, packet: &str| {
        ev.iter()
            .position(|e| e["type"] == kind && e["packet"] == packet)
            .unwrap_or_else(|| panic!("no {kind} of {packet}: {ev:#?}"))
    };
    // The demo's third packet conflicts with the integration branch; its agent resolves it.
    let p3 = "p3-farewell";
    assert!(at("packet_succeeded", p3) < at("worktree_parked", p3));
    assert!(at("worktree_parked", p3) < at("worktree_restored", p3));
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains("[p3-farewell] worktree parked for the next packet"),
        "{progress}"
    );
    // Every packet's worktree is gone once integrated, and the pool keeps at most the default
    // two.
    let worktrees: Vec<PathBuf> = status_json(&repo)["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| PathBuf::from(p["worktree"].as_str().unwrap()))
        .collect();
    let left: Vec<&PathBuf> = worktrees.iter().filter(|w| w.exists()).collect();
    assert!(left.is_empty(), "packet worktrees left behind: {left:?}");
    let info = RepoInfo::discover(&repo).unwrap();
    let pool = git::pool_dir(&worktrees[0]).unwrap();
    let parked = git::pooled(&info, &pool).unwrap();
    assert!(parked.len() <= 2, "the pool was not trimmed: {parked:?}");
}

//! What `status`, `status --json` and the summary note show while GitLab merges a run's merge
//! requests itself, through the binary against the fake GitLab: each one handed to the merge
//! train waits for the train at its place, one set to merge when its pipeline succeeds waits
//! for that, both since the hand-over (kept across later looks and restarts of `land`), and
//! neither is journaled again while nothing changes.

use serde_json::Value;

use git_orchestra::store::{EventKind, Store};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::configure;
use crate::forge::pull_requests::{packet, run_env, run_plan, setup, write_plan};
use crate::support::*;

const TOKEN: &str = "glpat-autoTOKEN0123456789abcdef";
const SHA1: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

/// A repository whose run of two independent packets opened merge requests !1 and !2 on the
/// fake GitLab `forge`, their pipelines green, GitLab holding both once handed over.
fn published(forge: &FakeForge) -> TestRepo {
    let (repo, _bare) = setup(Some(forge), Flavour::GitLab);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GITLAB_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    configure(&repo, "[land]\npoll_secs = 1\n");
    for (iid, sha) in [(1, SHA1), (2, SHA2)] {
        forge.set_head(iid, sha, Some(true));
        forge.add_job(sha, "test", "success", "");
        forge.hold_auto_merge(iid, true);
    }
    repo
}

fn land(repo: &TestRepo, once: bool) -> String {
    let args: &[&str] = if once { &["land", "--once"] } else { &["land"] };
    let out = run_env(repo, args, &[("GITLAB_TOKEN", TOKEN)]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    all
}

/// Returns how many `pr_queued` events the newest run journaled.
fn hand_overs(repo: &TestRepo) -> usize {
    let store = Store::open(&repo.path.join(".git")).unwrap();
    let run = store.runs().unwrap()[0].id.clone();
    store
        .events_of_kind(&run, EventKind::PrQueued)
        .unwrap()
        .len()
}

fn landing(repo: &TestRepo) -> Vec<Value> {
    status_json(&repo.path)["landing"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn status_text(repo: &TestRepo) -> String {
    text(&orchestra_command(&repo.path, &["status"]).output().unwrap())
}

#[test]
fn status_shows_each_merge_request_waiting_on_the_merge_train_at_its_place_since_the_hand_over() {
    let forge = FakeForge::start(Flavour::GitLab);
    let repo = published(&forge);
    forge.gitlab_auto_merge(true, true);

    let progress = land(&repo, true);
    assert!(
        progress.contains(
            "p2 #2: handed to the forge: waiting for GitLab's merge train to merge it, in merge train position 2"
        ),
        "{progress}"
    );
    assert_eq!(forge.train(), [1, 2]);
    let first = landing(&repo);
    for (at, place) in [(0, 1), (1, 2)] {
        let p = &first[at];
        assert_eq!(p["state"], "open", "{p}");
        assert_eq!(
            p["waiting"],
            format!("GitLab's merge train to merge it, in merge train position {place}"),
            "{p}"
        );
        assert_eq!(p["auto_merge"]["how"], "GitLab's merge train to merge it");
        assert_eq!(p["auto_merge"]["position"], place);
        assert_eq!(p["auto_merge"]["since_ms"], p["since_ms"], "{p}");
    }
    let shown = status_text(&repo);
    assert!(
        shown.contains(
            "p2 #2: open, waiting for GitLab's merge train to merge it, in merge train position 2 since "
        ),
        "{shown}"
    );
    assert_eq!(hand_overs(&repo), 2);

    // Looked at again by a new `land` while GitLab holds them: the same wait, since the same
    // time, nothing journaled again and nothing asked of GitLab again.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    land(&repo, true);
    assert_eq!(hand_overs(&repo), 2);
    let again = landing(&repo);
    for at in 0..2 {
        assert_eq!(again[at]["waiting"], first[at]["waiting"]);
        assert_eq!(
            again[at]["since_ms"], first[at]["since_ms"],
            "{}",
            again[at]
        );
        assert_eq!(again[at]["auto_merge"], first[at]["auto_merge"]);
    }
    let joins = forge
        .calls()
        .iter()
        .filter(|c| c.starts_with("POST") && c.contains("/merge_trains/"))
        .count();
    assert_eq!(joins, 2);

    // Once GitLab merged them, that is what they show.
    forge.hold_auto_merge(1, false);
    forge.hold_auto_merge(2, false);
    let all = land(&repo, false);
    assert!(all.contains("p1 #1: merged"), "{all}");
    let last = landing(&repo);
    assert_eq!(last[0]["state"], "merged", "{}", last[0]);
    assert!(last[0]["auto_merge"].is_null(), "{}", last[0]);
    assert_eq!(last[0]["waiting"], "");
}

#[test]
fn status_and_the_summary_say_gitlab_merges_it_when_its_pipeline_succeeds_since_when() {
    let forge = FakeForge::start(Flavour::GitLab);
    let repo = published(&forge);
    forge.gitlab_auto_merge(false, true);

    land(&repo, true);
    let shown = landing(&repo);
    let p1 = &shown[0];
    assert_eq!(
        p1["waiting"], "GitLab to merge it when its pipeline succeeds",
        "{p1}"
    );
    assert_eq!(
        p1["auto_merge"]["how"],
        "GitLab to merge it when its pipeline succeeds"
    );
    assert!(p1["auto_merge"]["position"].is_null(), "{p1}");
    assert!(p1["since_ms"].as_i64().unwrap() > 0);
    let status = status_text(&repo);
    assert!(
        status.contains(
            "p1 #1: open, waiting for GitLab to merge it when its pipeline succeeds since "
        ),
        "{status}"
    );
    // The summary note says the same.
    let notes = forge.comments_of(1);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let body = notes[0]["body"].as_str().unwrap();
    assert!(
        body.contains("- waiting for GitLab to merge it when its pipeline succeeds"),
        "{body}"
    );
    // The merge request was set to merge once.
    let puts = forge
        .calls()
        .iter()
        .filter(|c| c.starts_with("PUT") && c.ends_with("/merge_requests/1/merge"))
        .count();
    assert_eq!(puts, 1);
}

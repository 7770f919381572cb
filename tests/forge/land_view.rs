//! What `status` and `status --json` show of a landing run, through the binary against the fake
//! GitHub: each pull request's address, state, checks by name, reviews (counted or not),
//! whether it merges, and what landing waits for since when; a look that saw nothing new
//! journals nothing.

use std::process::Output;

use git_orchestra::store::{EventKind, Store};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::configure;
use crate::forge::pull_requests::{TOKEN, packet, run_plan, setup, write_plan};
use crate::support::*;

const SHA1: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

/// A repository whose run of p1 ← p2 opened pull requests #1 and #2 on `forge`, with fake
/// heads (no fix rounds), polling every second and counting only alice's reviews.
pub(crate) fn published(forge: &FakeForge) -> TestRepo {
    let (repo, _bare) = setup(Some(forge), Flavour::GitHub);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    configure(
        &repo,
        "[land]\npoll_secs = 1\nreviewers = [\"alice\"]\nmax_rounds = 0\n",
    );
    forge.set_head(1, SHA1, Some(true));
    forge.set_head(2, SHA2, Some(false));
    forge.add_check_run(SHA1, "test", None, "");
    forge.add_check_run(SHA1, "lint", Some("success"), "");
    forge.add_check_run(SHA2, "test", Some("failure"), "assertion failed");
    forge.add_review(1, "alice", "APPROVED", "");
    forge.add_review(1, "mallory", "CHANGES_REQUESTED", "no");
    repo
}

/// Runs `git orchestra land --once` in `repo`.
pub(crate) fn land_once(repo: &TestRepo) -> Output {
    orchestra_command(&repo.path, &["land", "--once"])
        .env("GH_TOKEN", TOKEN)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

/// Returns how many `pr_looked` events the newest run journaled.
fn looks(repo: &TestRepo) -> usize {
    let store = Store::open(&repo.path.join(".git")).unwrap();
    let run = store.runs().unwrap()[0].id.clone();
    store
        .events_of_kind(&run, EventKind::PrLooked)
        .unwrap()
        .len()
}

#[test]
fn status_shows_each_pull_requests_checks_reviews_mergeability_and_what_it_waits_for_since_when() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    let out = land_once(&repo);
    assert!(out.status.success(), "{}", text(&out));

    let status = orchestra_command(&repo.path, &["status"]).output().unwrap();
    let shown = text(&status);
    for line in [
        "git orchestra land is not running; run it again to go on following them",
        "p1 #1: open, waiting for checks to finish: test since ",
        "https://forge.example/acme/widgets/pull/1",
        "checks: lint passing, test pending",
        "reviews: alice approved, mallory changes requested (not counted)",
        "mergeable: yes",
        "p2 #2: open, waiting for p1 to land first since ",
        "checks: test failing",
        "mergeable: no (conflicts with its base)",
    ] {
        assert!(shown.contains(line), "no `{line}` in:\n{shown}");
    }
    assert!(!shown.contains(TOKEN));

    let json = orchestra_command(&repo.path, &["status", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let p1 = &v["landing"][0];
    assert_eq!(p1["packet"], "p1", "{v:#}");
    assert_eq!(p1["number"], 1);
    assert_eq!(p1["url"], "https://forge.example/acme/widgets/pull/1");
    assert_eq!(p1["state"], "open");
    assert_eq!(p1["head_sha"], SHA1);
    assert_eq!(p1["checks"][0]["name"], "lint");
    assert_eq!(p1["checks"][0]["conclusion"], "success");
    assert_eq!(p1["checks"][1]["name"], "test");
    assert_eq!(p1["checks"][1]["conclusion"], "pending");
    assert_eq!(p1["reviews"][0]["author"], "alice");
    assert_eq!(p1["reviews"][0]["verdict"], "approved");
    assert_eq!(p1["reviews"][0]["counted"], true);
    assert_eq!(p1["reviews"][1]["counted"], false);
    assert_eq!(p1["mergeable"], true);
    assert_eq!(p1["waiting"], "checks to finish: test");
    assert_eq!(p1["followed"], false);
    assert!(p1["since_ms"].as_i64().unwrap() > 0);
    assert_eq!(v["landing"][1]["mergeable"], false);
    assert_eq!(v["landing"][1]["rounds"], 0);

    // While a `land` follows them, `status` says so.
    let mut following = orchestra_command(&repo.path, &["land"])
        .env("GH_TOKEN", TOKEN)
        .env("PATH", "/usr/bin:/bin")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let now = text(&orchestra_command(&repo.path, &["status"]).output().unwrap());
        if now.contains("pull requests (git orchestra land follows them now):") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{now}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    following.kill().unwrap();
    following.wait().unwrap();

    // Another look that sees the same journals nothing more; a change is journaled.
    let before = looks(&repo);
    assert_eq!(before, 2);
    assert!(land_once(&repo).status.success());
    assert_eq!(looks(&repo), before);
    forge.add_check_run(SHA1, "test", Some("success"), "");
    assert!(land_once(&repo).status.success());
    let after = text(&orchestra_command(&repo.path, &["status"]).output().unwrap());
    assert!(after.contains("p1 #1: merged"), "{after}");
    assert!(looks(&repo) > before);
}

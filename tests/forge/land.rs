//! `git orchestra land` through the binary against the fake GitHub: pull requests merged in
//! dependency order once their checks pass, a child retargeted after its parent landed, a
//! flaky check re-run once, an outsider's review shown but not acted on, one summary comment
//! per pull request however often `land` runs, and a `land` killed with -9 continued by the
//! next without duplicate merges, re-runs or comments.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use git_orchestra::forge::{Forge, GitHub, Token};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::configure;
use crate::forge::pull_requests::{TOKEN, WORKER, packet, run_env, run_plan, setup, write_plan};
use crate::support::*;

const SHA1: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

/// A repository whose run of p1 ← p2 opened two stacked pull requests (#1, #2) on `forge`,
/// configured to poll every second and count only alice's reviews.
fn published(forge: &FakeForge) -> TestRepo {
    let (repo, _bare) = setup(Some(forge), Flavour::GitHub);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 2);
    std::fs::create_dir_all(repo.path.join(".orchestra")).unwrap();
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        // Fake heads: nothing a worker could fix there, so no fix rounds.
        "[land]\npoll_secs = 1\nreviewers = [\"alice\"]\nmax_rounds = 0\n",
    )
    .unwrap();
    forge.set_head(1, SHA1, Some(true));
    forge.set_head(2, SHA2, Some(true));
    repo
}

fn land(repo: &TestRepo) -> Output {
    let mut cmd = orchestra_command(&repo.path, &["land"]);
    cmd.env("GH_TOKEN", TOKEN).env("PATH", "/usr/bin:/bin");
    cmd.output().unwrap()
}

/// Returns how many calls were `call` (method and path without query).
fn count(forge: &FakeForge, call: &str) -> usize {
    forge.calls().iter().filter(|c| c.as_str() == call).count()
}

/// Returns the summary comments (the ones carrying the marker) on pull request `number`.
fn summaries(forge: &FakeForge, number: u64) -> Vec<String> {
    forge
        .comments_of(number)
        .iter()
        .filter_map(|c| c["body"].as_str().map(str::to_string))
        .filter(|b| b.contains(git_orchestra::forge::SUMMARY_MARKER))
        .collect()
}

#[test]
fn land_merges_in_dependency_order_reruns_a_flaky_check_and_ignores_outsiders() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    forge.add_check_run(SHA1, "test", Some("success"), "");
    let failed = forge.add_check_run(SHA2, "test", Some("failure"), "connection reset by peer");
    forge.on_rerun(failed, "success", "");
    forge.add_review(2, "mallory", "CHANGES_REQUESTED", "I would not merge this");
    let start = forge.calls().len();

    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(all.contains("flaky: test"), "{all}");
    assert!(!all.contains(TOKEN));

    // Parent first, then the child retargeted onto where it landed, re-run, merged.
    let calls: Vec<String> = forge.calls()[start..]
        .iter()
        .filter(|c| !c.starts_with("GET"))
        .cloned()
        .collect();
    let at = |call: &str| {
        calls
            .iter()
            .position(|c| c.starts_with(call))
            .unwrap_or_else(|| panic!("no {call} in {calls:?}"))
    };
    assert!(at("PUT /repos/acme/widgets/pulls/1/merge") < at("PATCH /repos/acme/widgets/pulls/2"));
    assert!(at("PATCH /repos/acme/widgets/pulls/2") < at("POST /repos/acme/widgets/actions/jobs"));
    assert!(
        at("POST /repos/acme/widgets/actions/jobs") < at("PUT /repos/acme/widgets/pulls/2/merge")
    );
    let pulls = forge.pulls();
    assert_eq!(pulls[1]["base"]["ref"], "main");
    assert_eq!(pulls[0]["merge_method"], "merge");
    assert_eq!(pulls[1]["merged"], true);

    // Running it again finds everything landed: no merge, no re-run, no second comment.
    let again = land(&repo);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/2/merge"), 1);
    assert_eq!(
        count(
            &forge,
            &format!("POST /repos/acme/widgets/actions/jobs/{failed}/rerun")
        ),
        1
    );
    for n in [1, 2] {
        let s = summaries(&forge, n);
        assert_eq!(s.len(), 1, "pull request {n}: {s:?}");
        assert!(s[0].contains("merged"), "{}", s[0]);
        assert!(
            s[0].contains(&format!(
                "packet `p{n}` (Packet p{n}), done by the `coder` role"
            )),
            "{}",
            s[0]
        );
    }
    assert!(
        summaries(&forge, 2)[0].contains("flaky"),
        "{:?}",
        summaries(&forge, 2)
    );
}

#[test]
fn a_land_killed_while_waiting_continues_without_duplicates_and_a_real_failure_waits_for_a_person()
{
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    forge.add_check_run(SHA1, "test", None, "");
    let failed = forge.add_check_run(
        SHA2,
        "test",
        Some("failure"),
        "assertion failed: 2 + 2 == 5",
    );
    forge.on_rerun(failed, "failure", "assertion failed: 2 + 2 == 5");
    forge.add_review(1, "alice", "APPROVED", "");

    let mut child = orchestra_command(&repo.path, &["land"])
        .env("GH_TOKEN", TOKEN)
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while summaries(&forge, 1).is_empty() {
        assert!(Instant::now() < deadline, "land never wrote its summary");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A second `land` of the same run is refused while the first follows it.
    let second = land(&repo);
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    assert!(
        text(&second).contains("another `git orchestra land` already follows the pull requests"),
        "{}",
        text(&second)
    );
    // Two polls pass while p1's check runs; then the process dies without warning.
    std::thread::sleep(Duration::from_millis(2500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(summaries(&forge, 1)[0].contains("checks to finish: test"));
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/1/merge"), 0);
    // `status` says what each pull request waits for.
    let status = orchestra_command(&repo.path, &["status"]).output().unwrap();
    let shown = text(&status);
    assert!(shown.contains("p1 #1: open, waiting"), "{shown}");
    assert!(shown.contains("for checks to finish: test"), "{shown}");
    assert!(shown.contains("p2 #2: open, waiting"), "{shown}");
    assert!(shown.contains("for p1 to land first"), "{shown}");

    forge.add_check_run(SHA1, "test", Some("success"), "");
    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(
        all.contains(
            "p2 #2: waits for a person: check `test` failed (failure): assertion failed: 2 + 2 == 5"
        ),
        "{all}"
    );
    assert_eq!(forge.pulls()[1]["merged"], false);

    // A third look re-runs nothing and merges nothing again; one summary each throughout.
    let third = land(&repo);
    assert!(third.status.success(), "{}", text(&third));
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/1/merge"), 1);
    assert_eq!(
        count(
            &forge,
            &format!("POST /repos/acme/widgets/actions/jobs/{failed}/rerun")
        ),
        1
    );
    for n in [1, 2] {
        assert_eq!(summaries(&forge, n).len(), 1, "pull request {n}");
    }
    assert!(summaries(&forge, 2)[0].contains("waiting for a person"));

    // A counted reviewer's `/orchestra retry` re-runs the failed check once more; it passes.
    let gh = GitHub::new(&forge.url, "acme", "widgets", Some(Token::new(TOKEN)), None);
    let latest = gh.checks(SHA2).unwrap().remove(0);
    forge.on_rerun(latest.id, "success", "");
    forge.add_comment(2, "alice", "/orchestra retry");
    let out = land(&repo);
    assert!(text(&out).contains("p2 #2: merged"), "{}", text(&out));
    assert_eq!(
        count(
            &forge,
            &format!("POST /repos/acme/widgets/actions/jobs/{}/rerun", latest.id)
        ),
        1
    );
}

#[test]
fn run_pr_land_opens_the_stack_then_lands_it_parent_first() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, _bare) = setup(Some(&forge), Flavour::GitHub);
    configure(&repo, "[land]\npoll_secs = 1\nmethod = \"squash\"\n");
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let root = repo.scratch().join("wt");
    let out = run_env(
        &repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
            "--pr",
            "--land",
        ],
        &[("GH_TOKEN", TOKEN)],
    );
    assert!(out.status.success(), "{}", text(&out));
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 2);
    assert!(
        pulls
            .iter()
            .all(|p| p["merged"] == true && p["merge_method"] == "squash")
    );
    assert_eq!(pulls[1]["base"]["ref"], "main");
    let merges: Vec<String> = forge
        .calls()
        .into_iter()
        .filter(|c| c.ends_with("/merge"))
        .collect();
    assert_eq!(
        merges,
        [
            "PUT /repos/acme/widgets/pulls/1/merge",
            "PUT /repos/acme/widgets/pulls/2/merge"
        ]
    );
}

#[test]
fn an_unknown_merge_method_is_a_clear_error() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        "[land]\nmethod = \"fast-forward\"\n",
    )
    .unwrap();
    let out = land(&repo);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "[land] method = \"fast-forward\" is not a merge method; use merge, squash or rebase"
        ),
        "{}",
        text(&out)
    );
    forge.allow_methods(true, false, false);
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        "[land]\nmethod = \"rebase\"\n",
    )
    .unwrap();
    let out = land(&repo);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not allowed by the repository (allowed: merge)"),
        "{}",
        text(&out)
    );
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/1/merge"), 0);
}

#[test]
fn comment_commands_of_counted_reviewers_steer_landing_and_outsiders_are_only_shown() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    std::fs::write(
        repo.path.join(".orchestra/config.toml"),
        "[land]\npoll_secs = 1\nmerge = false\nreviewers = [\"alice\"]\n",
    )
    .unwrap();
    forge.add_check_run(SHA1, "test", Some("success"), "");
    forge.add_check_run(SHA2, "test", Some("success"), "");
    forge.add_comment(1, "mallory", "/orchestra land");
    forge.add_comment(2, "alice", "/orchestra stop");
    let once = |repo: &TestRepo| {
        let mut cmd = orchestra_command(&repo.path, &["land", "--once"]);
        cmd.env("GH_TOKEN", TOKEN).env("PATH", "/usr/bin:/bin");
        cmd.output().unwrap()
    };
    let out = once(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("p1 #1: /orchestra land by mallory: not acted on"),
        "{all}"
    );
    assert!(
        all.contains("p2 #2: waits for a person: alice stopped landing it"),
        "{all}"
    );
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/1/merge"), 0);

    // A counted reviewer asks for p1 to land; p2 stays stopped.
    forge.add_comment(1, "alice", "/orchestra land");
    let out = once(&repo);
    assert!(text(&out).contains("p1 #1: merged"), "{}", text(&out));
    assert!(
        text(&out).contains("alice stopped landing it"),
        "{}",
        text(&out)
    );
    assert_eq!(forge.pulls()[1]["merged"], false);

    // Then for p2: retargeted onto main and merged; no command was acted on twice.
    forge.add_comment(2, "alice", "/orchestra land");
    let out = land(&repo);
    assert!(text(&out).contains("p2 #2: merged"), "{}", text(&out));
    assert_eq!(forge.pulls()[1]["base"]["ref"], "main");
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/1/merge"), 1);
    assert_eq!(count(&forge, "PUT /repos/acme/widgets/pulls/2/merge"), 1);
    assert!(
        !text(&out).contains("by mallory"),
        "read once: {}",
        text(&out)
    );
}

#[test]
fn a_parent_closed_by_a_person_is_left_alone_and_its_child_waits_for_one() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    forge.close(1);
    forge.add_check_run(SHA2, "test", Some("success"), "");
    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p1 #1: closed by a person"), "{all}");
    assert!(
        all.contains("p2 #2: waits for a person: the pull request of `p1`, which this one builds on, was closed without merging"),
        "{all}"
    );
    assert!(
        !forge.calls().iter().any(|c| c.ends_with("/merge")),
        "{:?}",
        forge.calls()
    );
    assert!(
        summaries(&forge, 1).is_empty(),
        "a closed pull request gets no comment"
    );
}

#[test]
fn check_output_cannot_drive_the_terminal_land_prints_to() {
    let forge = FakeForge::start(Flavour::GitHub);
    let repo = published(&forge);
    forge.add_check_run(SHA1, "test", Some("success"), "");
    let evil = "error: boom \u{1b}]0;owned\u{7}\u{1b}[2J";
    let failed = forge.add_check_run(SHA2, "test", Some("failure"), evil);
    forge.on_rerun(failed, "failure", evil);
    let out = land(&repo);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("error: boom"), "{}", text(&out));
    assert!(!text(&out).contains('\u{1b}'), "{:?}", text(&out));
}

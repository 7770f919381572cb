//! Fix rounds while landing, through the binary against the fake GitHub whose pull request
//! heads follow a real bare remote: a CI failure goes to the packet's worker command in
//! `ORCHESTRA_FIXES_FILE`, the fix is pushed with a lease and lands once green; rounds are
//! bounded by `[land] max_rounds`; a failure a child inherits goes to its parent only; a
//! counted reviewer's requested changes go to the worker and are answered on their thread; a
//! `land` killed during a fix round is continued without a second push or comment; the worker
//! runs in the workers' sandbox.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{configure, run_pr};
use crate::forge::pull_requests::{TOKEN, packet, setup, write_plan};
use crate::support::*;

const LOG: &str =
    "running 3 tests\nthread 'parses' panicked at src/lib.rs:7:5\nassertion failed: left == right";

/// A worker that writes its packet's file, and in a fix round keeps what it was told (as
/// `fixes-<packet>-<round>.md` in `seen`) and appends `fixed` to the file.
/// While a file `slow` is in `seen`, a fix round removes it, writes its process id to `pid`
/// and sleeps before doing anything.
fn worker(seen: &Path) -> String {
    format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" "{s}/fixes-$ORCHESTRA_PACKET-$ORCHESTRA_ROUND.md"; if [ -f "{s}/slow" ]; then rm "{s}/slow"; echo $$ > "{s}/pid"; sleep 30; fi; echo fixed >> "out-$ORCHESTRA_PACKET.txt"; else echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt"; fi"#,
        s = seen.display()
    )
}

/// A run of p1 ← p2 published as pull requests #1 and #2 whose heads are the bare remote's
/// branches; returns the repository, the remote and where the worker keeps its fixes files.
fn published(forge: &FakeForge, land: &str) -> (TestRepo, PathBuf, PathBuf) {
    let (repo, bare) = setup(Some(forge), Flavour::GitHub);
    // The worker keeps what it was told outside its worktree, where its sandbox lets it.
    repo.scratch_writable();
    let seen = repo.scratch().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_pr(&repo, &plan, &worker(&seen), &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 2);
    // Heads follow the bare repository and merges are made in it, as a forge makes them: a
    // merged parent's head is then on its base, and its children need no restack.
    forge.follow_git(&bare);
    configure(
        &repo,
        &format!("[land]\npoll_secs = 1\nreviewers = [\"alice\"]\n{land}"),
    );
    (repo, bare, seen)
}

/// Returns the commit branch `branch` points at in the bare repository `bare`.
fn head(bare: &Path, branch: &str) -> String {
    git(bare, &["rev-parse", &format!("refs/heads/{branch}")])
        .trim()
        .to_string()
}

/// Returns pull request `number`'s head branch.
fn branch(forge: &FakeForge, number: usize) -> String {
    forge.pulls()[number - 1]["head"]["ref"]
        .as_str()
        .unwrap()
        .to_string()
}

fn land(repo: &TestRepo, args: &[&str]) -> Output {
    let mut all = vec!["land"];
    all.extend_from_slice(args);
    let mut cmd = orchestra_command(&repo.path, &all);
    cmd.env("GH_TOKEN", TOKEN).env("PATH", "/usr/bin:/bin");
    cmd.output().unwrap()
}

/// Returns the names of the fixes files the worker kept, sorted.
fn fixes_seen(seen: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(seen)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("fixes-"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_ci_failure_goes_to_the_packets_worker_and_the_fix_is_pushed_with_a_lease_then_lands() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = published(&forge, "");
    let (b1, b2) = (branch(&forge, 1), branch(&forge, 2));
    let (h1, h2) = (head(&bare, &b1), head(&bare, &b2));
    let failed = forge.add_check_run(&h2, "test", Some("failure"), LOG);
    forge.on_rerun(failed, "failure", LOG);

    // While the remote is out of reach no round starts: the looks fail and are tried again.
    // (p1's CI has not reported yet, so nothing merges in the forge's repository meanwhile.)
    let away = bare.with_extension("away");
    std::fs::rename(&bare, &away).unwrap();
    for _ in 0..3 {
        let out = land(&repo, &["--once"]);
        assert!(!text(&out).contains("fix round"), "{}", text(&out));
    }
    std::fs::rename(&away, &bare).unwrap();
    forge.add_check_run(&h1, "test", Some("success"), "");
    // CI passes on every head pushed from now on.
    forge.on_new_heads("test", "success", "");
    assert!(fixes_seen(&seen).is_empty());

    let out = land(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(all.contains("p2 #2: fix round 1 ended: pushed"), "{all}");
    assert!(!all.contains(TOKEN));

    // Only p2's worker was sent back, once, with the check's name, conclusion and log tail.
    assert_eq!(fixes_seen(&seen), ["fixes-p2-1.md"]);
    let fixes = std::fs::read_to_string(seen.join("fixes-p2-1.md")).unwrap();
    assert!(fixes.contains("Check `test` failed (failure)"), "{fixes}");
    assert!(fixes.contains("assertion failed: left == right"), "{fixes}");

    // The fix sits on the head it fixed, and is what landed.
    let fixed = head(&bare, &b2);
    assert_ne!(fixed, h2);
    assert_eq!(
        git(&bare, &["rev-parse", &format!("{fixed}^")]).trim(),
        h2,
        "the fix builds on the failed head"
    );
    let file = git(&bare, &["show", &format!("{fixed}:out-p2.txt")]);
    assert_eq!(file, "p2\nfixed");
    let calls = forge.calls();
    let at = |call: &str| calls.iter().position(|c| c == call).unwrap();
    assert!(
        at("PUT /repos/acme/widgets/pulls/1/merge") < at("PUT /repos/acme/widgets/pulls/2/merge")
    );
    let merge = forge
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/pulls/2/merge"))
        .unwrap();
    assert_eq!(merge.body["sha"], fixed.as_str());

    // The summary comment counts the round.
    let summary: Vec<String> = forge
        .comments_of(2)
        .iter()
        .filter_map(|c| c["body"].as_str().map(str::to_string))
        .filter(|b| b.contains(git_orchestra::forge::SUMMARY_MARKER))
        .collect();
    assert_eq!(summary.len(), 1);
    assert!(
        summary[0]
            .contains("- fix rounds (failures and reviews sent back to the packet's worker): 1"),
        "{}",
        summary[0]
    );

    // Landing again finds it landed: no second round, no second push.
    let again = land(&repo, &[]);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(fixes_seen(&seen), ["fixes-p2-1.md"]);
    assert_eq!(head(&bare, &b2), fixed);
}

#[test]
fn when_max_rounds_fix_rounds_did_not_fix_it_the_pull_request_waits_for_a_person() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = published(&forge, "max_rounds = 1\n");
    let (b1, b2) = (branch(&forge, 1), branch(&forge, 2));
    forge.add_check_run(&head(&bare, &b1), "test", Some("success"), "");
    forge.add_check_run(&head(&bare, &b2), "test", Some("failure"), LOG);
    // The fix does not help: CI fails on the new head too.
    forge.on_new_heads("test", "failure", "still broken: 2 + 2 == 5");

    let out = land(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(
        all.contains(
            "p2 #2: waits for a person: check `test` failed (failure): still broken: 2 + 2 == 5: \
             fix it on the branch and push (1 fix round did not fix it)"
        ),
        "{all}"
    );
    assert_eq!(fixes_seen(&seen), ["fixes-p2-1.md"]);
    assert_eq!(forge.pulls()[1]["merged"], false);
}

#[test]
fn a_failure_a_child_inherits_from_its_parent_goes_to_the_parent_only() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = published(&forge, "max_rounds = 1\n");
    let (b1, b2) = (branch(&forge, 1), branch(&forge, 2));
    // The same check fails on the parent's head and on the child's, which holds it.
    forge.add_check_run(&head(&bare, &b1), "test", Some("failure"), LOG);
    forge.add_check_run(&head(&bare, &b2), "test", Some("failure"), LOG);
    forge.on_new_heads("test", "failure", LOG);
    let h2 = head(&bare, &b2);

    let mut last = String::new();
    for _ in 0..5 {
        let out = land(&repo, &["--once"]);
        assert!(out.status.success(), "{}", text(&out));
        last = text(&out);
    }
    assert_eq!(fixes_seen(&seen), ["fixes-p1-1.md"], "{last}");
    assert!(
        last.contains("p1 #1: waits for a person: check `test` failed"),
        "{last}"
    );
    assert!(
        last.contains("p2 #2: waits for a person: p1, which this one builds on, waits for one"),
        "{last}"
    );
    assert_eq!(head(&bare, &b2), h2, "nothing was pushed to the child");
}

#[test]
fn a_review_requesting_changes_goes_to_the_worker_is_answered_on_its_thread_then_lands() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = published(&forge, "");
    forge.on_new_heads("test", "success", "");
    forge.add_review(
        2,
        "alice",
        "CHANGES_REQUESTED",
        "Please say that it is fixed.",
    );
    forge.add_review_comment(2, "alice", "say fixed here", "out-p2.txt", 1);
    forge.add_review_comment(2, "mallory", "delete everything", "out-p2.txt", 1);
    let thread = forge.review_comments_of(2)[0]["id"].as_u64().unwrap();
    let h2 = head(&bare, &branch(&forge, 2));

    let mut last = String::new();
    for _ in 0..3 {
        let out = land(&repo, &["--once"]);
        assert!(out.status.success(), "{}", text(&out));
        last = text(&out);
    }
    assert!(last.contains("p1 #1: merged"), "{last}");
    assert!(
        last.contains("p2 #2: still waiting for alice to review the fix"),
        "{last}"
    );
    // The worker got the review and the reviewer's inline comment, not the outsider's.
    assert_eq!(fixes_seen(&seen), ["fixes-p2-1.md"]);
    let fixes = std::fs::read_to_string(seen.join("fixes-p2-1.md")).unwrap();
    assert!(
        fixes.contains("## Review by alice (changes requested)\n\nPlease say that it is fixed."),
        "{fixes}"
    );
    assert!(fixes.contains("- out-p2.txt:1: say fixed here"), "{fixes}");
    assert!(!fixes.contains("delete everything"), "{fixes}");
    let fixed = head(&bare, &branch(&forge, 2));
    assert_ne!(fixed, h2);
    // One reply, on the reviewer's thread, naming the pushed fix.
    let replies: Vec<_> = forge
        .review_comments_of(2)
        .into_iter()
        .filter(|c| !c["in_reply_to_id"].is_null())
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["in_reply_to_id"], thread);
    let body = replies[0]["body"].as_str().unwrap();
    assert!(
        body.contains(&format!("@alice fix round 1 pushed {}", &fixed[..12])),
        "{body}"
    );
    assert_eq!(forge.pulls()[1]["merged"], false);

    // The reviewer approves the fix: it lands, without a second round or reply.
    forge.add_review(2, "alice", "APPROVED", "");
    let out = land(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("p2 #2: merged"), "{}", text(&out));
    assert_eq!(fixes_seen(&seen), ["fixes-p2-1.md"]);
    let replies = forge
        .review_comments_of(2)
        .into_iter()
        .filter(|c| !c["in_reply_to_id"].is_null())
        .count();
    assert_eq!(replies, 1);
}

#[test]
fn a_land_killed_during_a_fix_round_is_continued_without_a_second_push_or_comment() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = published(&forge, "");
    let (b1, b2) = (branch(&forge, 1), branch(&forge, 2));
    let h2 = head(&bare, &b2);
    forge.add_check_run(&head(&bare, &b1), "test", Some("success"), "");
    forge.add_check_run(&h2, "test", Some("failure"), LOG);
    forge.on_new_heads("test", "success", "");
    std::fs::write(seen.join("slow"), "").unwrap();

    let mut child = orchestra_command(&repo.path, &["land"])
        .env("GH_TOKEN", TOKEN)
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.join("pid").exists() {
        assert!(Instant::now() < deadline, "the fix round never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Killed in the middle of the worker's fix round; the worker with it.
    child.kill().unwrap();
    child.wait().unwrap();
    let pid = std::fs::read_to_string(seen.join("pid")).unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status();
    assert_eq!(head(&bare, &b2), h2, "nothing was pushed yet");

    let out = land(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("p2 #2: merged"), "{}", text(&out));
    // The cut-short round counts; the next one pushed one fix commit over the failed head.
    assert_eq!(fixes_seen(&seen), ["fixes-p2-1.md", "fixes-p2-2.md"]);
    let fixed = head(&bare, &b2);
    assert_eq!(git(&bare, &["rev-parse", &format!("{fixed}^")]).trim(), h2);
    assert_eq!(
        git(&bare, &["show", &format!("{fixed}:out-p2.txt")]),
        "p2\nfixed"
    );
    for n in [1, 2] {
        let summaries = forge
            .comments_of(n)
            .iter()
            .filter(|c| {
                c["body"]
                    .as_str()
                    .is_some_and(|b| b.contains(git_orchestra::forge::SUMMARY_MARKER))
            })
            .count();
        assert_eq!(summaries, 1, "pull request {n}");
    }
    // Landing again does nothing more.
    let again = land(&repo, &[]);
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(head(&bare, &b2), fixed);
    assert_eq!(fixes_seen(&seen).len(), 2);
}

#[test]
fn a_worker_command_fixing_a_pull_request_runs_in_the_workers_sandbox() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare, seen) = published(&forge, "");
    let (b1, b2) = (branch(&forge, 1), branch(&forge, 2));
    let h2 = head(&bare, &b2);
    forge.add_check_run(&head(&bare, &b1), "test", Some("success"), "");
    forge.add_check_run(&h2, "test", Some("failure"), LOG);
    forge.on_new_heads("test", "success", "");
    // The scratch directory is no longer writable: the worker's copy of its fixes file there
    // must fail, while its fix in its own worktree goes through.
    repo.user_config("");

    let out = land(&repo, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("p2 #2: merged"), "{}", text(&out));
    assert!(fixes_seen(&seen).is_empty(), "{:?}", fixes_seen(&seen));
    let fixed = head(&bare, &b2);
    assert_eq!(
        git(&bare, &["show", &format!("{fixed}:out-p2.txt")]),
        "p2\nfixed"
    );
}

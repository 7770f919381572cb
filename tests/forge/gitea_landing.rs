//! The forge calls landing rests on, against the fake Gitea: a pull request's live state, the
//! commit statuses of its head (Gitea Actions reports as statuses; a failed job carries its
//! log tail, read through the run the status links to), reviews and their inline
//! comments with the reviewer's permission, merging with `Do` guarded by the head commit,
//! retargeting, and one summary comment per pull request however often it is written; then
//! `git orchestra land` through the binary landing a stack on Gitea parent first.

use git_orchestra::forge::{
    CheckConclusion, CheckSource, Forge, Gitea, MergeMethod, MergeOutcome, PrState, ReviewState,
    Token, may_write,
};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{
    assert_refused, configure, last_request_to, merged_once_each, one_merged_summary_each,
    open_feature, publish_with, summary_written_three_times, writes_since,
};
use crate::forge::pull_requests::{packet, run_env, run_plan, setup, write_plan};
use crate::support::*;

const TOKEN: &str = "gitea_landTOKEN0123456789abcdef";
const SHA: &str = "1111111111111111111111111111111111111111";

/// A fake Gitea with one open pull request (#1, `feature` into `main`) at head [`SHA`].
fn forge_with_pr() -> (FakeForge, Gitea) {
    let fake = FakeForge::start(Flavour::Gitea);
    let gitea = Gitea::new(&fake.url, "acme", "widgets", Some(Token::new(TOKEN)), None);
    open_feature(&fake, &gitea, SHA);
    (fake, gitea)
}

#[test]
fn reads_a_pull_requests_state_statuses_reviews_and_inline_comments() {
    let (fake, gitea) = forge_with_pr();
    let status = gitea.pr_status(1).unwrap();
    assert_eq!(
        (status.state, status.head_sha.as_str(), status.base.as_str()),
        (PrState::Open, SHA, "main")
    );
    assert_eq!(status.mergeable, Some(true));

    let long = format!(
        "{}\nexit status 101 GITEA_TOKEN={TOKEN}",
        "step output\n".repeat(600)
    );
    fake.add_status(SHA, "ci / test (push)", "pending", "running");
    fake.add_status(SHA, "ci / test (push)", "failure", &long);
    fake.add_status(SHA, "ci / lint (push)", "success", "ok");
    fake.add_status("other", "ci / build", "failure", "not this commit");
    let checks = gitea.checks(SHA).unwrap();
    let names: Vec<(&str, CheckConclusion, CheckSource)> = checks
        .iter()
        .map(|c| (c.name.as_str(), c.conclusion, c.source))
        .collect();
    assert_eq!(
        names,
        [
            (
                "ci / test (push)",
                CheckConclusion::Failure,
                CheckSource::Status
            ),
            (
                "ci / lint (push)",
                CheckConclusion::Success,
                CheckSource::Status
            ),
        ]
    );
    assert!(
        checks[0].log_tail.contains("exit status 101"),
        "{}",
        checks[0].log_tail
    );
    assert!(
        !checks[0].log_tail.contains(TOKEN),
        "{}",
        checks[0].log_tail
    );
    assert!(checks[0].log_tail.len() <= git_orchestra::forge::LOG_TAIL_BYTES + 4);
    assert!(
        !gitea.rerun(&checks[0]).unwrap(),
        "a status cannot be re-run"
    );

    fake.add_review(1, "alice", "REQUEST_CHANGES", "Please rename `x`.");
    fake.add_review(1, "mallory", "APPROVED", "");
    fake.add_review_comment(1, "alice", "off by one", "src/lib.rs", 12);
    let reviews = gitea.reviews(1).unwrap();
    let seen: Vec<(&str, ReviewState, bool)> = reviews
        .iter()
        .map(|r| (r.author.as_str(), r.state, may_write(&r.association)))
        .collect();
    assert_eq!(
        seen,
        [
            ("alice", ReviewState::ChangesRequested, true),
            ("mallory", ReviewState::Approved, false),
            ("alice", ReviewState::Commented, true),
        ]
    );
    let inline = gitea.review_comments(1).unwrap();
    assert_eq!(
        inline
            .iter()
            .map(|c| (c.path.as_deref(), c.line, c.body.as_str()))
            .collect::<Vec<_>>(),
        [(Some("src/lib.rs"), Some(12), "off by one")]
    );
    fake.add_comment(1, "mallory", "/orchestra land");
    let talk = gitea.conversation(1).unwrap();
    assert_eq!(
        (talk[0].author.as_str(), may_write(&talk[0].association)),
        ("mallory", false)
    );
    let asked = fake
        .calls()
        .iter()
        .filter(|c| c.ends_with("/collaborators/alice/permission"))
        .count();
    assert_eq!(asked, 1, "an account's permission is read once");
}

#[test]
fn merges_with_do_only_with_an_allowed_method_and_an_unmoved_head() {
    let (fake, gitea) = forge_with_pr();
    fake.allow_methods(false, true, true);
    assert_eq!(
        gitea.allowed_methods().unwrap(),
        [MergeMethod::Squash, MergeMethod::Rebase]
    );
    let refused = gitea.merge(1, MergeMethod::Merge, SHA).unwrap();
    assert_refused(&refused, "not allowed");
    let moved = gitea.merge(1, MergeMethod::Squash, "2222").unwrap();
    assert_refused(&moved, "head out of date");
    let merged = gitea.merge(1, MergeMethod::Squash, SHA).unwrap();
    assert_eq!(
        merged,
        MergeOutcome::Merged {
            sha: Some("e".repeat(40))
        }
    );
    let sent = last_request_to(&fake, "/pulls/1/merge");
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.body["Do"], "squash");
    assert_eq!(sent.body["head_commit_id"], SHA);
    assert_eq!(gitea.pr_status(1).unwrap().state, PrState::Merged);

    gitea.retarget(1, "release").unwrap();
    assert_eq!(fake.pulls()[0]["base"]["ref"], "release");
}

#[test]
fn the_summary_comment_is_created_once_then_edited_never_duplicated() {
    let (fake, gitea) = forge_with_pr();
    fake.add_comment(1, "alice", "looks good");
    summary_written_three_times(&fake, &gitea);
}

const SHA2: &str = "2222222222222222222222222222222222222222";

#[test]
fn land_merges_a_gitea_stack_parent_first_and_ignores_readers_reviews() {
    let forge = FakeForge::start(Flavour::Gitea);
    let (repo, _bare) = setup(Some(&forge), Flavour::Gitea);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GITEA_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 2);
    assert_ne!(
        forge.pulls()[1]["base"]["ref"],
        "main",
        "p2 is stacked on p1"
    );
    configure(&repo, "[land]\npoll_secs = 1\nmethod = \"squash\"\n");
    forge.set_head(1, SHA, Some(true));
    forge.set_head(2, SHA2, Some(true));
    forge.add_status(SHA, "ci / test (push)", "success", "");
    forge.add_status(SHA2, "ci / test (push)", "success", "");
    forge.add_review(2, "mallory", "REQUEST_CHANGES", "I would not merge this");
    let start = forge.calls().len();

    let land = || run_env(&repo, &["land"], &[("GITEA_TOKEN", TOKEN)]);
    let out = land();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(!all.contains(TOKEN), "{all}");
    let writes = writes_since(&forge, start, |_| true);
    let at = |call: &str| {
        writes
            .iter()
            .position(|c| c == call)
            .unwrap_or_else(|| panic!("no {call} in {writes:?}"))
    };
    assert!(
        at("POST /api/v1/repos/acme/widgets/pulls/1/merge")
            < at("PATCH /api/v1/repos/acme/widgets/pulls/2")
    );
    assert!(
        at("PATCH /api/v1/repos/acme/widgets/pulls/2")
            < at("POST /api/v1/repos/acme/widgets/pulls/2/merge")
    );
    let pulls = forge.pulls();
    assert_eq!(pulls[1]["base"]["ref"], "main");
    assert_eq!(pulls[0]["merge_method"], "squash");
    assert_eq!(pulls[1]["merged"], true);

    let again = land();
    assert!(again.status.success(), "{}", text(&again));
    merged_once_each(&forge);
    one_merged_summary_each(&forge, "pull request");
}

#[test]
fn a_failed_gitea_status_waits_for_a_person_with_its_description() {
    let forge = FakeForge::start(Flavour::Gitea);
    let (repo, _bare) = setup(Some(&forge), Flavour::Gitea);
    let plan = write_plan(&repo, &packet("p1", "", ""));
    let out = run_plan(&repo, &plan, "--pr", &[("GITEA_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    configure(&repo, "[land]\npoll_secs = 1\n");
    forge.set_head(1, SHA, Some(true));
    forge.add_status(SHA, "ci / test (push)", "failure", "Failing after 12s");

    let out = run_env(&repo, &["land"], &[("GITEA_TOKEN", TOKEN)]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("p1 #1: waits for a person: check `ci / test (push)` failed (failure)"),
        "{all}"
    );
    assert!(all.contains("Failing after 12s"), "{all}");
    assert_eq!(forge.pulls()[0]["merged"], false);
    assert!(
        !forge
            .calls()
            .iter()
            .any(|c| c.ends_with("/merge") || c.contains("/actions/")),
        "{:?}",
        forge.calls()
    );
}

#[test]
fn a_failed_actions_status_carries_its_job_log_tail_or_says_why_there_is_none() {
    let (fake, gitea) = forge_with_pr();
    let log = format!(
        "{}\nthread 'parses' panicked at src/lib.rs:7:5\nGITEA_TOKEN={TOKEN}\nassertion failed: left == right",
        "step output\n".repeat(600)
    );
    fake.add_actions_status(
        SHA,
        "ci / test (push)",
        "failure",
        "Failing after 12s",
        Some(&log),
    );
    fake.add_actions_status(SHA, "ci / lint (push)", "failure", "Failing after 3s", None);
    fake.add_actions_status(SHA, "ci / docs (push)", "success", "Successful in 5s", None);
    let checks = gitea.checks(SHA).unwrap();
    let test = checks
        .iter()
        .find(|c| c.name == "ci / test (push)")
        .unwrap();
    assert!(
        test.log_tail.ends_with("assertion failed: left == right")
            && test.log_tail.contains("panicked at src/lib.rs:7:5"),
        "{}",
        test.log_tail
    );
    assert!(!test.log_tail.contains(TOKEN), "{}", test.log_tail);
    assert!(test.log_tail.len() <= git_orchestra::forge::LOG_TAIL_BYTES + 4);
    let lint = checks
        .iter()
        .find(|c| c.name == "ci / lint (push)")
        .unwrap();
    assert!(
        lint.log_tail.contains(
            "(no job log could be read: this Gitea does not serve Actions job logs (404); its \
             description follows)\nFailing after 3s"
        ),
        "{}",
        lint.log_tail
    );
    // A passing job's log is not read.
    let logs = fake.calls().iter().filter(|c| c.ends_with("/logs")).count();
    assert_eq!(logs, 2, "{:?}", fake.calls());
}

#[test]
fn a_failed_gitea_actions_job_sends_its_log_tail_to_the_packets_worker_then_lands() {
    let forge = FakeForge::start(Flavour::Gitea);
    let (repo, bare) = setup(Some(&forge), Flavour::Gitea);
    // The fix worker runs in the workers' sandbox: it may write where the test looks.
    repo.scratch_writable();
    let seen = repo.scratch().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let worker = format!(
        r#"if [ -n "$ORCHESTRA_FIXES_FILE" ]; then cp "$ORCHESTRA_FIXES_FILE" "{s}/fixes.md"; echo fixed >> "out-$ORCHESTRA_PACKET.txt"; else echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt"; fi"#,
        s = seen.display()
    );
    publish_with(
        &repo,
        &packet("p1", "", ""),
        &worker,
        &[("GITEA_TOKEN", TOKEN)],
    );
    forge.follow_git(&bare);
    let branch = forge.pulls()[0]["head"]["ref"]
        .as_str()
        .unwrap()
        .to_string();
    let head = git(&bare, &["rev-parse", &format!("refs/heads/{branch}")])
        .trim()
        .to_string();
    let job = forge.add_actions_status(
        &head,
        "ci / test (push)",
        "failure",
        "Failing after 12s",
        Some("running 3 tests\nthread 'parses' panicked at src/lib.rs:7:5\nassertion failed: left == right"),
    );

    let out = run_env(&repo, &["land"], &[("GITEA_TOKEN", TOKEN)]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");
    let told = std::fs::read_to_string(seen.join("fixes.md")).unwrap();
    assert!(
        told.contains("ci / test (push)")
            && told.contains("panicked at src/lib.rs:7:5")
            && told.contains("assertion failed: left == right"),
        "{told}"
    );
    assert!(
        forge.calls().contains(&format!(
            "GET /api/v1/repos/acme/widgets/actions/jobs/{job}/logs"
        )),
        "{:?}",
        forge.calls()
    );
    assert_ne!(
        git(&bare, &["rev-parse", &format!("refs/heads/{branch}")]).trim(),
        head,
        "the fix was pushed"
    );
}

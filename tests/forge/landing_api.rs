//! The forge calls landing rests on, against the fake GitHub: a pull request's live state, its
//! head's checks and statuses (output scrubbed and clipped), reviews and comments, merging with
//! an allowed method, retargeting, re-running a failed job, a failed job's log fetched when its
//! check run has no output, and one summary comment per pull request however often it is
//! written.

use git_orchestra::forge::{
    CheckConclusion, CheckSource, Forge, GitHub, MergeMethod, MergeOutcome, PrState, ReviewState,
    Token,
};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{assert_refused, open_feature, summary_written_three_times};

const TOKEN: &str = "ghp_landTOKEN0123456789abcdef";
const SHA: &str = "1111111111111111111111111111111111111111";

/// A fake GitHub with one open pull request (#1, `feature` into `main`) at head [`SHA`].
fn forge_with_pr() -> (FakeForge, GitHub) {
    let fake = FakeForge::start(Flavour::GitHub);
    let gh = GitHub::new(&fake.url, "acme", "widgets", Some(Token::new(TOKEN)), None);
    open_feature(&fake, &gh, SHA);
    (fake, gh)
}

#[test]
fn reads_a_pull_requests_state_checks_statuses_reviews_and_comments() {
    let (fake, gh) = forge_with_pr();
    let status = gh.pr_status(1).unwrap();
    assert_eq!(
        (status.state, status.head_sha.as_str(), status.base.as_str()),
        (PrState::Open, SHA, "main")
    );
    assert_eq!(status.mergeable, Some(true));

    let long = format!(
        "{}\nassertion failed: left == right\nGH_TOKEN={TOKEN}\n",
        "noise\n".repeat(2000)
    );
    let old = fake.add_check_run(SHA, "test", Some("success"), "");
    let newest = fake.add_check_run(SHA, "test", Some("failure"), &long);
    fake.add_check_run(SHA, "lint", None, "");
    fake.add_check_run("other", "build", Some("failure"), "not this commit");
    fake.add_status(SHA, "ci/legacy", "error", "the runner died");
    let checks = gh.checks(SHA).unwrap();
    let names: Vec<(&str, CheckConclusion)> = checks
        .iter()
        .map(|c| (c.name.as_str(), c.conclusion))
        .collect();
    assert_eq!(
        names,
        [
            ("lint", CheckConclusion::Pending),
            ("test", CheckConclusion::Failure),
            ("ci/legacy", CheckConclusion::Error)
        ]
    );
    let test = &checks[1];
    assert_eq!(test.id, newest, "the newest run of a name wins over {old}");
    assert!(
        test.log_tail.contains("assertion failed"),
        "{}",
        test.log_tail
    );
    assert!(test.log_tail.len() <= git_orchestra::forge::LOG_TAIL_BYTES + 4);
    assert!(!test.log_tail.contains(TOKEN), "{}", test.log_tail);
    assert_eq!(checks[2].source, CheckSource::Status);
    assert!(checks[2].log_tail.contains("the runner died"));

    fake.add_review(1, "alice", "CHANGES_REQUESTED", "Please rename `x`.");
    fake.add_review(1, "bob", "APPROVED", "");
    let reviews = gh.reviews(1).unwrap();
    assert_eq!(
        reviews
            .iter()
            .map(|r| (r.author.as_str(), r.state))
            .collect::<Vec<_>>(),
        [
            ("alice", ReviewState::ChangesRequested),
            ("bob", ReviewState::Approved)
        ]
    );
    fake.add_review_comment(1, "alice", "off by one", "src/lib.rs", 12);
    let inline = gh.review_comments(1).unwrap();
    assert_eq!(
        (
            inline[0].path.as_deref(),
            inline[0].line,
            inline[0].body.as_str()
        ),
        (Some("src/lib.rs"), Some(12), "off by one")
    );
    fake.add_comment(1, "mallory", "/orchestra land");
    let talk = gh.conversation(1).unwrap();
    assert_eq!(
        (talk[0].author.as_str(), talk[0].path.clone()),
        ("mallory", None)
    );
}

#[test]
fn merges_only_with_an_allowed_method_and_an_unmoved_head() {
    let (fake, gh) = forge_with_pr();
    fake.allow_methods(false, true, true);
    assert_eq!(
        gh.allowed_methods().unwrap(),
        [MergeMethod::Squash, MergeMethod::Rebase]
    );
    let refused = gh.merge(1, MergeMethod::Merge, SHA).unwrap();
    assert_refused(&refused, "not allowed");
    let moved = gh.merge(1, MergeMethod::Squash, "2222").unwrap();
    assert_refused(&moved, "modified");
    let merged = gh.merge(1, MergeMethod::Squash, SHA).unwrap();
    assert!(
        matches!(merged, MergeOutcome::Merged { sha: Some(_) }),
        "{merged:?}"
    );
    assert_eq!(fake.pulls()[0]["merge_method"], "squash");
    assert_eq!(gh.pr_status(1).unwrap().state, PrState::Merged);

    gh.retarget(1, "release").unwrap();
    assert_eq!(fake.pulls()[0]["base"]["ref"], "release");
}

#[test]
fn reruns_a_failed_job_and_sees_its_new_conclusion() {
    let (fake, gh) = forge_with_pr();
    let id = fake.add_check_run(SHA, "test", Some("failure"), "timed out fetching crates");
    fake.on_rerun(id, "success", "");
    let failed = gh.checks(SHA).unwrap().remove(0);
    assert!(gh.rerun(&failed).unwrap());
    let again = gh.checks(SHA).unwrap().remove(0);
    assert_eq!(
        (again.name.as_str(), again.conclusion),
        ("test", CheckConclusion::Success)
    );
    fake.add_status(SHA, "ci/legacy", "failure", "red");
    let status = gh.checks(SHA).unwrap().pop().unwrap();
    assert!(
        !gh.rerun(&status).unwrap(),
        "a commit status cannot be re-run"
    );
}

#[test]
fn the_summary_comment_is_created_once_then_edited_never_duplicated() {
    let (fake, gh) = forge_with_pr();
    fake.add_comment(1, "alice", "looks good");
    summary_written_three_times(&fake, &gh);
}

#[test]
fn a_second_poll_with_no_change_costs_a_304_and_a_change_is_seen() {
    let (fake, gh) = forge_with_pr();
    fake.add_check_run(SHA, "test", None, "");
    let first = (gh.pr_status(1).unwrap(), gh.checks(SHA).unwrap());
    assert_eq!(fake.not_modified(), 0);
    let before = fake.requests().len();
    let second = (gh.pr_status(1).unwrap(), gh.checks(SHA).unwrap());
    assert_eq!(second, first);
    let asked: Vec<(Option<String>, u16)> = fake.requests()[before..]
        .iter()
        .map(|r| (r.if_none_match.clone(), r.status))
        .collect();
    assert!(
        asked
            .iter()
            .all(|(tag, status)| tag.is_some() && *status == 304),
        "every unchanged read is conditional and answered 304: {asked:?}"
    );
    assert_eq!(fake.not_modified(), 3);

    fake.set_head(1, "3333333333333333333333333333333333333333", Some(false));
    let third = gh.pr_status(1).unwrap();
    assert_eq!(
        (third.head_sha.as_str(), third.mergeable),
        ("3333333333333333333333333333333333333333", Some(false))
    );
    assert_eq!(fake.not_modified(), 3, "a changed answer is read in full");
}

#[test]
fn a_failed_actions_job_without_output_brings_the_scrubbed_tail_of_its_log() {
    let (fake, gh) = forge_with_pr();
    let id = fake.add_check_run(SHA, "test", Some("failure"), "");
    let key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let log = format!(
        "{}\nusing token {TOKEN} and {key}\nerror[E0308]: mismatched types\n",
        "compiling crate\n".repeat(1000)
    );
    fake.set_job_log(id, &log);
    let passed = fake.add_check_run(SHA, "lint", Some("success"), "");
    fake.set_job_log(passed, "all good");

    let checks = gh.checks(SHA).unwrap();
    let failed = checks.iter().find(|c| c.name == "test").unwrap();
    assert!(
        failed.log_tail.ends_with("error[E0308]: mismatched types"),
        "{}",
        failed.log_tail
    );
    assert!(failed.log_tail.len() <= git_orchestra::forge::LOG_TAIL_BYTES + 4);
    assert!(!failed.log_tail.contains(TOKEN), "{}", failed.log_tail);
    assert!(!failed.log_tail.contains(key), "{}", failed.log_tail);
    // Only a failed run's log is fetched, and the download gets no token.
    let calls = fake.calls();
    assert!(calls.contains(&format!("GET /repos/acme/widgets/actions/jobs/{id}/logs")));
    assert!(
        !calls
            .iter()
            .any(|c| c.contains(&format!("jobs/{passed}/logs")))
    );
    let download = fake
        .requests()
        .into_iter()
        .find(|r| r.path.starts_with("/job-logs/"))
        .unwrap();
    assert_eq!(download.auth, None);
}

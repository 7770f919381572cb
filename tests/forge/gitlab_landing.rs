//! The forge calls landing rests on, against the fake GitLab: a merge request's live state,
//! the jobs of its head's newest pipeline (a failed job's trace tail scrubbed and clipped),
//! approvals and reviewers' verdicts with the author's membership, discussions with the path
//! and line of inline notes, merging with `sha` and `squash`, retrying a job, retargeting, and
//! one summary note however often it is written; then `git orchestra land` through the binary
//! landing a stack on GitLab parent first, directly or through the merge train; "merge when
//! pipeline succeeds" where the project merges only then.

use git_orchestra::forge::{
    CheckConclusion, CheckSource, Forge, GitLab, MergeMethod, MergeOutcome, PrState, ReviewState,
    Token, may_write,
};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::{
    assert_refused, configure, gitlab_writes_since, last_request_to, merged_once_each,
    one_merged_summary_each, open_feature, summary_written_three_times,
};
use crate::forge::pull_requests::{packet, run_env, run_plan, setup, write_plan};
use crate::support::*;

const TOKEN: &str = "glpat-landTOKEN0123456789abcdef";
const SHA: &str = "1111111111111111111111111111111111111111";
const SHA2: &str = "2222222222222222222222222222222222222222";

/// A fake GitLab with one open merge request (!1, `feature` into `main`) at head [`SHA`].
fn forge_with_mr() -> (FakeForge, GitLab) {
    let fake = FakeForge::start(Flavour::GitLab);
    let gl = GitLab::new(&fake.url, "acme/widgets", Some(Token::new(TOKEN)), None);
    open_feature(&fake, &gl, SHA);
    (fake, gl)
}

#[test]
fn reads_a_merge_requests_state_jobs_approvals_and_discussions() {
    let (fake, gl) = forge_with_mr();
    let status = gl.pr_status(1).unwrap();
    assert_eq!(
        (status.state, status.head_sha.as_str(), status.base.as_str()),
        (PrState::Open, SHA, "main")
    );
    assert_eq!(status.mergeable, Some(true));
    fake.set_head(1, SHA, Some(false));
    assert_eq!(gl.pr_status(1).unwrap().mergeable, Some(false));
    fake.set_head(1, SHA, Some(true));

    let trace = format!(
        "{}\n$ cargo test\nassertion failed: left == right\nGITLAB_TOKEN={TOKEN}\n",
        "Running with gitlab-runner\n".repeat(400)
    );
    fake.add_job(SHA, "lint", "success", "");
    let test = fake.add_job(SHA, "test", "failed", &trace);
    fake.add_job(SHA, "deploy", "manual", "");
    fake.add_job("other", "build", "failed", "not this commit");
    let checks = gl.checks(SHA).unwrap();
    let names: Vec<(&str, CheckConclusion)> = checks
        .iter()
        .map(|c| (c.name.as_str(), c.conclusion))
        .collect();
    assert_eq!(
        names,
        [
            ("deploy", CheckConclusion::Neutral),
            ("lint", CheckConclusion::Success),
            ("test", CheckConclusion::Failure)
        ]
    );
    let failed = &checks[2];
    assert_eq!(failed.id, test);
    fake.add_status(SHA, "external/ci", "failure", "the external runner said no");
    let external = gl.checks(SHA).unwrap().pop().unwrap();
    assert_eq!(
        (external.name.as_str(), external.source, external.conclusion),
        ("external/ci", CheckSource::Status, CheckConclusion::Failure)
    );
    assert!(external.log_tail.contains("the external runner said no"));
    assert!(
        failed.log_tail.contains("assertion failed"),
        "{}",
        failed.log_tail
    );
    assert!(!failed.log_tail.contains(TOKEN), "{}", failed.log_tail);
    assert!(failed.log_tail.len() <= git_orchestra::forge::LOG_TAIL_BYTES + 4);

    // A retried job replaces the failed one in the pipeline.
    fake.on_rerun(test, "success", "ok");
    assert!(gl.rerun(failed).unwrap());
    let again = gl.checks(SHA).unwrap();
    assert_eq!(again[2].conclusion, CheckConclusion::Success);
    assert_eq!(again.len(), 4, "{again:?}");
    assert!(!gl.rerun(&again[1]).unwrap(), "GitLab refuses to retry it");

    fake.set_reviewer(1, "alice", "requested_changes");
    fake.add_approval(1, "bob");
    fake.add_approval(1, "mallory");
    let reviews = gl.reviews(1).unwrap();
    let seen: Vec<(&str, ReviewState, bool)> = reviews
        .iter()
        .map(|r| (r.author.as_str(), r.state, may_write(&r.association)))
        .collect();
    assert_eq!(
        seen,
        [
            ("alice", ReviewState::ChangesRequested, true),
            ("bob", ReviewState::Approved, true),
            ("mallory", ReviewState::Approved, false),
        ]
    );

    fake.add_note(1, "alice", "off by one", Some(("src/lib.rs", 12)));
    fake.add_note(1, "mallory", "/orchestra land", None);
    let inline = gl.review_comments(1).unwrap();
    assert_eq!(
        inline
            .iter()
            .map(|c| (c.path.as_deref(), c.line, c.body.as_str()))
            .collect::<Vec<_>>(),
        [(Some("src/lib.rs"), Some(12), "off by one")]
    );
    let talk = gl.conversation(1).unwrap();
    assert_eq!(
        talk.iter()
            .map(|c| (c.author.as_str(), may_write(&c.association), c.path.clone()))
            .collect::<Vec<_>>(),
        [("mallory", false, None)]
    );
}

#[test]
fn merges_with_sha_and_squash_only_as_the_project_allows() {
    let (fake, gl) = forge_with_mr();
    fake.allow_methods(true, false, false);
    assert_eq!(gl.allowed_methods().unwrap(), [MergeMethod::Merge]);
    fake.allow_methods(false, true, true);
    assert_eq!(
        gl.allowed_methods().unwrap(),
        [MergeMethod::Squash, MergeMethod::Rebase]
    );
    let moved = gl.merge(1, MergeMethod::Squash, SHA2).unwrap();
    assert_refused(&moved, "SHA does not match");
    let merged = gl.merge(1, MergeMethod::Squash, SHA).unwrap();
    assert_eq!(
        merged,
        MergeOutcome::Merged {
            sha: Some("d".repeat(40))
        }
    );
    let sent = last_request_to(&fake, "/merge_requests/1/merge");
    assert_eq!(sent.method, "PUT");
    assert_eq!(
        (sent.body["sha"].as_str(), sent.body["squash"].as_bool()),
        (Some(SHA), Some(true))
    );
    assert_eq!(gl.pr_status(1).unwrap().state, PrState::Merged);

    gl.retarget(1, "release").unwrap();
    assert_eq!(fake.pulls()[0]["target_branch"], "release");
}

#[test]
fn the_summary_note_is_created_once_then_edited_never_duplicated() {
    let (fake, gl) = forge_with_mr();
    fake.add_note(1, "alice", "looks good", None);
    summary_written_three_times(&fake, &gl);
}

#[test]
fn land_merges_a_gitlab_stack_parent_first_after_retrying_a_flaky_job() {
    let forge = FakeForge::start(Flavour::GitLab);
    let (repo, _bare) = setup(Some(&forge), Flavour::GitLab);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GITLAB_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(forge.pulls().len(), 2);
    assert_ne!(
        forge.pulls()[1]["target_branch"],
        "main",
        "p2 is stacked on p1"
    );
    configure(&repo, "[land]\npoll_secs = 1\n");
    forge.set_head(1, SHA, Some(true));
    forge.set_head(2, SHA2, Some(true));
    forge.add_job(SHA, "test", "success", "");
    let flaky = forge.add_job(SHA2, "test", "failed", "connection reset by peer");
    forge.on_rerun(flaky, "success", "");
    forge.set_reviewer(2, "mallory", "requested_changes");
    let start = forge.calls().len();

    let land = || run_env(&repo, &["land"], &[("GITLAB_TOKEN", TOKEN)]);
    let out = land();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    assert!(all.contains("flaky: test"), "{all}");
    assert!(!all.contains(TOKEN), "{all}");
    let writes = gitlab_writes_since(&forge, start);
    let mr = "/api/v4/projects/acme%2Fwidgets/merge_requests";
    assert_eq!(
        writes,
        [
            format!("PUT {mr}/1/merge"),
            format!("PUT {mr}/2"),
            format!("POST /api/v4/projects/acme%2Fwidgets/jobs/{flaky}/retry"),
            format!("PUT {mr}/2/merge"),
        ]
    );
    let pulls = forge.pulls();
    assert_eq!(pulls[1]["target_branch"], "main");
    assert_eq!(pulls[1]["state"], "merged");

    let again = land();
    assert!(again.status.success(), "{}", text(&again));
    merged_once_each(&forge);
    one_merged_summary_each(&forge, "merge request");
}

#[test]
fn a_project_that_merges_only_once_the_pipeline_succeeds_gets_merge_when_pipeline_succeeds() {
    let (fake, gl) = forge_with_mr();
    fake.gitlab_auto_merge(false, true);
    fake.add_job(SHA, "test", "success", "");
    let handed = gl.merge(1, MergeMethod::Squash, SHA).unwrap();
    assert!(
        matches!(&handed, MergeOutcome::Queued { how, .. } if how.contains("pipeline succeeds")),
        "{handed:?}"
    );
    let sent = last_request_to(&fake, "/merge_requests/1/merge");
    assert_eq!(sent.method, "PUT");
    assert_eq!(sent.body["merge_when_pipeline_succeeds"], true);
    assert_eq!(sent.body["sha"], SHA);
    assert_eq!(sent.body["squash"], true);

    // Asked again while GitLab waits: nothing more is written.
    let puts = |fake: &FakeForge| {
        fake.calls()
            .iter()
            .filter(|c| c.starts_with("PUT") && c.ends_with("/merge"))
            .count()
    };
    assert!(matches!(
        gl.merge(1, MergeMethod::Squash, SHA).unwrap(),
        MergeOutcome::Queued { .. }
    ));
    assert_eq!(puts(&fake), 1);
    // Followed until GitLab merged it.
    let mut states = Vec::new();
    for _ in 0..3 {
        states.push(gl.pr_status(1).unwrap().state);
    }
    assert_eq!(states.last(), Some(&PrState::Merged), "{states:?}");
    assert_eq!(puts(&fake), 1);
}

#[test]
fn land_puts_a_gitlab_stack_on_the_merge_train_parent_first_and_follows_it_until_merged() {
    let forge = FakeForge::start(Flavour::GitLab);
    let (repo, _bare) = setup(Some(&forge), Flavour::GitLab);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GITLAB_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    configure(&repo, "[land]\npoll_secs = 1\n");
    forge.gitlab_auto_merge(true, true);
    forge.set_head(1, SHA, Some(true));
    forge.set_head(2, SHA2, Some(true));
    forge.add_job(SHA, "test", "success", "");
    forge.add_job(SHA2, "test", "success", "");
    let start = forge.calls().len();

    let out = run_env(&repo, &["land"], &[("GITLAB_TOKEN", TOKEN)]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(all.contains("p2 #2: merged"), "{all}");
    let project = "/api/v4/projects/acme%2Fwidgets";
    let writes = gitlab_writes_since(&forge, start);
    assert_eq!(
        writes,
        [
            format!("POST {project}/merge_trains/merge_requests/1"),
            format!("PUT {project}/merge_requests/2"),
            format!("POST {project}/merge_trains/merge_requests/2"),
        ],
        "joined the train once each, never merged directly"
    );
    let pulls = forge.pulls();
    assert_eq!(pulls[0]["state"], "merged");
    assert_eq!(pulls[1]["state"], "merged");
    assert!(forge.train().is_empty());
}

//! `run --pr` and `git orchestra pr`: stacked pull requests against a fake forge, real pushes to
//! a local bare remote, idempotent re-runs, retargeting after a merge, rate limits, the token
//! kept out of every output, and local Markdown when there is no forge.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::support::*;

pub(crate) const TOKEN: &str = "ghp_secretTOKEN0123456789";

pub(crate) fn packet(id: &str, deps: &str, extra: &str) -> String {
    format!(
        "[[packet]]\nid = \"{id}\"\ntitle = \"Packet {id}\"\ndescription = \"Does {id}.\"\nfiles = [\"out-{id}.txt\"]\ndepends_on = [{deps}]\nvalidation = [\"test -f out-{id}.txt\"]\nacceptance = [\"out-{id}.txt exists\"]\n{extra}\n"
    )
}

/// Writes its file; p3 also leaves a conflict marker, which the review rejects.
pub(crate) const WORKER: &str = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt"; if [ "$ORCHESTRA_PACKET" = p3 ]; then printf '<<<<<<< HEAD\nx\n' >> out-p3.txt; fi"#;

/// A repository with a bare remote `origin` holding main, configured for `forge`.
pub(crate) fn setup(forge: Option<&FakeForge>, flavour: Flavour) -> (TestRepo, PathBuf) {
    let repo = TestRepo::new();
    let bare = repo.tmp.path().join("remote.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    repo.git(&[
        "remote",
        "add",
        "origin",
        &format!("file://{}", bare.display()),
    ]);
    repo.git(&["push", "-q", "origin", "main"]);
    if let Some(f) = forge {
        let kind = match flavour {
            Flavour::GitHub => "github",
            Flavour::Gitea => "gitea",
            Flavour::GitLab => "gitlab",
        };
        repo.git(&["config", "orchestra.forge.type", kind]);
        repo.git(&["config", "orchestra.forge.apiUrl", &f.url]);
        repo.git(&["config", "orchestra.forge.repo", "acme/widgets"]);
        repo.git(&["config", "orchestra.pr.labels", "orchestra, automated"]);
        repo.git(&["config", "orchestra.pr.reviewers", "alice"]);
    }
    (repo, bare)
}

pub(crate) fn write_plan(repo: &TestRepo, body: &str) -> PathBuf {
    let p = repo.scratch().join("plan.toml");
    std::fs::write(&p, format!("objective = \"Stack them\"\n\n{body}")).unwrap();
    p
}

/// Runs the binary with only the given token variables set.
pub(crate) fn run_env(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = orchestra_command(&repo.path, args);
    for v in [
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "GITEA_TOKEN",
        "FORGEJO_TOKEN",
        "GITLAB_TOKEN",
    ] {
        cmd.env_remove(v);
    }
    // No `gh` may answer for the token.
    cmd.env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

pub(crate) fn run_plan(repo: &TestRepo, plan: &Path, pr: &str, env: &[(&str, &str)]) -> Output {
    let root = repo.scratch().join("wt");
    run_env(
        repo,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            WORKER,
            "--worktree-root",
            root.to_str().unwrap(),
            pr,
        ],
        env,
    )
}

fn remote_branches(bare: &Path) -> String {
    git(
        bare,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    )
}

/// Returns true if and only if any file under `dir` contains `needle`.
fn any_file_contains(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            any_file_contains(&p, needle)
        } else {
            std::fs::read(&p)
                .map(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .unwrap_or(false)
        }
    })
}

#[test]
fn run_pr_opens_stacked_pull_requests_updates_them_idempotently_and_retargets_after_a_merge() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = setup(Some(&forge), Flavour::GitHub);
    let body = format!(
        "{}{}{}",
        packet("p1", "", "risks = [\"touches everything\"]"),
        packet("p2", "\"p1\"", ""),
        packet("p3", "", ""),
    );
    let plan = write_plan(&repo, &body);
    let out = run_plan(&repo, &plan, "--pr", &[("GH_TOKEN", TOKEN)]);
    // p3's conflict marker fails the gate in its pipeline: the run did not do all it was asked.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("the deterministic checks rejected"),
        "{}",
        text(&out)
    );
    let run = run_id(&repo.path);
    assert_pushed_and_opened_bottom_up(&forge, &repo, &bare, &run, &out);
    let again = assert_publishing_again_only_looks_up(&forge, &repo, &run);
    let third = assert_retargeted_after_the_bottom_one_is_merged(&forge, &repo, &bare, &run);

    // The token appears in no output and no file of the repository.
    for o in [&out, &again, &third] {
        assert!(!text(o).contains(TOKEN));
    }
    assert!(!any_file_contains(&repo.path.join(".git"), TOKEN));
}

/// Checks the first `run --pr` of the stack p1 ← p2, p3: every branch pushed, the pull requests
/// opened bottom-up with their labels, reviewers and bodies, and the bodies kept as Markdown.
fn assert_pushed_and_opened_bottom_up(
    forge: &FakeForge,
    repo: &TestRepo,
    bare: &Path,
    run: &str,
    out: &Output,
) {
    let b = |p: &str| format!("orchestra/{run}/{p}");
    // Real pushes: every packet branch is on the bare remote at the packet's commit.
    let branches = remote_branches(bare);
    for p in ["p1", "p2", "p3"] {
        assert!(branches.contains(&b(p)), "{branches}");
        assert_eq!(
            git(bare, &["rev-parse", &b(p)]),
            repo.git(&["rev-parse", &b(p)])
        );
    }

    // The requests, in order: look up each head, then open bottom-up with labels and
    // reviewers right after each creation.
    let calls = forge.calls();
    let expected = [
        "GET /repos/acme/widgets/pulls",
        "GET /repos/acme/widgets/pulls",
        "GET /repos/acme/widgets/pulls",
        "POST /repos/acme/widgets/pulls",
        "POST /repos/acme/widgets/issues/1/labels",
        "POST /repos/acme/widgets/pulls/1/requested_reviewers",
        "POST /repos/acme/widgets/pulls",
        "POST /repos/acme/widgets/issues/2/labels",
        "POST /repos/acme/widgets/pulls/2/requested_reviewers",
        "POST /repos/acme/widgets/pulls",
        "POST /repos/acme/widgets/issues/3/labels",
        "POST /repos/acme/widgets/pulls/3/requested_reviewers",
    ];
    assert_eq!(calls, expected, "{}", text(out));
    let reqs = forge.requests();
    assert!(
        reqs.iter()
            .all(|r| r.auth.as_deref() == Some(&*format!("Bearer {TOKEN}")))
    );
    assert!(
        reqs[0]
            .path
            .contains(&format!("head=acme:orchestra%2F{run}%2Fp1")),
        "{}",
        reqs[0].path
    );
    let (c1, c2, c3) = (&reqs[3].body, &reqs[6].body, &reqs[9].body);
    assert_eq!(
        (c1["head"].as_str(), c1["base"].as_str()),
        (Some(&*b("p1")), Some("main"))
    );
    assert_eq!(c1["title"], "Packet p1");
    assert_eq!(c1["draft"], false);
    // p2 depends on p1: stacked on p1's branch, and says so.
    assert_eq!(c2["base"].as_str(), Some(&*b("p1")));
    assert!(
        c2["body"]
            .as_str()
            .unwrap()
            .contains("**Depends on** `p1` (#1)"),
        "{c2}"
    );
    // p3 left a conflict marker on every round: the gate rejected it, so its work is a draft.
    assert_eq!(c3["draft"], true);
    let body1 = c1["body"].as_str().unwrap();
    for part in [
        "Does p1.",
        "- [ ] out-p1.txt exists",
        "`test -f out-p1.txt`: passed",
        "**approved** by deterministic",
        "- touches everything",
        &format!("<!-- git-orchestra run={run} packet=p1 -->"),
    ] {
        assert!(body1.contains(part), "missing {part:?} in {body1}");
    }
    assert!(c3["body"].as_str().unwrap().contains("changes required"));
    assert_eq!(
        reqs[4].body["labels"],
        serde_json::json!(["orchestra", "automated"])
    );
    assert_eq!(reqs[5].body["reviewers"], serde_json::json!(["alice"]));
    // The same bodies are kept as Markdown beside the run.
    let md = repo
        .path
        .join(format!(".git/orchestra/runs/{run}/pr/p2.md"));
    let md = std::fs::read_to_string(&md).unwrap_or_else(|e| panic!("{}: {e}", md.display()));
    assert!(md.starts_with("# Packet p2\n"), "{md}");
}

/// Publishes the stack again and checks that nothing is created or changed, only looked up;
/// returns the output.
fn assert_publishing_again_only_looks_up(forge: &FakeForge, repo: &TestRepo, run: &str) -> Output {
    let before = forge.requests().len();
    let again = run_env(repo, &["pr", run], &[("GH_TOKEN", TOKEN)]);
    assert!(again.status.success(), "{}", text(&again));
    let calls = forge.calls()[before..].to_vec();
    assert_eq!(
        calls,
        vec!["GET /repos/acme/widgets/pulls"; 3],
        "{}",
        text(&again)
    );
    assert_eq!(forge.pulls().len(), 3);
    assert!(String::from_utf8_lossy(&again.stdout).contains("up to date"));
    again
}

/// Merges p1 on the forge, publishes again and checks that p2 is retargeted to main (while p1's
/// branch still exists) and told why before p1's branch is deleted; returns the output.
fn assert_retargeted_after_the_bottom_one_is_merged(
    forge: &FakeForge,
    repo: &TestRepo,
    bare: &Path,
    run: &str,
) -> Output {
    let b = |p: &str| format!("orchestra/{run}/{p}");
    // p1 is merged on the forge: p2 is retargeted to main (while p1's branch still exists),
    // told why, and only then is p1's branch deleted from the remote.
    let p1_branch = b("p1");
    let bare_for_observer = bare.to_path_buf();
    forge.observe(move || {
        let refs = git(
            &bare_for_observer,
            &["for-each-ref", "--format=%(refname:short)"],
        );
        if refs.lines().any(|l| l == p1_branch) {
            "p1 present"
        } else {
            "p1 gone"
        }
        .to_string()
    });
    forge.merge(1);
    let before = forge.requests().len();
    let third = run_env(repo, &["pr", run, "--json"], &[("GH_TOKEN", TOKEN)]);
    assert!(third.status.success(), "{}", text(&third));
    let reqs = forge.requests()[before..].to_vec();
    let calls: Vec<String> = reqs
        .iter()
        .map(|r| format!("{} {}", r.method, r.path.split('?').next().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            "GET /repos/acme/widgets/pulls",
            "GET /repos/acme/widgets/pulls",
            "GET /repos/acme/widgets/pulls",
            "PATCH /repos/acme/widgets/pulls/2",
            "POST /repos/acme/widgets/issues/2/comments",
        ]
    );
    assert_eq!(reqs[3].body["base"], "main");
    assert_eq!(reqs[3].observed, "p1 present");
    assert!(
        reqs[4].body["body"]
            .as_str()
            .unwrap()
            .contains("#1, was merged"),
        "{:?}",
        reqs[4].body
    );
    assert!(
        !remote_branches(bare).contains(&b("p1")),
        "p1's branch should be deleted"
    );
    assert!(remote_branches(bare).contains(&b("p2")));
    let report: serde_json::Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(report["deleted"], serde_json::json!([b("p1")]));
    assert_eq!(
        report["entries"][1]["retargeted_from"].as_str(),
        Some(&*b("p1"))
    );
    // The local branch is untouched: nothing is deleted locally.
    repo.git(&["rev-parse", "--verify", &b("p1")]);
    third
}

#[test]
fn gitea_drafts_by_title_and_rate_limits_are_waited_out() {
    let forge = FakeForge::start(Flavour::Gitea);
    let (repo, _bare) = setup(Some(&forge), Flavour::Gitea);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p3", "", "")),
    );
    // The first lookup hits a secondary rate limit asking for a one-second pause.
    forge.fail_next(
        403,
        &[("retry-after", "1")],
        serde_json::json!({"message": "You have exceeded a secondary rate limit"}),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GITEA_TOKEN", TOKEN)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let reqs = forge.requests();
    assert_eq!(reqs[0].path, reqs[1].path, "the limited request is retried");
    let waited = reqs[1].at.duration_since(reqs[0].at);
    assert!(waited.as_millis() >= 950, "waited only {waited:?}");
    assert!(
        reqs.iter()
            .all(|r| r.auth.as_deref() == Some(&*format!("token {TOKEN}")))
    );
    let pulls = forge.pulls();
    assert_eq!(pulls.len(), 2);
    assert_eq!(pulls[0]["title"], "Packet p1");
    assert_eq!(
        pulls[1]["title"], "WIP: Packet p3",
        "a rejected packet is a WIP draft"
    );
    assert!(
        forge
            .calls()
            .iter()
            .all(|c| c.starts_with("GET /api/v1/repos/acme/widgets/")
                || c.starts_with("POST /api/v1/repos/acme/widgets/"))
    );
}

#[test]
fn without_a_token_the_pull_requests_are_local_files_and_nothing_is_pushed() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, bare) = setup(Some(&forge), Flavour::GitHub);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("no GitHub token"), "{}", text(&out));
    assert!(forge.requests().is_empty());
    assert_eq!(remote_branches(&bare), "main");
    let run = run_id(&repo.path);
    let dir = repo.path.join(format!(".git/orchestra/runs/{run}/pr"));
    let p2 = std::fs::read_to_string(dir.join("p2.md")).unwrap();
    assert!(p2.contains(&format!("base: orchestra/{run}/p1")), "{p2}");
    assert!(p2.contains("Does p2."));
    assert!(String::from_utf8_lossy(&out.stdout).contains("branches ready to push"));

    // --pr=local never calls the forge even with a token.
    let local = run_env(
        &repo,
        &["run", plan.to_str().unwrap(), "--pr=local"],
        &[("GH_TOKEN", TOKEN)],
    );
    assert!(local.status.success(), "{}", text(&local));
    assert!(forge.requests().is_empty());
}

#[test]
fn a_rejected_token_is_a_clear_error_that_never_shows_the_token() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, _bare) = setup(Some(&forge), Flavour::GitHub);
    let plan = write_plan(&repo, &packet("p1", "", ""));
    forge.fail_next(
        401,
        &[],
        serde_json::json!({"message": format!("Bad credentials: {TOKEN}")}),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GH_TOKEN", TOKEN)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("rejected the token"), "{}", text(&out));
    assert!(!text(&out).contains(TOKEN));
}

#[test]
fn gitlab_merge_requests_stack_and_retarget_through_the_same_interface() {
    let forge = FakeForge::start(Flavour::GitLab);
    let (repo, bare) = setup(Some(&forge), Flavour::GitLab);
    let plan = write_plan(
        &repo,
        &format!("{}{}", packet("p1", "", ""), packet("p2", "\"p1\"", "")),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GITLAB_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    let run = run_id(&repo.path);
    let mrs = forge.pulls();
    assert_eq!(mrs.len(), 2, "{}", text(&out));
    assert_eq!(mrs[0]["target_branch"], "main");
    assert_eq!(
        mrs[1]["target_branch"].as_str(),
        Some(&*format!("orchestra/{run}/p1"))
    );
    assert_eq!(
        mrs[1]["description"]
            .as_str()
            .map(|d| d.contains("Does p2.")),
        Some(true)
    );
    assert_eq!(
        mrs[0]["labels"],
        serde_json::json!(["orchestra", "automated"])
    );
    assert_eq!(mrs[0]["reviewer_ids"], serde_json::json!([42]));
    let calls = forge.calls();
    assert_eq!(
        calls[0],
        "GET /api/v4/projects/acme%2Fwidgets/merge_requests"
    );
    assert!(
        forge
            .requests()
            .iter()
            .all(|r| r.auth.as_deref() == Some(&*format!("Bearer {TOKEN}")))
    );

    forge.merge(1);
    let before = forge.requests().len();
    let again = run_env(&repo, &["pr", &run], &[("GITLAB_TOKEN", TOKEN)]);
    assert!(again.status.success(), "{}", text(&again));
    let calls = forge.calls()[before..].to_vec();
    assert_eq!(
        calls,
        [
            "GET /api/v4/projects/acme%2Fwidgets/merge_requests",
            "GET /api/v4/projects/acme%2Fwidgets/merge_requests",
            "PUT /api/v4/projects/acme%2Fwidgets/merge_requests/2",
            "POST /api/v4/projects/acme%2Fwidgets/merge_requests/2/notes",
        ]
    );
    assert_eq!(forge.pulls()[1]["target_branch"], "main");
    assert!(!remote_branches(&bare).contains(&format!("orchestra/{run}/p1")));
    assert!(!text(&out).contains(TOKEN) && !text(&again).contains(TOKEN));
}

#[test]
fn an_exhausted_primary_limit_delays_the_next_request_until_its_reset() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, _bare) = setup(Some(&forge), Flavour::GitHub);
    let plan = write_plan(&repo, &packet("p1", "", ""));
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    // The lookup succeeds but says the budget is spent until `reset`.
    forge.fail_next(
        200,
        &[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &reset.to_string()),
        ],
        serde_json::json!([]),
    );
    let out = run_plan(&repo, &plan, "--pr", &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    let reqs = forge.requests();
    assert_eq!(reqs[1].method, "POST");
    let waited = reqs[1].at.duration_since(reqs[0].at);
    assert!(waited.as_millis() >= 900, "waited only {waited:?}");
    assert_eq!(forge.pulls().len(), 1);
}

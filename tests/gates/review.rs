//! `git orchestra review`: deterministic checks over a range, verdicts in git notes, reuse of
//! a verdict for an identical tree, exit codes.

use std::process::Command;

use crate::support::*;

const NOTES: &str = "refs/notes/orchestra/review";
const GHP: &str = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";

fn feature(repo: &TestRepo, files: &[(&str, &str)]) {
    repo.git(&["checkout", "-q", "-b", "feature"]);
    for (p, c) in files {
        repo.write(p, c);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "feature work"]);
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn secret_is_rejected_without_echoing_it_and_the_verdict_is_stored() {
    let repo = TestRepo::new();
    feature(
        &repo,
        &[("src/config.rs", &format!("const T: &str = \"{GHP}\";\n"))],
    );
    let out = orchestra(&repo.path, &["review"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(all.contains("REJECTED"), "{all}");
    assert!(
        all.contains("secret") && all.contains("src/config.rs:1"),
        "{all}"
    );
    assert!(all.contains("merge-base with default branch main"), "{all}");
    assert!(
        !all.contains(GHP) && !all.contains("5rS7tU9v"),
        "secret echoed: {all}"
    );

    let note = repo.git(&["notes", "--ref", NOTES, "show", "HEAD"]);
    assert!(!note.contains(GHP), "{note}");
    let v: serde_json::Value = serde_json::from_str(&note).unwrap();
    assert_eq!(v["verdict"], "reject");
    assert_eq!(v["reviewer"], "deterministic");
    assert_eq!(v["tree"], repo.git(&["rev-parse", "HEAD^{tree}"]));
    assert_eq!(v["findings"][0]["severity"], "blocker");
    assert_eq!(v["findings"][0]["line"], 1);
    // The note is committed with the engine's identity.
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>", NOTES]),
        "git-orchestra <git-orchestra@localhost.invalid>"
    );

    let shown = orchestra(&repo.path, &["review", "--show", "HEAD", "--json"]);
    assert_eq!(shown.status.code(), Some(1), "{}", text(&shown));
    let v2: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(v2, v);
}

#[test]
fn a_symbolic_link_leading_out_of_the_repository_is_rejected() {
    let repo = TestRepo::new();
    repo.git(&["checkout", "-q", "-b", "feature"]);
    std::os::unix::fs::symlink("/etc/passwd", repo.path.join("passwd")).unwrap();
    std::os::unix::fs::symlink("../README.md", repo.path.join("src/readme")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "links"]);
    let out = orchestra(&repo.path, &["review", "--no-model", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let links: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f["category"] == "symlink")
        .collect();
    assert_eq!(links.len(), 1, "{v}");
    assert_eq!(links[0]["file"], "passwd");
}

#[test]
fn conflict_markers_and_large_files_are_found() {
    let repo = TestRepo::new();
    let big = "x".repeat(3000);
    feature(
        &repo,
        &[
            (
                "src/lib.rs",
                "fn a() {}\n<<<<<<< HEAD\nfn b() {}\n=======\nfn c() {}\n>>>>>>> other\n",
            ),
            ("assets/big.bin", &big),
        ],
    );
    let out = orchestra(
        &repo.path,
        &[
            "review",
            "main..feature",
            "--max-file-size",
            "2000",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<(String, String, i64)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["category"].as_str().unwrap().to_string(),
                f["file"].as_str().unwrap().to_string(),
                f["line"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            ("conflict-marker".into(), "src/lib.rs".into(), 2),
            ("conflict-marker".into(), "src/lib.rs".into(), 4),
            ("conflict-marker".into(), "src/lib.rs".into(), 6),
            ("file-size".into(), "assets/big.bin".into(), 0),
        ]
    );
    // The same file is fine under the default limit of 1 MiB… once the markers are gone.
    repo.write("src/lib.rs", "fn a() {}\n");
    repo.git(&["commit", "-q", "-am", "resolve"]);
    let out = orchestra(&repo.path, &["review", "main..feature"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn an_identical_tree_is_not_reviewed_again() {
    let repo = TestRepo::new();
    feature(&repo, &[("src/new.rs", "pub fn new() {}\n")]);
    let out = orchestra(&repo.path, &["review"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("APPROVED"), "{}", text(&out));
    // Same tree, different commit: the stored verdict is reused, the validation (which would
    // fail now) is not run.
    repo.git(&["commit", "-q", "--amend", "-m", "reworded"]);
    let out = orchestra(&repo.path, &["review", "--validate", "false"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("already approved"), "{}", text(&out));
    // --again reviews anew and the failing validation rejects.
    let out = orchestra(&repo.path, &["review", "--validate", "false", "--again"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("validation"), "{}", text(&out));
}

#[test]
fn validation_commands_run_on_the_tip_in_a_scratch_checkout() {
    let repo = TestRepo::new();
    feature(&repo, &[("marker.txt", "here\n")]);
    // Leave the working tree different from the tip: the check must see the commit.
    std::fs::remove_file(repo.path.join("marker.txt")).unwrap();
    let out = orchestra(&repo.path, &["review", "--validate", "test -f marker.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let worktrees = repo.git(&["worktree", "list"]);
    assert_eq!(
        worktrees.lines().count(),
        1,
        "scratch worktree left: {worktrees}"
    );
    // Nor the private temporary directory its sandboxed command had.
    let tmp: Vec<_> = std::fs::read_dir(repo.path.join(".git/orchestra/tmp"))
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(tmp.is_empty(), "temporary directories left: {tmp:?}");
}

#[test]
fn bad_input_exits_2_and_changes_nothing() {
    let repo = TestRepo::new();
    let before = refs(&repo.path);
    let out = orchestra(&repo.path, &["review", "nope..HEAD"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("`nope` does not name a commit"),
        "{}",
        text(&out)
    );
    // On main itself there is nothing to review.
    let out = orchestra(&repo.path, &["review"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("nothing to review"), "{}", text(&out));
    let out = orchestra(&repo.path, &["review", "--show", "HEAD"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(refs(&repo.path), before);
}

#[test]
fn review_works_without_a_git_identity() {
    let repo = TestRepo::new();
    feature(&repo, &[("a.txt", "a\n")]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_git-orchestra"));
    cmd.current_dir(&repo.path).arg("review");
    for k in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("EMAIL", "").env("GIT_CONFIG_GLOBAL", "/dev/null");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_packet_commit_is_checked_against_its_declared_scope() {
    let repo = TestRepo::new();
    let plan = repo.scratch().join("plan.toml");
    std::fs::write(
        &plan,
        "objective = \"Scoped\"\n\n[[packet]]\nid = \"p1\"\ntitle = \"P1\"\ndescription = \"d\"\nfiles = [\"src/parser.rs\"]\nvalidation = [\"test -f src/parser.rs\"]\n",
    )
    .unwrap();
    let root = repo.scratch().join("wt");
    let out = orchestra(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "echo '// parsed' >> src/parser.rs",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let branch = repo
        .git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/orchestra/",
        ])
        .lines()
        .next()
        .unwrap()
        .to_string();
    let out = orchestra(&repo.path, &["review", &format!("main..{branch}")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("scope"), "{}", text(&out));

    // A later commit on the packet branch, carrying its trailers, strays out of scope.
    let wt = root.join(branch.split('/').nth(1).unwrap()).join("p1");
    std::fs::write(wt.join("README.md"), "changed\n").unwrap();
    let msg = repo.git(&["log", "-1", "--format=%B", &branch]);
    git(
        &wt,
        &[
            "commit",
            "-q",
            "-am",
            &format!(
                "stray\n\n{}",
                msg.lines().skip(2).collect::<Vec<_>>().join("\n")
            ),
        ],
    );
    let out = orchestra(
        &repo.path,
        &["review", &format!("main..{branch}"), "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["findings"][0]["category"], "scope");
    assert_eq!(v["findings"][0]["file"], "README.md");
    assert!(v["packet"].as_str().unwrap().ends_with("/p1"));
}

/// Returns a repository whose `main` is pushed to a bare remote `origin`, with a commit on
/// branch `feature` that the remote does not have.
fn with_remote() -> (TestRepo, std::path::PathBuf) {
    let repo = TestRepo::new();
    let remote = repo.tmp.path().join("remote.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    feature(&repo, &[("src/feature.rs", "pub fn feature() {}\n")]);
    (repo, remote)
}

/// Runs `review` with no range and returns its output, asserting it approved.
fn review_default(repo: &TestRepo) -> String {
    let out = orchestra(&repo.path, &["review"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("APPROVED") || all.contains("approved"),
        "{all}"
    );
    all
}

#[test]
fn the_default_range_uses_the_branchs_upstream() {
    let (repo, _remote) = with_remote();
    repo.git(&["branch", "-q", "--set-upstream-to=origin/main", "feature"]);
    let all = review_default(&repo);
    assert!(all.contains("base: upstream origin/main"), "{all}");
}

#[test]
fn the_default_range_without_an_upstream_uses_the_default_branch() {
    let (repo, _remote) = with_remote();
    let all = review_default(&repo);
    assert!(all.contains("merge-base with default branch main"), "{all}");
}

#[test]
fn the_default_range_on_a_detached_head_uses_the_default_branch() {
    let (repo, _remote) = with_remote();
    repo.git(&["checkout", "-q", "--detach", "feature"]);
    let all = review_default(&repo);
    assert!(all.contains("merge-base with default branch main"), "{all}");
}

#[test]
fn the_default_range_when_the_upstream_is_gone_uses_the_default_branch() {
    let (repo, _remote) = with_remote();
    repo.git(&["push", "-q", "-u", "origin", "feature"]);
    // The remote branch is deleted: the upstream stays configured but names nothing.
    repo.git(&["push", "-q", "origin", "--delete", "feature"]);
    assert_eq!(
        repo.git(&["config", "branch.feature.merge"]),
        "refs/heads/feature"
    );
    let all = review_default(&repo);
    assert!(all.contains("merge-base with default branch main"), "{all}");
}

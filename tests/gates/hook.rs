//! The pre-push gate with real `git push` to a local bare remote.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;

pub(crate) fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs git with the binary's directory on PATH (or without it), returning the output.
pub(crate) fn git_out(dir: &Path, args: &[&str], with_bin: bool) -> Output {
    hermetic();
    let path = std::env::var("PATH").unwrap_or_default();
    let path = if with_bin {
        format!("{}:{path}", bin_dir().display())
    } else {
        // A PATH that cannot hold a development build of the binary.
        "/usr/bin:/bin".to_string()
    };
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// A repository with a bare `origin` that already has `main`.
pub(crate) fn with_remote() -> (TestRepo, PathBuf) {
    let repo = TestRepo::new();
    let remote = repo.tmp.path().join("remote.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    (repo, remote)
}

pub(crate) fn commit_on_feature(repo: &TestRepo, file: &str, body: &str) {
    if repo.git(&["branch", "--show-current"]) != "feature" {
        repo.git(&["checkout", "-q", "-b", "feature"]);
    }
    repo.write(file, body);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", &format!("add {file}")]);
}

pub(crate) fn install(repo: &TestRepo) {
    let out = orchestra(&repo.path, &["hook", "install"]);
    assert!(out.status.success(), "{}", text(&out));
}

pub(crate) fn remote_has(remote: &Path, branch: &str) -> bool {
    git_out(
        remote,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
        false,
    )
    .status
    .success()
}

#[test]
fn unreviewed_push_is_refused_reviewed_push_passes_deletion_passes() {
    let (repo, remote) = with_remote();
    install(&repo);
    commit_on_feature(&repo, "src/a.rs", "pub fn a() {}\n");

    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(!out.status.success(), "{}", text(&out));
    let err = text(&out);
    assert!(err.contains("has no approving review"), "{err}");
    let base = repo.git(&["rev-parse", "main"]);
    let tip = repo.git(&["rev-parse", "HEAD"]);
    let command = format!("git orchestra review {base}..{tip}");
    assert!(err.contains(&command), "{err}");
    assert!(!remote_has(&remote, "feature"));

    // The exact command from the refusal approves it; the push then passes.
    let args: Vec<&str> = command.split(' ').skip(2).collect();
    let out = orchestra(&repo.path, &args);
    assert!(out.status.success(), "{}", text(&out));
    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert!(remote_has(&remote, "feature"));

    // An update of an existing branch is reviewed against the remote's old tip.
    commit_on_feature(&repo, "src/b.rs", "pub fn b() {}\n");
    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(!out.status.success(), "{}", text(&out));
    let old = repo.git(&["rev-parse", "HEAD~1"]);
    assert!(
        text(&out).contains(&format!("review {old}..")),
        "{}",
        text(&out)
    );

    let out = git_out(&repo.path, &["push", "origin", "--delete", "feature"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!remote_has(&remote, "feature"));

    // Verdicts are shared by pushing their notes ref: no review is asked of it.
    let notes = "refs/notes/orchestra/review";
    let out = git_out(&repo.path, &["push", "origin", notes], true);
    assert!(out.status.success(), "{}", text(&out));
    let theirs = git_out(&remote, &["rev-parse", notes], false);
    assert_eq!(
        String::from_utf8_lossy(&theirs.stdout).trim(),
        repo.git(&["rev-parse", notes])
    );
}

#[test]
fn auto_policy_reviews_during_the_push_and_blocks_secrets() {
    let (repo, remote) = with_remote();
    install(&repo);
    repo.git(&["config", "orchestra.gate.review", "auto"]);
    commit_on_feature(&repo, "src/a.rs", "pub fn a() {}\n");
    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("reviewed now and approved"),
        "{}",
        text(&out)
    );

    let key = "AKIAQWERTYUIOPASDFGH";
    commit_on_feature(&repo, "deploy.env", &format!("AWS_ACCESS_KEY_ID={key}\n"));
    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("deploy.env:1"), "{}", text(&out));
    assert!(!text(&out).contains(key), "{}", text(&out));
    assert_ne!(
        git_out(&remote, &["rev-parse", "refs/heads/feature"], false).stdout,
        repo.git(&["rev-parse", "HEAD"]).into_bytes()
    );
}

#[test]
fn an_existing_hook_is_chained_runs_first_and_is_restored_on_uninstall() {
    let (repo, remote) = with_remote();
    let hooks = repo.path.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let log = repo.tmp.path().join("chained.log");
    let block = repo.tmp.path().join("BLOCK");
    let original = format!(
        "#!/bin/sh\n# someone else's hook\necho \"$1 $(cat)\" >> {}\ntest ! -e {}\n",
        log.display(),
        block.display()
    );
    let hook = hooks.join("pre-push");
    std::fs::write(&hook, &original).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o750)).unwrap();

    install(&repo);
    // Reinstalling changes nothing.
    let again = orchestra(&repo.path, &["hook", "install"]);
    assert!(
        text(&again).contains("already installed"),
        "{}",
        text(&again)
    );
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-push.orchestra-chained")).unwrap(),
        original
    );

    commit_on_feature(&repo, "src/a.rs", "pub fn a() {}\n");
    assert!(orchestra(&repo.path, &["review"]).status.success());
    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(out.status.success(), "{}", text(&out));
    let seen = std::fs::read_to_string(&log).unwrap();
    let tip = repo.git(&["rev-parse", "HEAD"]);
    assert!(seen.starts_with("origin refs/heads/feature "), "{seen}");
    assert!(
        seen.contains(&tip),
        "the chained hook did not get stdin: {seen}"
    );

    // The chained hook can still block, even a reviewed push.
    std::fs::write(&block, "").unwrap();
    commit_on_feature(&repo, "src/b.rs", "pub fn b() {}\n");
    assert!(
        orchestra(&repo.path, &["review", "origin/feature..HEAD"])
            .status
            .success()
    );
    let out = git_out(&repo.path, &["push", "origin", "feature"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert_ne!(
        git_out(&remote, &["rev-parse", "refs/heads/feature"], false).stdout,
        format!("{}\n", repo.git(&["rev-parse", "HEAD"])).into_bytes()
    );

    let out = orchestra(&repo.path, &["hook", "uninstall"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), original);
    let mode = std::fs::metadata(&hook).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
    assert!(!hooks.join("pre-push.orchestra-chained").exists());
    let out = orchestra(&repo.path, &["hook", "uninstall"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn missing_binary_is_reported_and_blocks() {
    let (repo, _remote) = with_remote();
    install(&repo);
    commit_on_feature(&repo, "src/a.rs", "pub fn a() {}\n");
    assert!(orchestra(&repo.path, &["review"]).status.success());
    let out = git_out(&repo.path, &["push", "origin", "feature"], false);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("not on PATH"), "{}", text(&out));
}

#[test]
fn hooks_path_inside_the_working_tree_is_refused() {
    let (repo, _remote) = with_remote();
    repo.git(&["config", "core.hooksPath", ".husky"]);
    let out = orchestra(&repo.path, &["hook", "install"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("inside the working tree"),
        "{}",
        text(&out)
    );
    assert!(!repo.path.join(".husky").exists());

    let outside = repo.tmp.path().join("shared-hooks");
    repo.git(&["config", "core.hooksPath", outside.to_str().unwrap()]);
    install(&repo);
    assert!(outside.join("pre-push").exists());
}

#[test]
fn the_merged_result_is_pushed_without_a_second_review_and_later_commits_are_not() {
    let (repo, remote) = with_remote();
    install(&repo);
    let body = format!(
        "objective = \"Merge then push\"\n\n{}{}",
        packet("p1", "\"out-p1.txt\"", "", "\"test -f out-p1.txt\""),
        packet("p2", "\"out-p2.txt\"", "", "\"test -f out-p2.txt\""),
    );
    let plan = repo.write_plan("plan.toml", &body);
    let worker = r#"echo "$ORCHESTRA_PACKET" > "out-$ORCHESTRA_PACKET.txt""#;
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run_plan(&plan, worker, &["--merge"]);
    assert!(out.status.success(), "{}", text(&out));
    let tip = repo.git(&["rev-parse", "main"]);
    assert_ne!(tip, before);
    // The merged tree is neither packet's tree; the merge's verdict covers before..tip.
    let note = repo.git(&["notes", "--ref=orchestra/review", "show", &tip]);
    assert!(note.contains(&format!("\"base\": \"{before}\"")), "{note}");
    assert!(
        note.contains("every merged packet approved: p1, p2"),
        "{note}"
    );

    // The default policy reviews nothing during a push: the verdicts let it out.
    let out = git_out(&repo.path, &["push", "origin", "main"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(git(&remote, &["rev-parse", "main"]), tip);

    // A commit of the user's on top has no review: refused, with the range to review.
    repo.write("notes.txt", "mine\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "mine"]);
    let out = git_out(&repo.path, &["push", "origin", "main"], true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("review {tip}..")),
        "{}",
        text(&out)
    );
}

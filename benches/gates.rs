//! Gate and merge overhead, each side by side with its plain-git alternative in one run:
//!
//! 1. pre-push: `git push` of one new commit to a local bare remote with the git-orchestra
//!    gate installed (the tip's tree already reviewed) versus with an empty `exit 0` hook;
//! 2. merge: integrating 20 packet branches into an integration branch of a 5,000-file
//!    repository in memory (`merge-tree` + `commit-tree`, what the coordinator does) versus
//!    `git merge --no-ff` of each branch in a working tree.
//!
//! Run with `cargo bench --bench gates`. Prints a table; no thresholds are asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use git_orchestra::git::Git;
use git_orchestra::merge::{MergeTree, commit_merge, merge_tree};

const PUSHES: usize = 15;
const FILES: usize = 5_000;
const BRANCHES: usize = 20;

fn git(dir: &Path, args: &[&str]) -> String {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("PATH", path)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn hermetic(home: &Path) {
    for (k, v) in [
        ("HOME", home.to_str().unwrap_or("/tmp")),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "Bench"),
        ("GIT_AUTHOR_EMAIL", "bench@example.com"),
        ("GIT_COMMITTER_NAME", "Bench"),
        ("GIT_COMMITTER_EMAIL", "bench@example.com"),
    ] {
        // SAFETY: single-threaded at this point; set before any child process starts.
        unsafe { std::env::set_var(k, v) };
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// A repository with a bare remote holding `main`, and a `feature` branch checked out.
fn pushing_repo(root: &Path, name: &str) -> PathBuf {
    let repo = root.join(name);
    let remote = root.join(format!("{name}.git"));
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "bench\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    git(root, &["init", "-q", "--bare", remote.to_str().unwrap()]);
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&repo, &["push", "-q", "origin", "main"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    repo
}

/// Times `PUSHES` pushes of one new commit each; `prepare` runs untimed before each push.
fn time_pushes(repo: &Path, prepare: &dyn Fn(&Path)) -> Duration {
    let mut times = Vec::new();
    for i in 0..PUSHES {
        std::fs::write(repo.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", &format!("change {i}")]);
        prepare(repo);
        let started = Instant::now();
        git(repo, &["push", "-q", "origin", "feature"]);
        times.push(started.elapsed());
        // The push must have delivered the commit, not been refused quietly.
        let pushed = git(repo, &["ls-remote", "origin", "refs/heads/feature"]);
        let head = git(repo, &["rev-parse", "HEAD"]);
        assert!(
            pushed.starts_with(&head),
            "push {i} did not reach the remote: {pushed}"
        );
    }
    median(times)
}

fn bench_pre_push(root: &Path) {
    let gated = pushing_repo(root, "gated");
    git(&gated, &["orchestra", "hook", "install"]);
    let plain = pushing_repo(root, "plain");
    let hook = plain.join(".git/hooks/pre-push");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    let review = |repo: &Path| {
        let base = git(repo, &["rev-parse", "HEAD~1"]);
        git(repo, &["orchestra", "review", &format!("{base}..HEAD")]);
    };
    let with_gate = time_pushes(&gated, &review);
    let with_empty = time_pushes(&plain, &|_| {});
    println!(
        "pre-push ({PUSHES} pushes, median): gate on a reviewed tree {} | empty hook {} | ratio {:.2}x",
        ms(with_gate),
        ms(with_empty),
        with_gate.as_secs_f64() / with_empty.as_secs_f64()
    );
}

fn bench_merge(root: &Path) {
    let repo = root.join("big");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    for i in 0..FILES {
        let dir = repo.join(format!("d{:02}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i:04}.txt")),
            format!("file {i}\nline two\nline three\n"),
        )
        .unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "5,000 files"]);
    let mut branches = Vec::new();
    for b in 0..BRANCHES {
        let name = format!("packet-{b:02}");
        git(&repo, &["checkout", "-q", "-b", &name, "main"]);
        // Each packet edits three files of its own, spread over the tree.
        for k in 0..3 {
            let i = (b * 211 + k * 1_601) % FILES;
            let path = repo.join(format!("d{:02}/f{i:04}.txt", i / 100));
            std::fs::write(&path, format!("file {i}\nchanged by {name}\nline three\n")).unwrap();
        }
        git(&repo, &["commit", "-q", "-am", &name]);
        branches.push(name);
    }
    git(&repo, &["checkout", "-q", "main"]);
    let g = Git::new(&repo);

    // In memory: what the coordinator does per packet.
    let started = Instant::now();
    let mut tip = git(&repo, &["rev-parse", "main"]);
    for name in &branches {
        let commit = git(&repo, &["rev-parse", name]);
        let MergeTree::Clean { tree } = merge_tree(&g, &tip, &commit).unwrap() else {
            panic!("unexpected conflict merging {name}");
        };
        tip = commit_merge(&g, &tree, &[&tip, &commit], &format!("Merge {name}")).unwrap();
    }
    git(&repo, &["update-ref", "refs/heads/int-memory", &tip]);
    let in_memory = started.elapsed();

    // In a working tree: the usual way.
    let started = Instant::now();
    git(&repo, &["checkout", "-q", "-b", "int-worktree", "main"]);
    for name in &branches {
        git(&repo, &["merge", "-q", "--no-ff", "--no-edit", name]);
    }
    let worktree = started.elapsed();
    assert_eq!(
        git(&repo, &["rev-parse", "int-memory^{tree}"]),
        git(&repo, &["rev-parse", "int-worktree^{tree}"]),
        "both ways must produce the same tree"
    );
    assert_ne!(
        git(&repo, &["rev-parse", "int-memory^{tree}"]),
        git(&repo, &["rev-parse", "main^{tree}"]),
        "the merges must have brought the packets' changes"
    );
    println!(
        "merge {BRANCHES} packet branches into a {FILES}-file repo: in memory {} | git merge in a working tree {} | ratio {:.2}x",
        ms(in_memory),
        ms(worktree),
        in_memory.as_secs_f64() / worktree.as_secs_f64()
    );
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    hermetic(&home);
    bench_pre_push(tmp.path());
    bench_merge(tmp.path());
}

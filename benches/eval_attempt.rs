//! Preparing a clean attempt repository (`eval::attempt::prepare`: a new repository fetching
//! exactly the task's base by id, then a checkout) side by side with `git clone --no-local` of
//! the same repository checked out at the base; the goal is at most 1.5× the clone.
//!
//! Run with `cargo bench --bench eval_attempt`. The fixture (200 files over 40 commits, the
//! base ten commits before the tip) is built in a temporary directory; both variants run
//! interleaved, each timed as a whole (every git process it starts), and the medians and their
//! ratio are printed. No threshold is asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use git_orchestra::eval::attempt;
use git_orchestra::git::RepoInfo;

#[path = "support/mod.rs"]
mod support;
use support::{git, init_and_commit};

const ROUNDS: usize = 15;

fn main() {
    for (k, v) in [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "bench"),
        ("GIT_AUTHOR_EMAIL", "bench@example.com"),
        ("GIT_COMMITTER_NAME", "bench"),
        ("GIT_COMMITTER_EMAIL", "bench@example.com"),
    ] {
        // SAFETY: set once before any thread starts.
        unsafe { std::env::set_var(k, v) };
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let base = fixture(&src);
    let info = RepoInfo::discover(&src).unwrap();
    let (mut ours, mut clone) = (Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let dest = attempt::eval_dir(&info.common_dir, "bench").join(format!("a{i}"));
        let t = Instant::now();
        attempt::prepare(&info, &base, &dest).unwrap();
        ours.push(t.elapsed());
        std::fs::remove_dir_all(&dest).unwrap();
        let dest = tmp.path().join(format!("clone{i}"));
        let t = Instant::now();
        clone_at(&src, &base, &dest);
        clone.push(t.elapsed());
        std::fs::remove_dir_all(&dest).unwrap();
    }
    let (a, b) = (median(&mut ours), median(&mut clone));
    println!("{:<34} {:>10}", "variant (median of 15)", "wall ms");
    println!("{:<34} {:>10.1}", "attempt repository (ours)", ms(a));
    println!("{:<34} {:>10.1}", "git clone --no-local + checkout", ms(b));
    println!("ratio ours / clone: {:.2}× (goal ≤ 1.5×)", ms(a) / ms(b));
}

/// Builds a repository of 200 files over 40 commits in `dir`; returns the base: the commit ten
/// before the tip.
fn fixture(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for f in 0..200 {
        let body: String = (0..40).map(|l| format!("line {l} of file {f}\n")).collect();
        std::fs::write(dir.join(format!("src/f{f}.txt")), body).unwrap();
    }
    init_and_commit(dir, "initial");
    for c in 0..39 {
        let path = dir.join(format!("src/f{}.txt", c * 5));
        std::fs::write(&path, format!("changed in commit {c}\n")).unwrap();
        git(dir, &["commit", "-q", "-am", &format!("change {c}")]);
    }
    git(dir, &["gc", "-q"]);
    git(dir, &["rev-parse", "HEAD~10"])
}

/// Clones `src` into `dest` without sharing objects and checks `base` out.
fn clone_at(src: &Path, base: &str, dest: &Path) {
    let ok = Command::new("git")
        .args(["clone", "-q", "--no-local", "--no-checkout"])
        .arg(src)
        .arg(dest)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    git(dest, &["checkout", "-q", base]);
}

fn median(d: &mut [Duration]) -> Duration {
    d.sort();
    d[d.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

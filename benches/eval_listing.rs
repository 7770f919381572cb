//! Listing 1,000 commits of history as `eval tasks` candidates (`git orchestra eval tasks
//! --from-history HEAD~1000..HEAD`, the whole process, as a user runs it) side by side with
//! `git log --first-parent --name-status` of the same range, the read a person would start
//! from; the goal is at most 5 s for the listing.
//!
//! Run with `cargo bench --bench eval_listing`. The fixture is 1,001 commits made by `git
//! fast-import`: a third change only source files, a third only test files, a third only the
//! README, so every candidate is classified from its files and no test command runs — what is
//! timed is reading and classifying the range. Before printing a figure the benchmark checks
//! that the listing holds every commit with the reason its files give. No threshold is
//! asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;
use support::git;

const COMMITS: usize = 1000;
const ROUNDS: usize = 5;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fixture(&repo);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let range = format!("HEAD~{COMMITS}..HEAD");
    let (mut ours, mut log) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
            .args([
                "eval",
                "tasks",
                "--from-history",
                &range,
                "--test",
                "exit 1",
            ])
            .args(["--json"])
            .current_dir(&repo)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        ours.push(t.elapsed());
        check_listing(&out);
        let t = Instant::now();
        git(
            &repo,
            &[
                "log",
                "--first-parent",
                "--name-status",
                "--format=%H %s",
                &range,
            ],
        );
        log.push(t.elapsed());
    }
    let (a, b) = (median(&mut ours), median(&mut log));
    println!(
        "{:<46} {:>10}",
        "listing 1,000 commits (median of 5)", "wall ms"
    );
    println!(
        "{:<46} {:>10.1}",
        "git orchestra eval tasks --from-history",
        ms(a)
    );
    println!(
        "{:<46} {:>10.1}",
        "git log --first-parent --name-status",
        ms(b)
    );
    println!(
        "ratio ours / git log: {:.2}×; ours {:.2} s (goal ≤ 5 s)",
        ms(a) / ms(b),
        a.as_secs_f64()
    );
}

/// Builds `dir`: a root commit, then [`COMMITS`] commits cycling through a source-only, a
/// test-only and a README-only change.
fn fixture(dir: &Path) {
    git(
        dir.parent().unwrap(),
        &["init", "-q", "-b", "main", dir.to_str().unwrap()],
    );
    let mut stream = String::new();
    for c in 0..=COMMITS {
        let (path, body) = match c % 3 {
            _ if c == 0 => ("README.md".to_string(), "# bench\n".to_string()),
            0 => (format!("src/m{}.py", c % 50), format!("x = {c}\n")),
            1 => (
                format!("tests/test_m{}.py", c % 50),
                format!("def test(): assert {c}\n"),
            ),
            _ => ("README.md".to_string(), format!("# bench {c}\n")),
        };
        let message = format!("change {c}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\ncommitter bench <bench@example.com> {} +0000\ndata {}\n{message}",
            1_700_000_000 + c,
            message.len()
        ));
        stream.push_str(&format!(
            "M 644 inline {path}\ndata {}\n{body}\n",
            body.len()
        ));
    }
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    git(dir, &["checkout", "-q", "main"]);
}

/// Panics unless `out` is a successful listing of every commit with the reason its files give.
fn check_listing(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "eval tasks failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), COMMITS);
    for (i, task) in tasks.iter().enumerate() {
        let c = i + 1;
        let expected = match c % 3 {
            0 => "no_test_change",
            1 => "no_source_change",
            _ => "no_test_change",
        };
        assert_eq!(task["reason"], expected, "commit {c}: {task}");
        assert_eq!(task["objective"], format!("change {c}"), "commit {c}");
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

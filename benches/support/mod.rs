//! Helpers shared by the benchmarks: git in a hermetic environment and peak memory readings.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[allow(unused_imports)] // not every benchmark runs a mock server
pub use orchestra_test_support::{HttpRequest, read_request};

/// Runs git in `dir` without the user's or system's configuration and with a fixed identity;
/// panics with git's message when it fails; returns its trimmed output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Makes `dir` a repository on `main` whose one commit, `message`, holds every file in it.
pub fn init_and_commit(dir: &Path, message: &str) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// Returns the high-water resident set of process `pid` (`"self"` for this one) in KiB, from
/// its VmHWM line, while the process lives.
pub fn peak_rss_kib(pid: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Panics, naming what was wrong and showing the rendered report, unless `report` holds
/// exactly `count` packets that all succeeded, each having changed just the file
/// `file_of(packet id)`; benchmarks call it before printing a figure, so a run that did
/// nothing cannot pass for a fast one.
pub fn check_packets(
    report: &git_orchestra::orchestrator::Report,
    count: usize,
    file_of: impl Fn(&str) -> String,
) {
    let mut wrong = Vec::new();
    if report.packets.len() != count {
        wrong.push(format!(
            "{} packets in the report, {count} planned",
            report.packets.len()
        ));
    }
    for packet in &report.packets {
        let file = file_of(&packet.id);
        if packet.state != "succeeded" {
            wrong.push(format!("packet {} is {}", packet.id, packet.state));
        } else if packet.changed != [file.clone()] {
            wrong.push(format!(
                "packet {} changed {:?}, expected [{file:?}]",
                packet.id, packet.changed
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "the benchmark's run did not do its work, no figure is printed:\n  {}\n\n{}",
        wrong.join("\n  "),
        git_orchestra::orchestrator::report::render(report)
    );
}

/// Panics unless every `(path, content)` pair is what `rev` holds at `path` in `dir`'s
/// repository: the commits a benchmark's run promised exist.
pub fn check_tree(dir: &Path, rev: &str, expected: &[(String, String)]) {
    let mut wrong = Vec::new();
    for (path, content) in expected {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["show", &format!("{rev}:{path}")])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        let got = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || got != content.as_str() {
            wrong.push(format!("{rev}:{path} holds {got:?}, expected {content:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "the benchmark's run did not leave the expected commits, no figure is printed:\n  {}",
        wrong.join("\n  ")
    );
}

/// Serves as the sandbox launcher when the library re-executes this benchmark to confine a
/// worker, setup or validation command (it launches the running executable, as it does the
/// CLI); returns at once otherwise. A benchmark that drives runs in-process calls it first:
/// without it every confined command "ran" as this benchmark's `main`, did nothing and
/// exited 0.
pub fn serve_sandbox_launcher() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some(git_orchestra::agent::sandbox::LAUNCHER_ARG) {
        let err = git_orchestra::agent::sandbox::exec_sandboxed(&args[2..]);
        eprintln!("sandbox launcher: {err}");
        std::process::exit(i32::from(err.exit_status()));
    }
}

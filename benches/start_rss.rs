//! Peak memory of a `start` run with 16 of our agents working at once (goal ≤ 64 MB): the
//! `git-orchestra` process drives a 16-packet plan against a scripted model that takes a
//! second per turn, so all sixteen agents hold their conversations open together; its
//! high-water mark (VmHWM) is sampled from /proc while it runs, side by side with the same
//! binary doing almost nothing (`git orchestra status`) as the floor.
//!
//! Run with `cargo bench --bench start_rss` (add `--profile dev` to skip the release build).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use git_orchestra::demo::{MockModel, parse_scripts};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::{check_tree, init_and_commit};

const AGENTS: usize = 16;
/// Latency of every scripted model turn.
const TURN_MS: u64 = 1000;

fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..AGENTS {
        // Some real content, so the agents' reads and the reviews' diffs are not empty.
        let body: String = (0..200)
            .map(|l| format!("line {l} of file {i}\n"))
            .collect();
        std::fs::write(dir.join(format!("f{i:02}.txt")), body).unwrap();
    }
    init_and_commit(dir, "init");
}

/// Returns the scripts: a planner answering a plan of independent packets, an approving
/// reviewer and orchestrator, and per packet a coder that reads, writes and completes, each
/// turn taking [`TURN_MS`].
fn scripts() -> String {
    let mut plan = format!("max_parallel = {AGENTS}\n");
    for i in 0..AGENTS {
        plan.push_str(&format!(
            "\n[[packet]]\nid = \"p{i:02}\"\ntitle = \"Edit f{i:02}.txt\"\ndescription = \"Append a line.\"\nfiles = [\"f{i:02}.txt\"]\nvalidation = [\"grep -q appended f{i:02}.txt\"]\n"
        ));
    }
    let approve = "{\"verdict\": \"approve\", \"findings\": []}";
    let mut s = vec![
        json!({"name": "planner", "match": ["# Planner"], "replies": [{"text": format!("```toml\n{plan}```\n")}]}),
        json!({"name": "packet-review", "match": ["# Reviewer", "# Review this change"], "replies": [
            {"calls": [{"name": "complete", "args": {"summary": approve}}]}]}),
        json!({"name": "plan-review", "match": ["# Reviewer"], "replies": [{"text": approve}]}),
        json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{\"next_steps\": []}"}]}),
    ];
    for i in 0..AGENTS {
        let file = format!("f{i:02}.txt");
        let body: String = (0..200)
            .map(|l| format!("line {l} of file {i}\n"))
            .chain(std::iter::once("appended\n".to_string()))
            .collect();
        s.push(json!({"name": format!("p{i:02}"), "match": ["# Coder", format!("# Edit {file}")], "replies": [
            {"calls": [{"name": "read_file", "args": {"path": file}}], "delay_ms": TURN_MS},
            {"calls": [{"name": "write_file", "args": {"path": file, "content": body}}], "delay_ms": TURN_MS},
            {"calls": [{"name": "complete", "args": {"summary": "appended a line"}}], "delay_ms": TURN_MS}
        ]}));
    }
    serde_json::to_string(&s).unwrap()
}

/// Runs the binary in `dir`, sampling its peak RSS; returns (peak MiB, wall time, success).
fn measure(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (f64, Duration, bool) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_git-orchestra"));
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let began = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut peak = 0u64;
    let status = loop {
        if let Some(kib) = support::peak_rss_kib(&pid.to_string()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if !status.success() {
        let mut err = String::new();
        use std::io::Read;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        eprintln!("{err}");
    }
    (peak as f64 / 1024.0, began.elapsed(), status.success())
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    repo(&dir);
    let model = MockModel::start(parse_scripts(&scripts()).unwrap()).unwrap();
    let env = [
        ("ORCHESTRA_PROVIDER", "openai-compatible"),
        ("ORCHESTRA_BASE_URL", model.url.as_str()),
        ("ORCHESTRA_MODEL", "scripted"),
        // The profile must admit every agent's call at once (its default is 4).
        ("ORCHESTRA_CONCURRENCY", "16"),
    ];
    let root = tmp.path().join("worktrees");
    let (floor, _, ok) = measure(&dir, &["status"], &env);
    assert!(ok, "status failed");
    let (peak, wall, ok) = measure(
        &dir,
        &[
            "start",
            "--yes",
            "--merge",
            "--no-clarify",
            "--quiet",
            "--worktree-root",
            root.to_str().unwrap(),
            "Append a line to every file",
        ],
        &env,
    );
    assert!(ok, "start failed");
    // Every agent's edit reached `main`: the run did the work the figure is about.
    let appended: Vec<_> = (0..AGENTS)
        .map(|i| {
            let body: String = (0..200)
                .map(|l| format!("line {l} of file {i}\n"))
                .chain(std::iter::once("appended\n".to_string()))
                .collect();
            (format!("f{i:02}.txt"), body)
        })
        .collect();
    check_tree(&dir, "main", &appended);
    let serial = Duration::from_millis(AGENTS as u64 * 3 * TURN_MS);
    println!(
        "start, {AGENTS} concurrent agents ({} s of model latency each, {:.0} s if run one by one): \
         peak RSS {peak:.1} MiB (floor: `status` {floor:.1} MiB), wall {:.1} s, {} model requests; goal ≤ 64 MB",
        3 * TURN_MS / 1000,
        serial.as_secs_f64(),
        wall.as_secs_f64(),
        model.requests()
    );
}

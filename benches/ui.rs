//! The web view under load: peak memory of `start` with `--ui` (a page open on it: its event
//! stream and its reads twice a second) against the same run without it (goal ≤ 20 MB more),
//! and how fast the view answers for a run of 100 packets (goal: the run page's data well
//! under a second).
//!
//! Run with `cargo bench --bench ui` (add `--profile dev` to skip the release build).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use git_orchestra::demo::{MockModel, parse_scripts};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::init_and_commit;

const AGENTS: usize = 16;
const TURN_MS: u64 = 500;
const PACKETS: usize = 100;

fn repo(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..files {
        std::fs::write(dir.join(format!("f{i:03}.txt")), format!("file {i}\n")).unwrap();
    }
    init_and_commit(dir, "init");
}

fn scripts() -> String {
    let mut plan = format!("max_parallel = {AGENTS}\n");
    for i in 0..AGENTS {
        plan.push_str(&format!(
            "\n[[packet]]\nid = \"p{i:03}\"\ntitle = \"Edit f{i:03}.txt\"\ndescription = \"Append.\"\nfiles = [\"f{i:03}.txt\"]\n"
        ));
    }
    let approve = "{\"verdict\": \"approve\", \"findings\": []}";
    let mut s = vec![
        json!({"name": "planner", "match": ["# Planner"], "replies": [{"text": format!("```toml\n{plan}```\n")}]}),
        json!({"name": "packet-review", "match": ["# Reviewer", "# Review this change"], "replies": [
            {"calls": [{"name": "complete", "args": {"summary": approve}}]}]}),
        json!({"name": "plan-review", "match": ["# Reviewer"], "replies": [{"text": approve}]}),
        json!({"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}),
    ];
    for i in 0..AGENTS {
        let file = format!("f{i:03}.txt");
        s.push(json!({"name": format!("p{i:03}"), "match": ["# Coder", format!("# Edit {file}")], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": file, "content": format!("file {i}\nappended\n")}}], "delay_ms": TURN_MS},
            {"calls": [{"name": "complete", "args": {"summary": "appended"}}], "delay_ms": TURN_MS}]}));
    }
    serde_json::to_string(&s).unwrap()
}

/// GETs `path` from the view at `base` (`host:port`) with its cookie; returns the body.
fn get(base: &str, cookie: &str, path: &str) -> String {
    let mut s = TcpStream::connect(base).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {base}\r\nCookie: {cookie}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// (host:port, cookie) of a printed view address.
fn parse(url: &str) -> (String, String) {
    let (base, token) = url
        .trim()
        .trim_start_matches("http://")
        .split_once("/?token=")
        .unwrap();
    let port = base.rsplit(':').next().unwrap();
    (base.to_string(), format!("orchestra_token_{port}={token}"))
}

/// Acts as an open page: the event stream, and the runs and the run read twice a second.
fn page(base: String, cookie: String, done: Arc<AtomicBool>) {
    let b = base.clone();
    let c = cookie.clone();
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(&b).unwrap();
        write!(
            s,
            "GET /api/events/ HTTP/1.1\r\nHost: {b}\r\nCookie: {c}\r\n\r\n"
        )
        .unwrap();
        let mut sink = [0u8; 512];
        while s.read(&mut sink).unwrap_or(0) > 0 {}
    });
    while !done.load(Ordering::SeqCst) {
        let runs = get(&base, &cookie, "/api/runs");
        let id = serde_json::from_str::<serde_json::Value>(&runs)
            .ok()
            .and_then(|v| v["runs"][0]["id"].as_str().map(str::to_string));
        if let Some(id) = id {
            get(&base, &cookie, &format!("/api/run/{id}"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Runs `start` in a fresh repository, with the view and a page on it when `ui`; returns its
/// peak RSS in MiB.
fn start_peak(tmp: &Path, name: &str, ui: bool) -> f64 {
    let dir = tmp.join(name);
    repo(&dir, AGENTS);
    let model = MockModel::start(parse_scripts(&scripts()).unwrap()).unwrap();
    let root = tmp.join(format!("{name}-worktrees"));
    let mut args = vec![
        "start",
        "--yes",
        "--no-clarify",
        "--quiet",
        "--worktree-root",
        root.to_str().unwrap(),
    ];
    if ui {
        args.push("--ui");
    }
    args.push("Append a line to every file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .current_dir(&dir)
        .args(&args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("ORCHESTRA_PROVIDER", "openai-compatible")
        .env("ORCHESTRA_BASE_URL", &model.url)
        .env("ORCHESTRA_MODEL", "scripted")
        .env("ORCHESTRA_CONCURRENCY", "16")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let err = child.stderr.take().unwrap();
    let (d, said) = (done.clone(), Arc::new(Mutex::new(String::new())));
    let s2 = said.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("web view: ") {
                let (base, cookie) = parse(url);
                let d = d.clone();
                std::thread::spawn(move || page(base, cookie, d));
            }
            s2.lock().unwrap().push_str(&line);
        }
    });
    let pid = child.id().to_string();
    let mut peak = 0u64;
    let status = loop {
        if let Some(kib) = support::peak_rss_kib(&pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    done.store(true, Ordering::SeqCst);
    assert!(status.success(), "start failed: {}", said.lock().unwrap());
    peak as f64 / 1024.0
}

/// A finished run of [`PACKETS`] packets (external worker), then the view's answer times.
fn responsiveness(tmp: &Path) {
    let dir = tmp.join("hundred");
    repo(&dir, PACKETS);
    let mut plan = String::from("objective = \"touch every file\"\nmax_parallel = 8\n");
    for i in 0..PACKETS {
        let dep = if i >= 10 {
            format!("depends_on = [\"p{:03}\"]\n", i - 10)
        } else {
            String::new()
        };
        plan.push_str(&format!("\n[[packet]]\nid = \"p{i:03}\"\ntitle = \"Touch f{i:03}\"\ndescription = \"d\"\nfiles = [\"f{i:03}.txt\"]\n{dep}"));
    }
    let plan_path = tmp.join("hundred.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let root = tmp.join("hundred-worktrees");
    // Packet pNNN touches fNNN.txt.
    let worker = "echo touched >> \"f${ORCHESTRA_PACKET#p}.txt\"";
    let out = Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .current_dir(&dir)
        .args([
            "run",
            plan_path.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
            "--quiet",
        ])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut ui = Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .current_dir(&dir)
        .args(["ui", "--no-open"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(ui.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let (base, cookie) = parse(&line);
    let runs: serde_json::Value = serde_json::from_str(&get(&base, &cookie, "/api/runs")).unwrap();
    let id = runs["runs"][0]["id"].as_str().unwrap().to_string();
    for (what, path) in [
        ("runs list", "/api/runs".to_string()),
        ("run page", format!("/api/run/{id}")),
        ("packet page", format!("/api/packet/{id}/p050")),
    ] {
        let mut times: Vec<Duration> = (0..20)
            .map(|_| {
                let t = Instant::now();
                let body = get(&base, &cookie, &path);
                assert!(body.starts_with('{'), "{what}: {body}");
                t.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "{what} of a {PACKETS}-packet run: p50 {:.1} ms, max {:.1} ms",
            times[10].as_secs_f64() * 1e3,
            times[19].as_secs_f64() * 1e3
        );
    }
    let _ = ui.kill();
    let _ = ui.wait();
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let without = start_peak(tmp.path(), "plain", false);
    let with = start_peak(tmp.path(), "ui", true);
    println!(
        "start, {AGENTS} agents: peak RSS {without:.1} MiB without the view, {with:.1} MiB with it and a page open ({:+.1} MiB; goal ≤ 20 MB more)",
        with - without
    );
    responsiveness(tmp.path());
}

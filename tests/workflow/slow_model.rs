//! A first run against a slow, flaky local model: a server that says nothing for a while
//! before its first token and is down for a while mid-plan. `start` shows progress all the
//! way, rides out the outage and completes; Ctrl-C during a long planner call stops it within
//! about a second, with the run left to resume.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use git_orchestra::demo;

use crate::support::{hermetic, orchestra, orchestra_command, read_request, text};

/// A loopback proxy in front of `upstream` (a base URL `http://host:port/v1`) that keeps
/// every request silent for `silence` before it forwards it, and after serving request
/// number `down_after` refuses connections for `down_for`. Returns its base URL and the
/// count of requests that reached it.
fn slow_proxy(
    upstream: &str,
    silence: Duration,
    down_after: usize,
    down_for: Duration,
) -> (String, Arc<AtomicUsize>) {
    let target = upstream
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        let mut listener = Some(listener);
        loop {
            let Ok((client, _)) = listener.as_ref().unwrap().accept() else {
                return;
            };
            let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
            let target = target.clone();
            let forward = move || forward(client, &target, silence);
            if n == down_after {
                forward();
                // The server goes down: connections are refused until it is back.
                drop(listener.take());
                std::thread::sleep(down_for);
                listener = Some(TcpListener::bind(("127.0.0.1", port)).unwrap());
            } else {
                std::thread::spawn(forward);
            }
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), count)
}

/// Reads the request on `client`, says nothing for `silence`, then passes it to `target`
/// and its answer back.
fn forward(mut client: TcpStream, target: &str, silence: Duration) {
    let Some(req) = read_request(&client) else {
        return;
    };
    std::thread::sleep(silence);
    let mut up = TcpStream::connect(target).unwrap();
    let mut head = format!("{} {} HTTP/1.1\r\n", req.method, req.path);
    for (k, v) in &req.headers {
        if !k.eq_ignore_ascii_case("connection") {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str("connection: close\r\n\r\n");
    up.write_all(head.as_bytes()).unwrap();
    up.write_all(&req.body).unwrap();
    let _ = std::io::copy(&mut up, &mut client);
}

/// Returns the demo's sample repository in a temporary directory (kept while the first value
/// lives), with a user configuration that says "waiting" after one second.
fn sample() -> (tempfile::TempDir, std::path::PathBuf) {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let config = tmp.path().join("user-config/git-orchestra");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[start]\nwait_line_secs = 1\n").unwrap();
    (tmp, repo)
}

fn scripts() -> Vec<demo::Script> {
    let plan = "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"One\"\ndescription = \"d\"\nfiles = [\"p1.txt\"]\nvalidation = [\"test -f p1.txt\"]\n```";
    let scripts = serde_json::json!([
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]}
    ]);
    demo::parse_scripts(&scripts.to_string()).unwrap()
}

#[test]
fn a_silent_then_unreachable_model_shows_progress_and_the_run_completes() {
    let (_tmp, repo) = sample();
    let model = demo::MockModel::start(scripts()).unwrap();
    // Every answer begins after 2.5 s of silence; after the first (the planner's) the server
    // is down for 9 s — longer than the old four quick retries waited.
    let (url, requests) = slow_proxy(
        &model.url,
        Duration::from_millis(2500),
        1,
        Duration::from_secs(9),
    );
    let out = orchestra_command(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--merge",
            "--worker-cmd",
            "echo done > \"$ORCHESTRA_PACKET.txt\"",
            "One file",
        ],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &url)
    .env("ORCHESTRA_MODEL", "scripted")
    .output()
    .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("planner waiting for the model") && shown.contains("prompt ~"),
        "{shown}"
    );
    assert!(
        shown.contains("model server unreachable, retrying in 1 s"),
        "{shown}"
    );
    assert!(requests.load(Ordering::SeqCst) >= 2, "{shown}");
    let status = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("completed"),
        "{}",
        text(&status)
    );
}

#[test]
fn ctrl_c_during_a_long_planner_call_stops_within_a_second_and_the_run_resumes() {
    let (_tmp, repo) = sample();
    let model = demo::MockModel::start(scripts()).unwrap();
    let (url, requests) = slow_proxy(&model.url, Duration::from_secs(120), 0, Duration::ZERO);
    let mut child = orchestra_command(
        &repo,
        &[
            "start",
            "--yes",
            "--no-clarify",
            "--worker-cmd",
            "echo done > \"$ORCHESTRA_PACKET.txt\"",
            "One file",
        ],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while requests.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the planner never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    // While the planner's call waits, `status` says so.
    std::thread::sleep(Duration::from_millis(500));
    let json = crate::support::status_json(&repo);
    let calls = json["start"]["model_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        calls
            .iter()
            .any(|c| c["role"] == "planner" && c["prompt_tokens"].as_u64() > Some(0)),
        "{json:#}"
    );
    let shown = text(&orchestra(&repo, &["status"]));
    assert!(
        shown.contains("model     planner waiting for the model"),
        "{shown}"
    );
    let stopped = Instant::now();
    // SAFETY: signals our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        stopped.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{status:?}");
    let shown = orchestra(&repo, &["status"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("paused"),
        "{}",
        text(&shown)
    );
    // Nothing was lost: `resume`, with the model answering at once, finishes the run.
    let out = crate::support::orchestra_with_env(
        &repo,
        &["resume"],
        &[
            ("ORCHESTRA_PROVIDER", "openai-compatible"),
            ("ORCHESTRA_BASE_URL", &model.url),
            ("ORCHESTRA_MODEL", "scripted"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_packet_agent_whose_model_server_is_down_says_so_and_finishes_when_it_is_back() {
    let (_tmp, repo) = sample();
    let scripts = serde_json::json!([
        {"name": "coder", "match": ["# Coder"], "replies": [
            {"calls": [{"name": "write_file", "args": {"path": "notes.txt", "content": "noted\n"}}]},
            {"calls": [{"name": "complete", "args": {"summary": "Wrote notes.txt.", "touched_files": ["notes.txt"]}}]}
        ]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]}
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    // The coder's first call is answered; then the server is down for 4 s.
    let (url, requests) = slow_proxy(&model.url, Duration::ZERO, 1, Duration::from_secs(4));
    let out = orchestra_command(
        &repo,
        &["agent", "coder", "Write notes.txt", "--files", "notes.txt"],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &url)
    .env("ORCHESTRA_MODEL", "scripted")
    .output()
    .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("coder: model server unreachable, retrying in 1 s"),
        "{shown}"
    );
    assert!(requests.load(Ordering::SeqCst) >= 2, "{shown}");
}

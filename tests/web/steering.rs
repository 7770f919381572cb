//! Steering without a browser: a person's comments sent through the view reach an external
//! worker through `ORCHESTRA_FIXES_FILE` in one more fix round; `git orchestra diff` shows a
//! packet's change in the terminal.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::{TestRepo, git, orchestra, packet, text};

/// POSTs `body` to the view at `url` (as printed) the way its page does.
fn post_as_page(url: &str, path: &str, body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, token) = rest.split_once("/?token=").unwrap();
    let port = addr.rsplit(':').next().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nCookie: orchestra_token_{port}={token}\r\nX-Orchestra-Token: {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

#[test]
fn comments_from_the_view_reach_an_external_worker_as_required_fixes() {
    let repo = TestRepo::new();
    let release = repo.scratch().join("release");
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"notes\"\n\n{}",
            packet(
                "p1",
                "\"notes.txt\", \"fixes.txt\"",
                "",
                &format!(
                    "\"while [ ! -e {} ]; do sleep 0.1; done\"",
                    release.display()
                )
            )
        ),
    );
    // The worker writes notes, and copies the required fixes it was given, if any.
    let worker = "echo notes >> notes.txt; if [ -n \"$ORCHESTRA_FIXES_FILE\" ]; then cp \"$ORCHESTRA_FIXES_FILE\" fixes.txt; fi";
    let root = repo.scratch().join("wt");
    let mut run = crate::support::orchestra_command(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let ui = crate::view::ui(&repo.path);
    // Once p1 waits in validation, the comment goes in.
    let deadline = Instant::now() + Duration::from_secs(120);
    let run_id = loop {
        let status = crate::support::status_json(&repo.path);
        if status["packets"][0]["phase"] == "validate" {
            break status["run"]["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "p1 never validated: {status}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let body = r#"{"packet":"p1","comments":[{"file":"notes.txt","line":1,"code":"notes","text":"Say which notes these are"}]}"#;
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run_id}/comments"), body);
    assert_eq!(status, 200, "{answer}");
    std::fs::write(&release, "").unwrap();
    assert!(run.wait().unwrap().success());
    let branch = format!("orchestra/{run_id}/p1");
    let fixes = git(&repo.path, &["show", &format!("{branch}:fixes.txt")]);
    assert!(
        fixes.contains("notes.txt line 1") && fixes.contains("Say which notes these are"),
        "{fixes}"
    );
    // Sent once, taken once: the fix round's commit replaced the first one.
    assert_eq!(
        git(&repo.path, &["show", &format!("{branch}:notes.txt")]),
        "notes\nnotes"
    );
    // A packet that is done takes no more comments.
    let (status, answer) = post_as_page(&ui.url, &format!("/api/run/{run_id}/comments"), body);
    assert_eq!(status, 409, "{answer}");

    // `diff` shows the packet's change against its start.
    let out = orchestra(&repo.path, &["diff", &run_id, "p1"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.starts_with("# p1 (succeeded)"), "{shown}");
    assert!(
        shown.contains("+++ b/notes.txt") && shown.contains("+notes"),
        "{shown}"
    );
    let out = orchestra(&repo.path, &["diff", &run_id, "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("its packets: p1"),
        "{}",
        text(&out)
    );
}

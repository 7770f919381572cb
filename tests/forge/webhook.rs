//! `git orchestra land --webhook` through the binary against the fake GitHub: with an hour
//! between polls, an event signed with the shared secret makes `land` look at once (and merge
//! what became ready), while an event with a wrong signature is answered 401 and changes
//! nothing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::forge::forge_mock::{FakeForge, Flavour};
use crate::forge::land_fixtures::configure;
use crate::forge::pull_requests::{TOKEN, packet, run_plan, setup, write_plan};
use crate::support::*;

const SHA1: &str = "1111111111111111111111111111111111111111";
const SECRET: &str = "webhook-s3cret";

/// Returns a loopback port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Posts `body` with `headers` to the listener and returns the answer's status.
fn post(port: u16, headers: &[(&str, &str)], body: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!(
        "POST /hook HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Returns GitHub's `X-Hub-Signature-256` for `body`, computed by `openssl`, independently
/// of the code under test.
fn github_signature(body: &str) -> String {
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-hmac", SECRET, "-r"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    format!("sha256={}", hex.split_whitespace().next().unwrap())
}

/// Returns how many times pull request 1 was read.
fn looks(forge: &FakeForge) -> usize {
    forge
        .calls()
        .iter()
        .filter(|c| c.as_str() == "GET /repos/acme/widgets/pulls/1")
        .count()
}

#[test]
fn a_signed_webhook_event_wakes_land_at_once_and_a_bad_signature_gets_401() {
    let forge = FakeForge::start(Flavour::GitHub);
    let (repo, _bare) = setup(Some(&forge), Flavour::GitHub);
    let plan = write_plan(&repo, &packet("p1", "", ""));
    let out = run_plan(&repo, &plan, "--pr", &[("GH_TOKEN", TOKEN)]);
    assert!(out.status.success(), "{}", text(&out));
    configure(&repo, "[land]\npoll_secs = 3600\n");
    forge.set_head(1, SHA1, Some(true));
    forge.add_check_run(SHA1, "test", None, "");

    // Without the secret the listener refuses to start, saying which variable to set.
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let refused = orchestra_command(&repo.path, &["land", "--webhook", &addr])
        .env("GH_TOKEN", TOKEN)
        .env_remove("ORCHESTRA_WEBHOOK_SECRET")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("ORCHESTRA_WEBHOOK_SECRET"),
        "{}",
        text(&refused)
    );

    let child = orchestra_command(&repo.path, &["land", "--webhook", &addr])
        .env("GH_TOKEN", TOKEN)
        .env("ORCHESTRA_WEBHOOK_SECRET", SECRET)
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while looks(&forge) == 0 || forge.comments_of(1).is_empty() {
        assert!(Instant::now() < deadline, "land never looked");
        std::thread::sleep(Duration::from_millis(100));
    }
    forge.add_check_run(SHA1, "test", Some("success"), "");
    let before = looks(&forge);

    let body = r#"{"action":"completed","check_run":{"head_sha":"1111"}}"#;
    let wrong = [
        ("x-github-event", "check_run"),
        ("x-hub-signature-256", "sha256=00ff"),
    ];
    assert_eq!(post(port, &wrong, body), 401);
    assert_eq!(post(port, &[("x-gitlab-token", "guess")], body), 401);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(looks(&forge), before, "a refused event wakes nothing");
    assert_eq!(forge.pulls()[0]["merged"], false);

    let signature = github_signature(body);
    let signed = [
        ("x-github-event", "check_run"),
        ("x-hub-signature-256", signature.as_str()),
    ];
    assert_eq!(post(port, &signed, body), 204);
    let woken = Instant::now();
    while forge.pulls()[0]["merged"] != true {
        assert!(
            woken.elapsed() < Duration::from_secs(1),
            "a verified event did not wake land (poll_secs is an hour)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("p1 #1: merged"), "{all}");
    assert!(
        all.contains(&format!("listening for webhook events on {addr}")),
        "{all}"
    );
    assert!(!all.contains(SECRET), "{all}");
}

//! Who the web view answers: the token from the printed address (then its cookie), its own
//! host names only, and changes only with the token header from its own origin.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};

use crate::support::{TestRepo, orchestra_command, refs};

struct Ui {
    child: Child,
    addr: String,
    token: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ui(repo: &TestRepo, extra: &[&str]) -> (Ui, String) {
    let mut args = vec!["ui", "--no-open"];
    args.extend_from_slice(extra);
    let mut child = orchestra_command(&repo.path, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    err.read_line(&mut said).unwrap();
    if said.starts_with("warning") {
        let mut more = String::new();
        err.read_line(&mut more).unwrap();
        said.push_str(&more);
    }
    let url = line.trim();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, query) = rest.split_once("/?token=").unwrap();
    (
        Ui {
            child,
            addr: addr.to_string(),
            token: query.to_string(),
        },
        said,
    )
}

/// Sends `request` (a whole HTTP/1.1 request) and returns the status and the whole answer.
fn send(addr: &str, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

fn get(ui: &Ui, path: &str, host: &str, cookie: Option<&str>) -> (u16, String) {
    let cookie = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    send(
        &ui.addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n"),
    )
}

fn post(ui: &Ui, path: &str, headers: &str, body: &str) -> (u16, String) {
    send(
        &ui.addr,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            ui.addr,
            body.len()
        ),
    )
}

#[test]
fn the_view_answers_only_its_token_its_host_and_its_own_origin() {
    let repo = TestRepo::new();
    let (ui, said) = ui(&repo, &[]);
    assert!(
        ui.addr.starts_with("127.0.0.1:"),
        "loopback by default: {}",
        ui.addr
    );
    assert!(
        said.contains(&format!("http://{}/?token={}", ui.addr, ui.token)),
        "{said}"
    );
    assert_eq!(ui.token.len(), 32);

    // No token, a wrong one: refused.
    let (status, body) = get(&ui, "/", &ui.addr, None);
    assert_eq!(status, 403, "{body}");
    let (status, body) = get(
        &ui,
        "/?token=00000000000000000000000000000000",
        &ui.addr,
        None,
    );
    assert_eq!(status, 403);
    assert!(body.contains("wrong token"), "{body}");
    // The right one sets the cookie and leads to the page without it.
    let (status, body) = get(&ui, &format!("/?token={}", ui.token), &ui.addr, None);
    assert_eq!(status, 303, "{body}");
    let cookie_line = body
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap();
    assert!(
        cookie_line.contains("HttpOnly") && cookie_line.contains("SameSite=Strict"),
        "{cookie_line}"
    );
    let port = ui.addr.rsplit(':').next().unwrap();
    let cookie = format!("orchestra_token_{port}={}", ui.token);
    let (status, body) = get(&ui, "/api/runs", &ui.addr, Some(&cookie));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("{\"runs\":[]}"), "{body}");
    // Another host name (DNS rebinding) is refused even with the cookie.
    let (status, _) = get(
        &ui,
        "/api/runs",
        &format!("evil.example:{port}"),
        Some(&cookie),
    );
    assert_eq!(status, 403);

    // A change needs the token header and the view's own origin; the cookie alone is not enough.
    let before = refs(&repo.path);
    let origin = format!("Origin: http://{}\r\n", ui.addr);
    let c = format!("Cookie: {cookie}\r\n");
    let token = format!("X-Orchestra-Token: {}\r\n", ui.token);
    let body = "{\"packet\":\"p1\",\"comments\":[{\"file\":\"a\",\"line\":1,\"text\":\"x\"}]}";
    let (status, answer) = post(&ui, "/api/run/r/comments", &format!("{c}{origin}"), body);
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("X-Orchestra-Token"), "{answer}");
    let (status, answer) = post(
        &ui,
        "/api/run/r/comments",
        &format!("{c}{token}Origin: http://evil.example\r\n"),
        body,
    );
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("Origin"), "{answer}");
    let (status, answer) = post(
        &ui,
        "/api/run/r/comments",
        &format!("{c}{token}{origin}"),
        body,
    );
    assert_eq!(
        status, 404,
        "allowed through, but there is no such run: {answer}"
    );
    assert_eq!(
        refs(&repo.path),
        before,
        "nothing changed in the repository"
    );
    assert!(!repo.path.join(".git/orchestra/orchestra.db").exists() || before == refs(&repo.path));
}

#[test]
fn listening_beyond_loopback_is_explicit_and_warned_about() {
    let repo = TestRepo::new();
    let (ui, said) = ui(&repo, &["--listen", "0.0.0.0:0"]);
    assert!(
        said.starts_with("warning: the web view listens on 0.0.0.0"),
        "{said}"
    );
    let (status, _) = get(&ui, &format!("/?token={}", ui.token), &ui.addr, None);
    assert_eq!(status, 303);
}

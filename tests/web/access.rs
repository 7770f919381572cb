//! Who the web view answers: the browser that opened the printed address first (a one-time
//! code, exchanged for a cookie and a key only the page holds), its own host names only, one
//! `Host` per request, and changes only with the key from its own origin.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::{TestRepo, orchestra_command, refs};
use crate::web::view::{header_of, page_key, send, session};

struct Ui {
    child: Child,
    /// The printed address.
    url: String,
    addr: String,
    /// The printed address's path and query (`/?code=…`).
    open: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ui(repo: &TestRepo, extra: &[&str]) -> (Ui, String) {
    ui_env(repo, extra, &[])
}

fn ui_env(repo: &TestRepo, extra: &[&str], env: &[(&str, &str)]) -> (Ui, String) {
    let mut args = vec!["ui", "--no-open"];
    args.extend_from_slice(extra);
    let mut child = orchestra_command(&repo.path, &args)
        .envs(env.iter().copied())
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
    let url = line.trim().to_string();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_once('/').unwrap();
    (
        Ui {
            addr: addr.to_string(),
            open: format!("/{path}"),
            url: url.clone(),
            child,
        },
        said,
    )
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

/// The printed address with its code replaced by `code`.
fn with_code(ui: &Ui, code: &str) -> String {
    let (path, query) = ui.open.split_once('?').unwrap();
    let name = query.split_once('=').unwrap().0;
    format!("{path}?{name}={code}")
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
    assert!(said.contains(&ui.url), "{said}");
    let code = ui.open.split_once('=').unwrap().1;
    assert_eq!(code.len(), 32);

    // No token, a wrong one: refused.
    let (status, body) = get(&ui, "/", &ui.addr, None);
    assert_eq!(status, 403, "{body}");
    let (status, body) = get(
        &ui,
        &with_code(&ui, "00000000000000000000000000000000"),
        &ui.addr,
        None,
    );
    assert_eq!(status, 403);
    assert!(body.contains("wrong token"), "{body}");
    // The right one sets the cookie and leads to the page.
    let (status, body) = get(&ui, &ui.open, &ui.addr, None);
    assert!(status == 200 || status == 303, "{body}");
    let cookie_line = header_of(&body, "Set-Cookie").unwrap();
    assert!(
        cookie_line.contains("HttpOnly") && cookie_line.contains("SameSite=Strict"),
        "{cookie_line}"
    );
    let cookie = cookie_line.split(';').next().unwrap().to_string();
    let key = if status == 200 {
        page_key(&body)
    } else {
        page_key(&get(&ui, "/", &ui.addr, Some(&cookie)).1)
    };
    let port = ui.addr.rsplit(':').next().unwrap();
    let api = |host: &str| {
        send(
            &ui.addr,
            &format!(
                "GET /api/runs HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nX-Orchestra-Token: {key}\r\nConnection: close\r\n\r\n"
            ),
        )
    };
    let (status, body) = api(&ui.addr);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("{\"runs\":[]}"), "{body}");
    // Another host name (DNS rebinding) is refused even with the cookie.
    let (status, _) = api(&format!("evil.example:{port}"));
    assert_eq!(status, 403);

    // A change needs the token header and the view's own origin; the cookie alone is not enough.
    let before = refs(&repo.path);
    let origin = format!("Origin: http://{}\r\n", ui.addr);
    let c = format!("Cookie: {cookie}\r\n");
    let token = format!("X-Orchestra-Token: {key}\r\n");
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
    let (status, _) = get(&ui, &ui.open, &ui.addr, None);
    assert!(status == 200 || status == 303, "{status}");
}

#[test]
fn the_printed_address_opens_the_view_once() {
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    let first = session(&ui.url);
    assert!(!first.cookie.is_empty());
    // The address in a browser's command line (or a scrollback) is useless once opened.
    let (status, body) = get(&ui, &ui.open, &ui.addr, None);
    assert_eq!(status, 403, "{body}");
    assert!(header_of(&body, "Set-Cookie").is_none(), "{body}");
}

#[test]
fn an_address_not_opened_in_time_no_longer_opens_the_view() {
    let repo = TestRepo::new();
    let (ui, _) = ui_env(&repo, &[], &[("ORCHESTRA_UI_CODE_SECONDS", "1")]);
    std::thread::sleep(Duration::from_millis(1500));
    let (status, body) = get(&ui, &ui.open, &ui.addr, None);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("expired"), "{body}");
}

#[test]
fn a_cookie_caught_on_another_loopback_port_cannot_drive_the_view() {
    // Browsers send a loopback cookie to every port of the host: a worker's preview server
    // the person opens gets it. The cookie alone must neither read nor change anything.
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    let page = session(&ui.url);
    let secret = page.cookie.split_once('=').unwrap().1.to_string();
    let (status, body) = get(&ui, "/api/runs", &ui.addr, Some(&page.cookie));
    assert_eq!(status, 403, "{body}");
    // The page it can still load carries neither the cookie's value nor the page's key.
    let (status, body) = get(&ui, "/", &ui.addr, Some(&page.cookie));
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains(&secret) && !body.contains(&page.key),
        "{body}"
    );
    // Forging the page's headers with what it caught gets it nowhere either.
    let (status, body) = post(
        &ui,
        "/api/run/r/cancel",
        &format!(
            "Cookie: {}\r\nX-Orchestra-Token: {secret}\r\nOrigin: http://{}\r\n",
            page.cookie, ui.addr
        ),
        "{}",
    );
    assert_eq!(status, 403, "{body}");
}

#[test]
fn a_request_without_a_single_host_naming_the_server_is_refused() {
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    // A second Host header after the right one (a proxy and the server reading different
    // ones) is refused before the code is looked at.
    let (status, body) = send(
        &ui.addr,
        &format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
            ui.open, ui.addr
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Host"), "{body}");
    let (status, body) = send(
        &ui.addr,
        &format!("GET {} HTTP/1.0\r\nConnection: close\r\n\r\n", ui.open),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Host"), "{body}");
    // The code still works: the refusals did not use it.
    let (status, body) = get(&ui, &ui.open, &ui.addr, None);
    assert!(status == 200 || status == 303, "{body}");
}

#[test]
fn the_page_forbids_inline_script_framing_form_posts_and_base_changes() {
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    let page = session(&ui.url);
    let (status, body) = get(&ui, "/", &ui.addr, Some(&page.cookie));
    assert_eq!(status, 200, "{body}");
    let csp = header_of(&body, "Content-Security-Policy").unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert!(!body.contains("<script>"), "no inline script: {body}");
}

/// Returns the number of threads of process `pid`.
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_flood_of_idle_connections_does_not_grow_a_thread_each() {
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    let before = threads(ui.child.id());
    let flood: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect(&ui.addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    let during = threads(ui.child.id());
    assert!(
        during < before + 40,
        "{during} threads with {} idle connections (was {before})",
        flood.len()
    );
    drop(flood);
    // The view answers again once the flood is gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = get(&ui, "/", &ui.addr, None);
        if status == 403 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no answer: {status}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn hostile_worker_output_reaches_the_page_scrubbed_of_keys() {
    let (repo, run) = crate::web::view::hostile_run();
    let (ui, _) = ui_env(&repo, &[], &crate::web::view::KEYS_ENV);
    let page = session(&ui.url);
    let api = |path: &str| {
        send(
            &ui.addr,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
                ui.addr, page.cookie, page.key
            ),
        )
    };
    let (status, body) = api(&format!("/api/packet/{run}/p1"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("the key is"), "the line is there: {body}");
    for key in [crate::web::view::SHAPED_KEY, crate::web::view::PLAIN_KEY] {
        assert!(!body.contains(key), "{key} shown: {body}");
    }
    let (status, body) = api(&format!("/api/run/{run}"));
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(crate::web::view::PLAIN_KEY), "{body}");
}

#[test]
fn a_request_another_site_makes_the_browser_send_is_refused() {
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    // A page on another port (same site, another origin) sending the browser to the address.
    let (status, body) = send(
        &ui.addr,
        &format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nSec-Fetch-Site: same-site\r\nConnection: close\r\n\r\n",
            ui.open, ui.addr
        ),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("another site"), "{body}");
    let page = session(&ui.url);
    let (status, body) = send(
        &ui.addr,
        &format!(
            "GET /api/runs HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nSec-Fetch-Site: cross-site\r\nConnection: close\r\n\r\n",
            ui.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 403, "{body}");
}

#[test]
fn a_request_sent_a_byte_at_a_time_is_dropped_in_bounded_time() {
    use std::io::{Read, Write};
    let repo = TestRepo::new();
    let (ui, _) = ui(&repo, &[]);
    let mut s = TcpStream::connect(&ui.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let began = std::time::Instant::now();
    let head = format!("GET / HTTP/1.1\r\nHost: {}\r\nX-Padding: ", ui.addr);
    let mut bytes = head.bytes().chain(std::iter::repeat(b'a'));
    let dropped = loop {
        if began.elapsed() > Duration::from_secs(25) {
            break false;
        }
        let byte = bytes.next().unwrap();
        if s.write_all(&[byte]).is_err() {
            break true;
        }
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break true,
        }
        std::thread::sleep(Duration::from_millis(900));
    };
    assert!(dropped, "a trickling request held its connection for 25 s");
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "{:?}",
        began.elapsed()
    );
}

/// Returns the most memory process `pid` has held, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_huge_worker_log_is_read_from_its_tail_only() {
    let (repo, run) = crate::web::view::hostile_run();
    let dir = git_orchestra::exec::run_dir(&repo.path.join(".git"), &run).join("p1");
    let line = "x".repeat(99) + "\n";
    std::fs::write(dir.join("worker-9.log"), line.repeat(1 << 20)).unwrap();
    let (ui, _) = ui(&repo, &[]);
    let page = session(&ui.url);
    let before = peak_kib(ui.child.id());
    let (status, body) = send(
        &ui.addr,
        &format!(
            "GET /api/packet/{run}/p1?diff=0 HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nX-Orchestra-Token: {}\r\nConnection: close\r\n\r\n",
            ui.addr, page.cookie, page.key
        ),
    );
    assert_eq!(status, 200, "{}", &body[..body.len().min(400)]);
    let grown = peak_kib(ui.child.id()) - before;
    assert!(grown < 40 * 1024, "reading a 100 MiB log took {grown} KiB");
}

//! The local web view (`git orchestra ui`, `start --ui`): a small HTTP server in the binary,
//! beside `commands/`, that renders the same library queries as `status --json` and steers
//! runs through the same functions the commands use.
//!
//! Security: it listens on loopback unless `--listen` says otherwise; who it answers is
//! `access`'s job (a one-time code in the printed address, then a cookie and a key only the
//! page holds, one `Host` naming the server, changes from its own origin only); every reply
//! carries a strict content security policy, and every string of run data it sends is
//! scrubbed of keys first. The page renders run data as text only (`assets/app.js`).

mod access;
mod api;
mod evals;
mod http;
mod live;
mod steer;

use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use git_orchestra::config::RepoConfig;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::Launch;
use serde_json::Value;

use access::{Access, Gate, Opener};
use http::{Reply, Request};
pub use live::Live;

const PAGE: &str = include_str!("assets/page.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// The largest request body the server reads (a plan being edited, a batch of comments).
const MAX_BODY: u64 = 1 << 20;

/// What every reply carries: no script but the page's own file, no inline style, no plugin,
/// frame, form target or `<base>`, nothing cached or sniffed, no referrer.
const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
];

/// A running web view.
pub struct Server {
    /// The address to print: it opens the view once, within minutes.
    pub url: String,
    base: String,
    shared: Arc<Shared>,
}

impl Server {
    /// Returns a new address for a browser's command line: it opens the view once, within a
    /// minute.
    pub fn browser_url(&self) -> Result<String, String> {
        let code = self
            .shared
            .gate
            .mint(Opener::Browser)
            .map_err(|e| format!("cannot make an access code: {e}"))?;
        Ok(format!("{}/?code={code}", self.base))
    }
}

/// What every request handler shares.
pub(crate) struct Shared {
    pub repo: RepoInfo,
    pub config: RepoConfig,
    gate: Gate,
    /// Live streams open now (each holds a connection).
    streams: AtomicUsize,
    pub live: Arc<Live>,
    /// How a run that must go on (resumed, retried, its plan decided) gets a driver.
    pub launcher: Arc<dyn Launch>,
}

/// Returns the `host:port` names a browser may use for a server bound to `addr`.
fn host_names(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![format!("localhost:{port}")];
    if addr.ip().is_unspecified() {
        hosts.push(format!("127.0.0.1:{port}"));
        hosts.push(format!("[::1]:{port}"));
    } else {
        // `SocketAddr`'s form is the `Host` form: brackets around an IPv6 address.
        hosts.push(addr.to_string());
    }
    hosts
}

/// Starts serving `repo` on `listen` in background threads and returns where.
pub fn serve(
    repo: RepoInfo,
    config: RepoConfig,
    listen: SocketAddr,
    live: Arc<Live>,
    launcher: Arc<dyn Launch>,
) -> Result<Server, String> {
    let listener = std::net::TcpListener::bind(listen)
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let shown = if addr.ip().is_unspecified() {
        format!("127.0.0.1:{}", addr.port())
    } else {
        addr.to_string()
    };
    let gate = Gate::new(host_names(addr), addr.port());
    let code = gate
        .mint(Opener::Printed)
        .map_err(|e| format!("cannot make an access code: {e}"))?;
    let shared = Arc::new(Shared {
        repo,
        config,
        gate,
        streams: AtomicUsize::new(0),
        live,
        launcher,
    });
    let handler = shared.clone();
    http::serve(listener, Arc::new(move |request| handle(&handler, request)))
        .map_err(|e| format!("cannot start the web view: {e}"))?;
    let base = format!("http://{shown}");
    Ok(Server {
        url: format!("{base}/?code={code}"),
        base,
        shared,
    })
}

/// 32 hex digits from the system's random source.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    fs_err::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn text(status: u16, body: &str) -> Reply {
    Reply::new(status, body).with_header("Content-Type", "text/plain; charset=utf-8")
}

fn typed(body: &str, content_type: &str) -> Reply {
    Reply::new(200, body).with_header("Content-Type", content_type)
}

/// Returns a JSON reply of `value` with every string in it scrubbed of keys.
pub(crate) fn json(status: u16, value: &Value) -> Reply {
    let mut value = value.clone();
    scrub(&mut value, &git_orchestra::exec::secret_env::values());
    Reply::new(status, value.to_string()).with_header("Content-Type", "application/json")
}

/// Replaces, in every string of `value`, each of `keys` (those this process was given) and
/// every credential the secret scanner recognises, as the engine does for what it journals:
/// a worker's log, a report or a diff may quote a key, and the page must not show it.
fn scrub(value: &mut Value, keys: &[String]) {
    match value {
        Value::String(s) => {
            let masked = git_orchestra::gate::mask_secrets(s);
            let scrubbed = git_orchestra::redact::scrub(
                &masked,
                keys.iter().map(String::as_str),
                git_orchestra::llm::profile::KEY_PLACEHOLDER,
            );
            if scrubbed != *s {
                *s = scrubbed;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub(v, keys)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub(v, keys)),
        _ => {}
    }
}

/// Returns a request target's path and query (empty when there is none).
pub(crate) fn split_url(url: &str) -> (&str, &str) {
    url.split_once('?').unwrap_or((url, ""))
}

/// Returns the percent-decoded value of `key` in `query`, the first when it appears twice.
pub(crate) fn query_value(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_decode(v))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                Err(_) => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn handle(shared: &Shared, request: Request) {
    let reply = match shared.gate.check(&request) {
        Access::Refused(status, why) => text(status, &why),
        Access::Opened { cookie, key } => {
            page(&key).with_header("Set-Cookie", &shared.gate.set_cookie(&cookie))
        }
        Access::Page if request.method == "GET" => {
            let (path, _) = split_url(&request.url);
            get_page(path)
        }
        Access::Page => text(405, "only the API takes changes"),
        Access::Api => {
            let url = request.url.clone();
            let (path, query) = split_url(&url);
            match request.method.as_str() {
                "GET" if path.starts_with("/api/events/") => {
                    live::stream_events(shared, request, SECURITY_HEADERS.as_slice());
                    return;
                }
                "GET" => get_api(shared, path, query),
                "POST" => match std::str::from_utf8(&request.body) {
                    Ok(body) => steer::post(shared, path, body),
                    Err(_) => text(400, "the request body is not UTF-8 text"),
                },
                _ => text(405, "only GET and POST"),
            }
        }
    };
    let reply = SECURITY_HEADERS
        .iter()
        .fold(reply, |r, (k, v)| r.with_header(k, v));
    request.respond(reply);
}

/// The page, its script and its style sheet.
fn get_page(path: &str) -> Reply {
    match path {
        "/app.js" => typed(SCRIPT, "text/javascript; charset=utf-8"),
        "/style.css" => typed(STYLE, "text/css; charset=utf-8"),
        "/" => page(""),
        _ if path.starts_with("/run/") || path.starts_with("/packet/") => page(""),
        "/evals" => page(""),
        _ if path.starts_with("/eval/") => page(""),
        _ => text(404, "no such page"),
    }
}

fn get_api(shared: &Shared, path: &str, query: &str) -> Reply {
    match path {
        "/api/runs" => api::runs(shared),
        "/api/evals" => evals::list(shared),
        _ if path.starts_with("/api/eval/") => evals::one(shared, &path["/api/eval/".len()..]),
        _ if path.starts_with("/api/run/") => api::run(shared, &path["/api/run/".len()..]),
        _ if path.starts_with("/api/packet/") => {
            api::packet(shared, &path["/api/packet/".len()..], query)
        }
        _ => text(404, "no such page"),
    }
}

/// The one HTML page; the script renders the view the path names. `key` is given only in
/// the answer that opened a session (the page keeps it in its origin's local storage).
fn page(key: &str) -> Reply {
    typed(&PAGE.replace("{{KEY}}", key), "text/html; charset=utf-8")
}

//! The local web view (`git orchestra ui`, `start --ui`): a small HTTP server in the binary,
//! beside `commands/`, that renders the same library queries as `status --json` and steers
//! runs through the same functions the commands use.
//!
//! Security: it listens on loopback unless `--listen` says otherwise; every server has its own
//! random token, given in the printed URL and kept in a cookie after that; every request must
//! name a host the server listens as (no DNS rebinding), and a state-changing request must
//! carry the token in a header (which a cross-site form cannot set) and an `Origin` of the
//! server itself.

mod api;
mod live;
mod steer;

use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

use git_orchestra::config::RepoConfig;
use git_orchestra::git::RepoInfo;
use tiny_http::{Header, Method, Request, Response};

pub use live::Live;

const PAGE: &str = include_str!("assets/page.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// The largest request body the server reads (a plan being edited, a batch of comments).
const MAX_BODY: u64 = 1 << 20;

/// A running web view.
pub struct Server {
    /// The address to open, token included.
    pub url: String,
}

/// What every request handler shares.
pub(crate) struct Shared {
    pub repo: RepoInfo,
    pub config: RepoConfig,
    token: String,
    hosts: Vec<String>,
    cookie: String,
    pub live: Arc<Live>,
}

/// Starts serving `repo` on `listen` in background threads and returns where.
pub fn serve(
    repo: RepoInfo,
    config: RepoConfig,
    listen: SocketAddr,
    live: Arc<Live>,
) -> Result<Server, String> {
    let server =
        tiny_http::Server::http(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| format!("cannot listen on {listen}: not an IP address"))?;
    let token = random_token().map_err(|e| format!("cannot make the access token: {e}"))?;
    let port = addr.port();
    let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if !addr.ip().is_loopback() {
        hosts.push(addr.to_string());
    }
    let shown = if addr.ip().is_unspecified() {
        format!("127.0.0.1:{port}")
    } else {
        addr.to_string()
    };
    let url = format!("http://{shown}/?token={token}");
    let shared = Arc::new(Shared {
        repo,
        config,
        cookie: format!("orchestra_token_{port}"),
        token,
        hosts,
        live,
    });
    std::thread::Builder::new()
        .name("web".into())
        .spawn(move || {
            for request in server.incoming_requests() {
                let shared = shared.clone();
                let _ = std::thread::Builder::new()
                    .name("web-request".into())
                    .spawn(move || handle(&shared, request));
            }
        })
        .map_err(|e| format!("cannot start the web view: {e}"))?;
    Ok(Server { url })
}

/// 32 hex digits from the system's random source.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    fs_err::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn header<'a>(request: &'a Request, name: &'static str) -> Option<&'a str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

fn with_header(response: Response<std::io::Cursor<Vec<u8>>>, name: &str, value: &str) -> Reply {
    match Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(h) => response.with_header(h),
        Err(()) => response,
    }
}

type Reply = Response<std::io::Cursor<Vec<u8>>>;

fn text(status: u16, body: &str) -> Reply {
    let r = Response::from_string(body).with_status_code(status);
    with_header(r, "Content-Type", "text/plain; charset=utf-8")
}

fn typed(body: &str, content_type: &str) -> Reply {
    let r = Response::from_string(body);
    let r = with_header(r, "Content-Type", content_type);
    let r = with_header(r, "Cache-Control", "no-store");
    let r = with_header(r, "X-Content-Type-Options", "nosniff");
    with_header(
        r,
        "Content-Security-Policy",
        "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    )
}

pub(crate) fn json(status: u16, value: &serde_json::Value) -> Reply {
    let r = Response::from_string(value.to_string()).with_status_code(status);
    let r = with_header(r, "Cache-Control", "no-store");
    with_header(r, "Content-Type", "application/json")
}

/// What a request's credentials say.
enum Access {
    /// The cookie (or the header) carries the token.
    Granted,
    /// The URL carries the token: set the cookie and go to the page without it.
    FromUrl(String),
    Refused(&'static str),
}

fn access(shared: &Shared, request: &Request) -> Access {
    let host = header(request, "Host").unwrap_or("");
    if !shared.hosts.iter().any(|h| h == host) {
        return Access::Refused("this server does not answer for that host name");
    }
    let (path, query) = split_url(request.url());
    if let Some(token) = query_value(query, "token") {
        if token == shared.token {
            return Access::FromUrl(path.to_string());
        }
        return Access::Refused("wrong token; open the URL `git orchestra ui` printed");
    }
    let cookie = header(request, "Cookie").unwrap_or("");
    let has_cookie = cookie
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .any(|(k, v)| k == shared.cookie && v == shared.token);
    if has_cookie {
        Access::Granted
    } else {
        Access::Refused("no token; open the URL `git orchestra ui` printed")
    }
}

/// A state-changing request must carry the token in a header and come from this server's page.
fn same_origin(shared: &Shared, request: &Request) -> Result<(), &'static str> {
    if header(request, "X-Orchestra-Token") != Some(shared.token.as_str()) {
        return Err("a change needs the token in the X-Orchestra-Token header");
    }
    let host = header(request, "Host").unwrap_or("");
    match header(request, "Origin") {
        Some(origin) if origin == format!("http://{host}") => Ok(()),
        _ => Err("a change must come from this server's own page (Origin)"),
    }
}

pub(crate) fn split_url(url: &str) -> (&str, &str) {
    url.split_once('?').unwrap_or((url, ""))
}

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

fn handle(shared: &Shared, mut request: Request) {
    let reply = match access(shared, &request) {
        Access::Refused(why) => text(403, why),
        Access::FromUrl(path) => {
            let r = Response::from_string("").with_status_code(303);
            let r = with_header(r, "Location", &path);
            with_header(
                r,
                "Set-Cookie",
                &format!(
                    "{}={}; HttpOnly; SameSite=Strict; Path=/",
                    shared.cookie, shared.token
                ),
            )
        }
        Access::Granted => {
            let url = request.url().to_string();
            let (path, query) = split_url(&url);
            if *request.method() == Method::Get && path.starts_with("/api/events/") {
                live::stream_events(shared, request, &path["/api/events/".len()..]);
                return;
            }
            match request.method() {
                Method::Get => get(shared, path, query),
                Method::Post => match same_origin(shared, &request) {
                    Err(why) => text(403, why),
                    Ok(()) => {
                        let mut body = String::new();
                        let read = request.as_reader().take(MAX_BODY).read_to_string(&mut body);
                        match read {
                            Ok(_) => steer::post(shared, path, &body),
                            Err(_) => text(400, "the request body is not UTF-8 text"),
                        }
                    }
                },
                _ => text(405, "only GET and POST"),
            }
        }
    };
    let _ = request.respond(reply);
}

fn get(shared: &Shared, path: &str, query: &str) -> Reply {
    match path {
        "/app.js" => typed(SCRIPT, "text/javascript; charset=utf-8"),
        "/style.css" => typed(STYLE, "text/css; charset=utf-8"),
        "/api/runs" => api::runs(shared),
        _ if path.starts_with("/api/run/") => api::run(shared, &path["/api/run/".len()..]),
        _ if path.starts_with("/api/packet/") => {
            api::packet(shared, &path["/api/packet/".len()..], query)
        }
        "/" => page(shared),
        _ if path.starts_with("/run/") || path.starts_with("/packet/") => page(shared),
        _ => text(404, "no such page"),
    }
}

/// The one HTML page; the script renders the view the path names.
fn page(shared: &Shared) -> Reply {
    typed(
        &PAGE.replace("{{TOKEN}}", &shared.token),
        "text/html; charset=utf-8",
    )
}

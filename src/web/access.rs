//! Who the web view answers, and with what.
//!
//! A loopback server is reachable by every local process and by every page the person's
//! browser shows, and a browser sends a loopback cookie to *every* port of the host — a
//! worker's preview server included. So the cookie is not enough on its own:
//!
//! - the printed (or opened) address carries a one-time code, good once and for a few
//!   minutes (the address in a browser's command line, readable through `/proc`, is useless
//!   once opened);
//! - opening it sets an `HttpOnly`, `SameSite=Strict` cookie and hands the page, in that one
//!   answer only, a key it keeps in its origin's local storage (per port, unlike cookies)
//!   and sends in `X-Orchestra-Token` with every API call — a header no other origin can make
//!   a browser send, and that nothing sends to another port;
//! - the API wants both the cookie and the key of one session, a change also the server's own
//!   `Origin`; every request exactly one `Host` naming the server (no DNS rebinding), and a
//!   browser's `Sec-Fetch-Site`, when sent, `same-origin` (or `none`: an address typed in).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::http::Request;

/// How long the printed address opens the view.
const PRINTED_CODE_LIFETIME: Duration = Duration::from_secs(600);
/// How long the address handed to the browser's command line opens the view.
const BROWSER_CODE_LIFETIME: Duration = Duration::from_secs(60);
/// Shortens (never lengthens) both lifetimes, in seconds: for tests.
const LIFETIME_ENV: &str = "ORCHESTRA_UI_CODE_SECONDS";

/// Which address a code is for.
#[derive(Clone, Copy)]
pub(crate) enum Opener {
    /// Printed on the terminal for the person to open.
    Printed,
    /// Given to the browser on its command line.
    Browser,
}

/// What a request may do.
pub(crate) enum Access {
    /// A page, its script or its style sheet: the browser holds the cookie.
    Page,
    /// An API call: the cookie and the page's key of one session, and for a change the
    /// server's own origin.
    Api,
    /// The code of an address, exchanged now: the page gets `key`, the browser `cookie`.
    Opened { cookie: String, key: String },
    /// Refused with this status and message.
    Refused(u16, String),
}

struct Code {
    value: String,
    expires: Instant,
}

struct Session {
    cookie: String,
    key: String,
}

/// The codes, sessions and names of one server.
pub(crate) struct Gate {
    hosts: Vec<String>,
    cookie_name: String,
    codes: Mutex<Vec<Code>>,
    sessions: Mutex<Vec<Session>>,
}

/// Returns true if and only if `a` and `b` are equal, in time independent of where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

impl Gate {
    /// Returns the gate of a server answering to `hosts` (`host:port` as a browser names
    /// them) on `port`.
    pub fn new(hosts: Vec<String>, port: u16) -> Gate {
        Gate {
            hosts,
            cookie_name: format!("orchestra_session_{port}"),
            codes: Mutex::new(Vec::new()),
            sessions: Mutex::new(Vec::new()),
        }
    }

    /// Returns a new one-time code for an address given to `opener`.
    pub fn mint(&self, opener: Opener) -> std::io::Result<String> {
        let mut lifetime = match opener {
            Opener::Printed => PRINTED_CODE_LIFETIME,
            Opener::Browser => BROWSER_CODE_LIFETIME,
        };
        if let Some(s) = std::env::var(LIFETIME_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
        {
            lifetime = lifetime.min(Duration::from_secs(s));
        }
        let value = super::random_token()?;
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        codes.push(Code {
            value: value.clone(),
            expires: Instant::now() + lifetime,
        });
        Ok(value)
    }

    /// Returns the `Set-Cookie` value for a session's `cookie`.
    pub fn set_cookie(&self, cookie: &str) -> String {
        format!(
            "{}={cookie}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name
        )
    }

    /// Decides what `request` may do.
    pub fn check(&self, request: &Request) -> Access {
        let hosts: Vec<&str> = request.headers_named("Host").collect();
        let host = match hosts.as_slice() {
            [] => return refused(400, "the request names no Host"),
            [one] => *one,
            _ => return refused(400, "the request names more than one Host"),
        };
        if !self.hosts.iter().any(|h| h == host) {
            return refused(403, "this server does not answer for that host name");
        }
        if let Some(site) = request.header("Sec-Fetch-Site")
            && site != "same-origin"
            && site != "none"
        {
            return Access::Refused(
                403,
                format!(
                    "a request from another site ({site}) is refused: open the address `git orchestra ui` printed"
                ),
            );
        }
        let (path, query) = super::split_url(&request.url);
        if let Some(code) = super::query_value(query, "code") {
            if request.method != "GET" || path.starts_with("/api/") {
                return refused(400, "only a page's address carries a code");
            }
            return self.exchange(&code);
        }
        let Some(session) = self.session_of(request) else {
            return refused(
                403,
                "no token: open the address `git orchestra ui` printed (it opens the view once)",
            );
        };
        if !path.starts_with("/api/") {
            return Access::Page;
        }
        let key = request.header("X-Orchestra-Token").unwrap_or("");
        if !same_secret(key, &session.key) {
            return refused(
                403,
                "an API call needs the page's key in the X-Orchestra-Token header: open the address `git orchestra ui` printed (run it again for a new one)",
            );
        }
        if request.method != "GET" && request.header("Origin") != Some(&format!("http://{host}")) {
            return refused(
                403,
                "a change must come from this server's own page (Origin)",
            );
        }
        Access::Api
    }

    /// Takes `code` (once) and opens a session for it.
    fn exchange(&self, code: &str) -> Access {
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(at) = codes.iter().position(|c| same_secret(&c.value, code)) else {
            return refused(
                403,
                "wrong token: this address's code is unknown or was used already; run `git orchestra ui` again for a new address",
            );
        };
        let found = codes.remove(at);
        drop(codes);
        if Instant::now() > found.expires {
            return refused(
                403,
                "wrong token: this address's code expired unused; run `git orchestra ui` again for a new address",
            );
        }
        let (Ok(cookie), Ok(key)) = (super::random_token(), super::random_token()) else {
            return refused(500, "cannot make a session: no random source");
        };
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.push(Session {
            cookie: cookie.clone(),
            key: key.clone(),
        });
        Access::Opened { cookie, key }
    }

    /// Returns the session whose cookie `request` carries.
    fn session_of(&self, request: &Request) -> Option<Session> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        request
            .headers_named("Cookie")
            .flat_map(|c| c.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .filter(|(k, _)| *k == self.cookie_name)
            .find_map(|(_, v)| sessions.iter().find(|s| same_secret(&s.cookie, v)))
            .map(|s| Session {
                cookie: s.cookie.clone(),
                key: s.key.clone(),
            })
    }
}

fn refused(status: u16, message: &str) -> Access {
    Access::Refused(status, message.to_string())
}

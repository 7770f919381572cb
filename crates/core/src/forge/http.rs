//! The JSON-over-HTTPS client the forges share: authentication, the token kept out of every
//! message, pacing of content-creating requests, waiting out rate limits, and conditional
//! reads.
//!
//! A read the forge answered with an `ETag` is asked again with `If-None-Match`; a `304 Not
//! Modified` then returns the answer remembered from before. GitHub does not count a 304
//! against the rate limit, so following pull requests that do not change costs almost nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ForgeError;
use super::limit::{WriteLimiter, server_wait};

/// Longest the client waits for a rate limit to reset before giving up with an error.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// How many times one request is retried after a rate-limit answer.
const MAX_RATE_RETRIES: usize = 4;

/// What a scrubbed forge token is replaced with.
const TOKEN_PLACEHOLDER: &str = "***";

/// A forge access token. Its `Debug` form hides it, and [`Token::scrub`] removes it from text
/// before that text goes into an error.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Wraps a token (trimmed of surrounding whitespace, as `gh auth token` prints it).
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into().trim().to_string())
    }

    /// Returns `text` with every occurrence of the token replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        orchestra_sys::redact::scrub(text, [self.0.as_str()], TOKEN_PLACEHOLDER)
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

/// A client bound to one API base URL and token.
pub struct Api {
    agent: ureq::Agent,
    base: String,
    token: Option<Token>,
    /// `Bearer` (GitHub) or `token` (Gitea).
    scheme: &'static str,
    accept: &'static str,
    writes: Mutex<WriteLimiter>,
    /// Set when the server said the primary limit is exhausted until then.
    blocked_until: Mutex<Option<Instant>>,
    /// The last answer to each read that carried an `ETag`: (etag, answer), by path.
    cached: Mutex<HashMap<String, (String, Value)>>,
}

impl Api {
    /// Returns a client for `base` (no trailing slash needed) sending `Authorization: <scheme>
    /// <token>` and pacing writes to `writes_per_minute`.
    pub fn new(
        base: &str,
        token: Option<Token>,
        scheme: &'static str,
        accept: &'static str,
        writes_per_minute: usize,
    ) -> Api {
        let base = base.trim_end_matches('/').to_string();
        let loopback = ["http://127.", "http://localhost", "http://[::1]"]
            .iter()
            .any(|p| base.starts_with(p));
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .user_agent("git-orchestra");
        if loopback {
            // A proxy from the environment must not capture calls to a local forge.
            config = config.proxy(None);
        }
        Api {
            agent: config.build().into(),
            base,
            token,
            scheme,
            accept,
            writes: Mutex::new(WriteLimiter::new(
                writes_per_minute,
                Duration::from_secs(60),
            )),
            blocked_until: Mutex::new(None),
            cached: Mutex::new(HashMap::new()),
        }
    }

    /// Returns the token requests carry, for scrubbing it from text the forge sends back.
    pub(super) fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }

    /// Returns the base URL requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends `method path` with an optional JSON body and returns the parsed JSON answer
    /// (`Null` for an empty one). Rate-limit answers are waited out (up to a few minutes) and
    /// retried; any other non-2xx answer is an error with the token scrubbed from it.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ForgeError> {
        let writes = method != "GET";
        let known = if writes { None } else { self.known(path) };
        let answer = self.exchange(method, path, body, known.as_ref().map(|k| k.0.as_str()))?;
        if answer.status == 304
            && let Some((_, value)) = known
        {
            return Ok(value);
        }
        if answer.text.trim().is_empty() {
            return Ok(Value::Null);
        }
        let value: Value =
            serde_json::from_str(&answer.text).map_err(|e| ForgeError::Protocol {
                method: method.to_string(),
                path: path.to_string(),
                message: format!("the answer is not JSON: {e}"),
            })?;
        if !writes && let Some(etag) = answer.etag {
            self.remember(path, etag, &value);
        }
        Ok(value)
    }

    /// Reads `path` as plain text (a CI job's log), with the same rate-limit handling and
    /// errors as [`Api::request`]; never conditional.
    pub fn request_text(&self, path: &str) -> Result<String, ForgeError> {
        Ok(self.exchange("GET", path, None, None)?.text)
    }

    /// Sends a request until it is answered with anything but a rate limit: returns a 2xx
    /// answer (or a 304 to `if_none_match`), else the error the answer means.
    fn exchange(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        if_none_match: Option<&str>,
    ) -> Result<Answer, ForgeError> {
        let mut attempt = 0;
        loop {
            self.wait_for_limits(method, path, method != "GET")?;
            let answer = self.send(method, path, body, if_none_match)?;
            if answer.status == 304 && if_none_match.is_some() {
                return Ok(answer);
            }
            if (200..300).contains(&answer.status) {
                if let Some(wait) =
                    server_wait(None, answer.remaining.as_deref(), answer.reset.as_deref())
                    && let Ok(mut b) = self.blocked_until.lock()
                {
                    *b = Some(Instant::now() + wait);
                }
                return Ok(answer);
            }
            if let Some(wait) = answer.rate_limit_wait() {
                attempt += 1;
                if attempt > MAX_RATE_RETRIES || wait > MAX_WAIT {
                    return Err(ForgeError::RateLimited {
                        method: method.to_string(),
                        path: path.to_string(),
                        wait_secs: wait.as_secs(),
                    });
                }
                tracing::info!(
                    method,
                    path,
                    wait_ms = wait.as_millis() as u64,
                    "forge rate limit; waiting"
                );
                std::thread::sleep(wait);
                continue;
            }
            if answer.status == 401 {
                return Err(ForgeError::Auth {
                    method: method.to_string(),
                    path: path.to_string(),
                    status: answer.status,
                });
            }
            return Err(ForgeError::Status {
                method: method.to_string(),
                path: path.to_string(),
                status: answer.status,
                message: orchestra_sys::redact::scrub_and_clip(
                    &answer.text,
                    self.token.iter().map(Token::expose),
                    TOKEN_PLACEHOLDER,
                    400,
                ),
            });
        }
    }

    /// Returns the ETag and answer remembered for a read of `path`.
    fn known(&self, path: &str) -> Option<(String, Value)> {
        self.cached.lock().ok()?.get(path).cloned()
    }

    fn remember(&self, path: &str, etag: String, value: &Value) {
        if let Ok(mut cached) = self.cached.lock() {
            cached.insert(path.to_string(), (etag, value.clone()));
        }
    }

    /// Sends `GET path` and returns the answer's text as it is (a log, not JSON), following
    /// redirects (without the token: a redirect goes to a signed download URL). Any non-2xx
    /// answer is an error with the token scrubbed from it.
    pub fn get_text(&self, path: &str) -> Result<String, ForgeError> {
        self.wait_for_limits("GET", path, false)?;
        let answer = self.send("GET", path, None, None)?;
        if (200..300).contains(&answer.status) {
            return Ok(answer.text);
        }
        Err(ForgeError::Status {
            method: "GET".to_string(),
            path: path.to_string(),
            status: answer.status,
            message: orchestra_sys::redact::scrub_and_clip(
                &answer.text,
                self.token.iter().map(Token::expose),
                TOKEN_PLACEHOLDER,
                400,
            ),
        })
    }

    fn wait_for_limits(&self, method: &str, path: &str, writes: bool) -> Result<(), ForgeError> {
        let blocked = self.blocked_until.lock().ok().and_then(|mut b| b.take());
        if let Some(until) = blocked {
            let wait = until.saturating_duration_since(Instant::now());
            if wait > MAX_WAIT {
                return Err(ForgeError::RateLimited {
                    method: method.to_string(),
                    path: path.to_string(),
                    wait_secs: wait.as_secs(),
                });
            }
            std::thread::sleep(wait);
        }
        if writes && let Ok(mut limiter) = self.writes.lock() {
            let wait = limiter.delay(Instant::now());
            if !wait.is_zero() {
                tracing::info!(
                    wait_ms = wait.as_millis() as u64,
                    "pacing content-creating requests"
                );
                std::thread::sleep(wait);
            }
            limiter.record(Instant::now());
        }
        Ok(())
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        if_none_match: Option<&str>,
    ) -> Result<Answer, ForgeError> {
        // An absolute URL (GitHub's GraphQL endpoint) is taken as it is.
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{}", self.base, path)
        };
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("{} {}", self.scheme, t.expose()));
        let text = body.map(Value::to_string).unwrap_or_default();
        macro_rules! headers {
            ($req:expr) => {{
                let mut r = $req
                    .header("accept", self.accept)
                    .header("content-type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("authorization", a);
                }
                if let Some(tag) = if_none_match {
                    r = r.header("if-none-match", tag);
                }
                r
            }};
        }
        let result = match method {
            "GET" => headers!(self.agent.get(&url)).call(),
            "DELETE" => headers!(self.agent.delete(&url)).call(),
            "POST" => headers!(self.agent.post(&url)).send(text),
            "PATCH" => headers!(self.agent.patch(&url)).send(text),
            "PUT" => headers!(self.agent.put(&url)).send(text),
            other => {
                return Err(ForgeError::Protocol {
                    method: other.to_string(),
                    path: path.to_string(),
                    message: "unsupported HTTP method".into(),
                });
            }
        };
        let resp = result.map_err(|e| ForgeError::Connect {
            url: self.scrub(&url),
            message: self.scrub(&e.to_string()),
        })?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let status = resp.status().as_u16();
        let retry_after = header("retry-after");
        let remaining = header("x-ratelimit-remaining");
        let reset = header("x-ratelimit-reset");
        let etag = header("etag");
        let text = resp
            .into_body()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| ForgeError::Connect {
                url: self.scrub(&url),
                message: self.scrub(&e.to_string()),
            })?;
        Ok(Answer {
            status,
            retry_after,
            remaining,
            reset,
            etag,
            text,
        })
    }

    fn scrub(&self, text: &str) -> String {
        match &self.token {
            Some(t) => t.scrub(text),
            None => text.to_string(),
        }
    }
}

struct Answer {
    status: u16,
    retry_after: Option<String>,
    remaining: Option<String>,
    reset: Option<String>,
    etag: Option<String>,
    text: String,
}

impl Answer {
    /// Returns the wait a rate-limit answer asks for: 429 always; 403 when the headers or the
    /// message say it is a limit (GitHub's secondary limits answer 403 with `retry-after`, or
    /// with only a message, in which case a minute is the documented wait).
    fn rate_limit_wait(&self) -> Option<Duration> {
        if self.status != 429 && self.status != 403 {
            return None;
        }
        let wait = server_wait(
            self.retry_after.as_deref(),
            self.remaining.as_deref(),
            self.reset.as_deref(),
        );
        let says_limit = self.text.to_lowercase().contains("rate limit");
        match (self.status, wait) {
            (_, Some(w)) => Some(w),
            (429, None) => Some(Duration::from_secs(60)),
            (_, None) if says_limit => Some(Duration::from_secs(60)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_never_shows() {
        let t = Token::new("  ghp_secret123\n");
        assert_eq!(format!("{t:?}"), "Token(***)");
        assert_eq!(t.scrub("bad token ghp_secret123!"), "bad token ***!");
    }
}

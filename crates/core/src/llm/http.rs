//! The HTTP transport both wire formats share: posting JSON, classifying failure statuses,
//! and reading streamed bodies with errors mapped to [`LlmError`].

use std::io::{BufReader, Read};

use super::LlmError;
use super::profile::{ApiKey, Profile};

/// How the key is presented.
#[derive(Debug, Clone, Copy)]
pub(super) enum AuthStyle {
    /// `Authorization: Bearer <key>` (OpenAI and compatibles).
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
}

/// A connection pool bound to one profile and its key.
#[derive(Clone)]
pub(super) struct Transport {
    agent: ureq::Agent,
    pub profile: Profile,
    key: Option<ApiKey>,
    auth: AuthStyle,
}

/// The body of a successful response, ready to be read line by line.
pub(super) struct Stream {
    pub reader: BufReader<Box<dyn Read + Send>>,
    /// True when the server answered `text/event-stream`, false for one JSON document.
    pub is_sse: bool,
}

impl Transport {
    pub fn new(profile: Profile, key: Option<ApiKey>, auth: AuthStyle) -> Transport {
        let loopback = profile.base_url.starts_with("http://127.")
            || profile.base_url.starts_with("http://localhost")
            || profile.base_url.starts_with("http://[::1]");
        let backstop = super::wait::backstop(&profile, profile.context_tokens);
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(
                profile.timeout.min(std::time::Duration::from_secs(15)),
            ))
            // A backstop only: the caller keeps the clocks of first token and stall (see
            // `wait`) and gives up long before this fires, even for the largest prompt.
            .timeout_recv_response(Some(backstop))
            .timeout_per_read(Some(backstop));
        if loopback {
            // A proxy from the environment must not capture calls to a local model server.
            config = config.proxy(None);
        }
        Transport {
            agent: config.build().into(),
            profile,
            key,
            auth,
        }
    }

    /// Returns a message safe to show: without the key, then clipped.
    pub fn scrub(&self, text: &str) -> String {
        orchestra_sys::redact::scrub_and_clip(
            text,
            self.key.iter().map(|k| k.expose()),
            super::profile::KEY_PLACEHOLDER,
            600,
        )
    }

    /// Posts `body` to `path` under the base URL and returns the body of a 2xx answer; any
    /// other answer becomes a classified error.
    pub fn post(
        &self,
        path: &str,
        extra: &[(&str, &str)],
        body: &serde_json::Value,
    ) -> Result<Stream, LlmError> {
        let url = format!("{}{}", self.profile.base_url, path);
        let model = self.profile.label();
        let mut req = self
            .agent
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream, application/json");
        if let Some(key) = &self.key {
            req = match self.auth {
                AuthStyle::Bearer => {
                    req.header("authorization", &format!("Bearer {}", key.expose()))
                }
                AuthStyle::XApiKey => req.header("x-api-key", key.expose()),
            };
        }
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        let text = serde_json::to_string(body).map_err(|e| LlmError::Protocol {
            model: model.clone(),
            message: format!("cannot encode the request: {e}"),
        })?;
        let resp = req.send(text).map_err(|e| self.transport_error(&url, e))?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let retry_after = header("retry-after");
        let is_sse = header("content-type").is_some_and(|c| c.contains("event-stream"));
        let mut body = resp.into_body();
        if (200..300).contains(&status) {
            let reader: Box<dyn Read + Send> = Box::new(body.into_reader());
            return Ok(Stream {
                reader: BufReader::new(reader),
                is_sse,
            });
        }
        let text = body
            .with_config()
            .limit(64 * 1024)
            .read_to_string()
            .unwrap_or_default();
        Err(self.classify(status, retry_after.as_deref(), &text))
    }

    /// Maps a non-2xx status and its body to an error kind.
    fn classify(&self, status: u16, retry_after: Option<&str>, body: &str) -> LlmError {
        let model = self.profile.label();
        let message = self.scrub(&error_message(body));
        match status {
            429 => LlmError::RateLimited {
                model,
                retry_after: retry_after.and_then(parse_retry_after),
            },
            401 | 403 => LlmError::Auth {
                model,
                var: self
                    .profile
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| "named by the profile's api_key_env".to_string()),
                message: format!("the server refused the credentials (HTTP {status}): {message}"),
            },
            500..=599 if is_tool_call_parse_failure(body) => LlmError::MalformedToolCall {
                model,
                status,
                message,
            },
            500..=599 => LlmError::Unavailable {
                model,
                status,
                message,
            },
            400 | 413 if is_context_overflow(body) => LlmError::ContextTooLong { model, message },
            _ => LlmError::BadRequest {
                model,
                status,
                message,
            },
        }
    }

    /// Maps a failure before any answer arrived.
    fn transport_error(&self, url: &str, e: ureq::Error) -> LlmError {
        let model = self.profile.label();
        match e {
            ureq::Error::Timeout(_) => LlmError::Timeout {
                model,
                timeout: self.profile.timeout,
            },
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => LlmError::Timeout {
                model,
                timeout: self.profile.timeout,
            },
            other => LlmError::Connect {
                model,
                url: url.to_string(),
                message: self.scrub(&other.to_string()),
            },
        }
    }

    /// Maps an error while reading a streamed body.
    pub fn read_error(&self, e: &std::io::Error) -> LlmError {
        let model = self.profile.label();
        let text = e.to_string();
        if e.kind() == std::io::ErrorKind::TimedOut || text.to_lowercase().contains("timeout") {
            LlmError::Timeout {
                model,
                timeout: self.profile.timeout,
            }
        } else {
            LlmError::BrokenStream {
                model,
                message: self.scrub(&text),
            }
        }
    }

    /// Returns the error for a stream that ended before the answer was complete.
    pub fn truncated(&self, what: &str) -> LlmError {
        LlmError::BrokenStream {
            model: self.profile.label(),
            message: format!("the stream ended before {what}"),
        }
    }

    /// Returns the error for an answer that is not the documented format.
    pub fn protocol(&self, message: impl std::fmt::Display) -> LlmError {
        LlmError::Protocol {
            model: self.profile.label(),
            message: self.scrub(&message.to_string()),
        }
    }
}

/// Returns the human part of a provider's error body (`error.message` when it is JSON).
pub(super) fn error_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error")?;
            e.get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .or_else(|| e.as_str().map(str::to_string))
        })
        .unwrap_or_else(|| body.to_string())
}

/// Returns true if and only if an error body says the prompt exceeds the context window.
fn is_context_overflow(body: &str) -> bool {
    let b = body.to_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "prompt is too long",
        "exceed_context_size",
        "exceeds the available context",
        "maximum context",
    ]
    .iter()
    .any(|k| b.contains(k))
}

/// Returns true if and only if a 5xx body says the server failed to parse the tool call the
/// model generated. llama.cpp's server says `Failed to parse tool call arguments as JSON`, or
/// `Failed to parse input at pos N: <the model's output>` when its tool-call grammar rejects
/// what the model wrote; other OpenAI-compatible servers (vLLM's tool parsers, proxies in
/// front of them) word it as an error "parsing" or "extracting" a "tool call".
fn is_tool_call_parse_failure(body: &str) -> bool {
    let b = error_message(body).to_lowercase();
    let tool_call = ["tool call", "tool_call", "function call", "tool-call"]
        .iter()
        .any(|k| b.contains(k));
    let parse = ["parse", "parsing", "extract", "malformed", "invalid json"]
        .iter()
        .any(|k| b.contains(k));
    b.contains("failed to parse input at pos") || (tool_call && parse)
}

/// Parses `Retry-After` as seconds (fractions allowed); HTTP dates are ignored.
fn parse_retry_after(value: &str) -> Option<std::time::Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| std::time::Duration::from_secs_f64(secs.min(600.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_and_context_overflow_are_recognised() {
        assert_eq!(
            parse_retry_after("2"),
            Some(std::time::Duration::from_secs(2))
        );
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert!(is_context_overflow(
            r#"{"error":{"code":"context_length_exceeded"}}"#
        ));
        assert!(!is_context_overflow(r#"{"error":{"message":"bad tool"}}"#));
        assert_eq!(error_message(r#"{"error":{"message":"nope"}}"#), "nope");
        assert!(is_tool_call_parse_failure(
            r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: parse error at line 1","type":"server_error"}}"#
        ));
        assert!(is_tool_call_parse_failure(
            r#"{"error":{"code":500,"message":"Failed to parse input at pos 395: <|tool_call_start|>[f(x=1)]","type":"server_error"}}"#
        ));
        assert!(!is_tool_call_parse_failure(
            r#"{"error":{"message":"upstream exploded"}}"#
        ));
        assert!(!is_tool_call_parse_failure("Internal Server Error"));
    }
}

//! A webhook listener that wakes landing's poll loop at once when the forge says something
//! changed, instead of at the next `[land] poll_secs`.
//!
//! An event is only trusted when it proves it knows the shared secret: GitHub's
//! `X-Hub-Signature-256` (`sha256=` and the HMAC-SHA256 of the body, hex), Gitea's and
//! Forgejo's `X-Gitea-Signature` / `X-Forgejo-Signature` (the same HMAC, bare hex), or
//! GitLab's `X-Gitlab-Token` (the secret itself). A verified event only wakes the loop, which
//! then reads the truth from the forge's API as on any poll: the payload itself is never
//! acted on, so a replayed event costs one early look and nothing else. Anything else is
//! answered 401 and changes nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Largest body read (GitHub caps webhook payloads at 25 MB).
const MAX_BODY: usize = 25 * 1024 * 1024;

/// Longest a request's headers may be.
const MAX_HEAD: usize = 64 * 1024;

/// A sleep that another thread can cut short.
#[derive(Debug, Default)]
pub struct Wake {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake {
    /// Ends the current (or the next) [`Wake::sleep`] at once.
    pub fn wake(&self) {
        if let Ok(mut w) = self.woken.lock() {
            *w = true;
            self.cv.notify_all();
        }
    }

    /// Sleeps for `d` or until woken, whichever comes first; returns true if and only if it
    /// was woken.
    pub fn sleep(&self, d: Duration) -> bool {
        let Ok(guard) = self.woken.lock() else {
            std::thread::sleep(d);
            return false;
        };
        match self.cv.wait_timeout_while(guard, d, |woken| !*woken) {
            Ok((mut woken, _)) => std::mem::replace(&mut *woken, false),
            Err(_) => false,
        }
    }
}

/// Why the webhook listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(
        "the webhook listener needs a secret: set ${env} to the secret the forge's webhook is configured with (the variable is named by [land] webhook_secret_env)"
    )]
    NoSecret { env: String },
    #[error(
        "cannot listen for webhooks on {addr}: {source}; pick a free address:port for --webhook"
    )]
    Bind {
        addr: String,
        source: std::io::Error,
    },
}

/// The shared secret a webhook event must prove it knows. Its `Debug` form hides it.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl WebhookSecret {
    /// Reads the secret from environment variable `env`; an unset or empty one is an error.
    pub fn from_env(env: &str) -> Result<WebhookSecret, WebhookError> {
        match std::env::var(env) {
            Ok(v) if !v.trim().is_empty() => Ok(WebhookSecret(v.trim().as_bytes().to_vec())),
            _ => Err(WebhookError::NoSecret {
                env: env.to_string(),
            }),
        }
    }

    /// Returns true if and only if `headers` (lower-case names) prove knowledge of the secret
    /// for `body`, in any of the three forges' ways.
    pub fn verifies(&self, headers: &[(String, String)], body: &[u8]) -> bool {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.trim())
        };
        let expected = hex(&hmac_sha256(&self.0, body));
        if let Some(sig) = header("x-hub-signature-256") {
            return sig
                .strip_prefix("sha256=")
                .is_some_and(|s| same(s.as_bytes(), expected.as_bytes()));
        }
        if let Some(sig) = header("x-gitea-signature").or_else(|| header("x-forgejo-signature")) {
            return same(sig.as_bytes(), expected.as_bytes());
        }
        if let Some(token) = header("x-gitlab-token") {
            return same(token.as_bytes(), &self.0);
        }
        false
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(***)")
    }
}

/// Listens on `addr` on a background thread: every verified event wakes `wake`; returns the
/// address bound (useful with port 0).
pub fn listen(
    addr: &str,
    secret: WebhookSecret,
    wake: Arc<Wake>,
) -> Result<SocketAddr, WebhookError> {
    let bind = |source| WebhookError::Bind {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(bind)?;
    let local = listener.local_addr().map_err(bind)?;
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if let Err(e) = serve(stream, &secret, &wake) {
                tracing::debug!(error = %e, "a webhook request could not be read");
            }
        }
    });
    Ok(local)
}

/// Reads one request and answers it: 204 and a wake-up when verified, else 401 (405 for a
/// method other than POST).
fn serve(stream: TcpStream, secret: &WebhookSecret, wake: &Wake) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let (method, headers) = read_head(&mut reader)?;
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let status = if method != "POST" {
        "405 Method Not Allowed"
    } else if length > MAX_BODY {
        "413 Payload Too Large"
    } else {
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if secret.verifies(&headers, &body) {
            let event = headers
                .iter()
                .find(|(k, _)| k.ends_with("-event"))
                .map(|(_, v)| v.as_str())
                .unwrap_or("event");
            tracing::info!(event, "verified webhook event; looking at the forge now");
            wake.wake();
            "204 No Content"
        } else {
            tracing::warn!("webhook event with a missing or wrong signature refused");
            "401 Unauthorized"
        }
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
}

/// Reads the request line and headers; returns the method and the headers, names lower-cased.
fn read_head(reader: &mut impl BufRead) -> std::io::Result<(String, Vec<(String, String)>)> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let method = line
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let mut headers = Vec::new();
    let mut read = line.len();
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        read += n;
        if n == 0 || line.trim().is_empty() || read > MAX_HEAD {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    Ok((method, headers))
}

/// Returns HMAC-SHA256 (RFC 2104) of `msg` under `key`.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(msg);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Returns true if and only if `a` equals `b`, in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn each_forges_proof_is_checked_and_a_wrong_one_refused() {
        let secret = WebhookSecret(b"s3cret".to_vec());
        let body = br#"{"action":"completed"}"#;
        let sig = hex(&hmac_sha256(b"s3cret", body));
        let h = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert!(secret.verifies(&h("x-hub-signature-256", &format!("sha256={sig}")), body));
        assert!(secret.verifies(&h("x-gitea-signature", &sig), body));
        assert!(secret.verifies(&h("x-gitlab-token", "s3cret"), body));
        assert!(!secret.verifies(&h("x-hub-signature-256", &sig), body));
        assert!(!secret.verifies(&h("x-gitea-signature", &sig), b"{}"));
        assert!(!secret.verifies(&h("x-gitlab-token", "guess"), body));
        assert!(!secret.verifies(&[], body));
        assert_eq!(format!("{secret:?}"), "WebhookSecret(***)");
    }

    #[test]
    fn a_wake_cuts_a_sleep_short_once() {
        let wake = Arc::new(Wake::default());
        let w = wake.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            w.wake();
        });
        let start = std::time::Instant::now();
        assert!(wake.sleep(Duration::from_secs(30)));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(
            !wake.sleep(Duration::from_millis(10)),
            "a wake is used once"
        );
    }
}

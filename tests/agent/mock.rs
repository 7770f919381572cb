//! A scripted model server on a loopback port: answers each request with the next reply of a
//! fixture (JSON Lines under `fixtures/llm/`) and records every request it received.
//!
//! Hand-written on std's `TcpListener` rather than a mocking crate because the tests need
//! what those make awkward: server-sent events written frame by frame, streams cut off
//! mid-answer, and answers delayed past the client's timeout.

#![allow(dead_code)]

use crate::support::{HttpRequest, read_request};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running mock server; it stops answering when dropped (its thread ends with the process).
pub struct MockServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    remaining: Arc<Mutex<std::collections::VecDeque<Value>>>,
    /// Requests being answered now, and the most at once.
    in_flight: Arc<Mutex<(usize, usize)>>,
}

/// Whether request bodies are kept (benchmarks turn it off to measure the client, not us).
static RECORD_BODIES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Stops keeping request bodies in this process (their paths and headers are still kept).
pub fn forget_bodies() {
    RECORD_BODIES.store(false, std::sync::atomic::Ordering::SeqCst);
}

impl MockServer {
    /// Starts a server answering with the replies in `fixtures/llm/<name>.jsonl`, in order.
    pub fn from_fixture(name: &str) -> MockServer {
        MockServer::start(fixture_replies(name))
    }

    /// Serves fixture `name`, then the model reviewer's approval: for runs whose reviewer role
    /// resolves to the same profile as the worker.
    pub fn from_fixture_reviewed(name: &str) -> MockServer {
        let mut replies = fixture_replies(name);
        replies.push(approval());
        MockServer::start(replies)
    }

    /// Starts a server answering with `replies`, in order.
    pub fn start(replies: Vec<Value>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let remaining = Arc::new(Mutex::new(
            replies
                .into_iter()
                .collect::<std::collections::VecDeque<_>>(),
        ));
        let in_flight = Arc::new(Mutex::new((0, 0)));
        let (req, rem, fly) = (requests.clone(), remaining.clone(), in_flight.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (req, rem, fly) = (req.clone(), rem.clone(), fly.clone());
                std::thread::spawn(move || serve(stream, &req, &rem, &fly));
            }
        });
        MockServer {
            url,
            requests,
            remaining,
            in_flight,
        }
    }

    /// Returns the requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Returns the most requests that were being answered at the same time.
    pub fn peak_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    /// Returns how many scripted replies were not used.
    pub fn unused(&self) -> usize {
        self.remaining.lock().unwrap().len()
    }
}

fn serve(
    stream: TcpStream,
    requests: &Mutex<Vec<Recorded>>,
    remaining: &Mutex<std::collections::VecDeque<Value>>,
    in_flight: &Mutex<(usize, usize)>,
) {
    let Some(HttpRequest {
        path,
        headers,
        body,
        ..
    }) = read_request(&stream)
    else {
        return;
    };
    requests.lock().unwrap().push(Recorded {
        path,
        headers,
        body: if RECORD_BODIES.load(std::sync::atomic::Ordering::SeqCst) {
            serde_json::from_slice(&body).unwrap_or(Value::Null)
        } else {
            Value::Null
        },
    });
    let reply = remaining.lock().unwrap().pop_front().unwrap_or_else(|| {
        serde_json::json!({"status": 500, "json": {"error": {"message": "mock: no scripted reply left"}}})
    });
    // A request counts as in flight while its answer is delayed: a client that waits for one
    // answer before sending the next request can never overlap with it there.
    {
        let mut f = in_flight.lock().unwrap();
        f.0 += 1;
        f.1 = f.1.max(f.0);
    }
    if let Some(ms) = reply["delay_ms"].as_u64() {
        std::thread::sleep(Duration::from_millis(ms));
    }
    in_flight.lock().unwrap().0 -= 1;
    let _ = respond(stream, &reply);
}

fn respond(mut stream: TcpStream, reply: &Value) -> std::io::Result<()> {
    let status = reply["status"].as_u64().unwrap_or(200);
    let mut head = format!("HTTP/1.1 {status} Scripted\r\nconnection: close\r\n");
    for (k, v) in reply["headers"].as_object().into_iter().flatten() {
        head.push_str(&format!("{k}: {}\r\n", v.as_str().unwrap_or_default()));
    }
    if let Some(items) = reply["sse"].as_array() {
        head.push_str("content-type: text/event-stream\r\n\r\n");
        stream.write_all(head.as_bytes())?;
        let cut = reply["cut_after"]
            .as_u64()
            .map(|n| n as usize)
            .unwrap_or(usize::MAX);
        // `pause_after` frames in, the answer pauses for `pause_ms`: a stall after output began.
        let pause_after = reply["pause_after"].as_u64().map(|n| n as usize);
        for (i, item) in items.iter().take(cut).enumerate() {
            if pause_after == Some(i) {
                std::thread::sleep(Duration::from_millis(
                    reply["pause_ms"].as_u64().unwrap_or(0),
                ));
            }
            let frame = match item {
                Value::String(s) => format!("data: {s}\n\n"),
                Value::Object(o) if o.contains_key("event") => format!(
                    "event: {}\ndata: {}\n\n",
                    o["event"].as_str().unwrap_or_default(),
                    o["data"]
                ),
                other => format!("data: {other}\n\n"),
            };
            stream.write_all(frame.as_bytes())?;
            stream.flush()?;
        }
        return Ok(());
    }
    let body = reply["json"].to_string();
    head.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())
}

/// One request a [`ThrottledServer`] received: when, how many were in flight with it, and
/// whether it was refused with 429.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub at: std::time::Instant,
    pub in_flight: usize,
    pub refused: bool,
}

/// A model server with a provider's concurrency cap: a request arriving while `max` others
/// are being answered gets HTTP 429 (`retry-after: 0`); the others get a short answer after
/// `delay_ms`. Only the first `throttled` requests are subject to the cap, so a test can
/// watch a client recover once the provider relents.
pub struct ThrottledServer {
    pub url: String,
    arrivals: Arc<Mutex<Vec<Arrival>>>,
}

impl ThrottledServer {
    pub fn start(max: usize, delay_ms: u64, throttled: usize) -> ThrottledServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(Mutex::new(0usize));
        let log = arrivals.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, fly) = (log.clone(), in_flight.clone());
                std::thread::spawn(move || {
                    throttled_serve(stream, max, delay_ms, throttled, &log, &fly)
                });
            }
        });
        ThrottledServer { url, arrivals }
    }

    /// Returns every arrival so far, in order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.lock().unwrap().clone()
    }
}

fn throttled_serve(
    stream: TcpStream,
    max: usize,
    delay_ms: u64,
    throttled: usize,
    log: &Mutex<Vec<Arrival>>,
    in_flight: &Mutex<usize>,
) {
    if read_request(&stream).is_none() {
        return;
    }
    let refused = {
        let mut fly = in_flight.lock().unwrap();
        let mut log = log.lock().unwrap();
        *fly += 1;
        let refused = log.len() < throttled && *fly > max;
        log.push(Arrival {
            at: std::time::Instant::now(),
            in_flight: *fly,
            refused,
        });
        if refused {
            *fly -= 1;
        }
        refused
    };
    let reply = if refused {
        serde_json::json!({"status": 429, "headers": {"retry-after": "0"},
            "json": {"error": {"message": "too many concurrent requests", "type": "rate_limit_error"}}})
    } else {
        std::thread::sleep(Duration::from_millis(delay_ms));
        *in_flight.lock().unwrap() -= 1;
        serde_json::json!({"json": {"id": "x", "model": "mock-model", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}})
    };
    let _ = respond(stream, &reply);
}

/// Returns the replies of `fixtures/llm/<name>.jsonl`, one per line (`//` lines are comments).
pub fn fixture_replies(name: &str) -> Vec<serde_json::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/llm")
        .join(format!("{name}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("//"))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

/// A model reviewer's reply that approves with no findings.
pub fn approval() -> serde_json::Value {
    let answer = serde_json::json!({"verdict": "approve", "findings": []}).to_string();
    serde_json::json!({"json": {"model": "mock-model", "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "r1", "type": "function", "function": {"name": "complete",
            "arguments": serde_json::json!({"summary": answer}).to_string()}}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}})
}

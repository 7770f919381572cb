//! The web view's HTTP/1.1 server: one request per connection, at most
//! [`MAX_CONNECTIONS`] connections served at once, each by its own thread.
//!
//! A server for one person's browser on loopback needs little, but it must not be the
//! process's weak point: a flood of connections (any local process, a worker's code
//! included, can open them) is answered `503` beyond the cap instead of growing a thread
//! each, and a connection that sends nothing, or too slowly, is dropped after
//! [`READ_TIMEOUT`]. Request heads are parsed by `httparse`; bodies need a `Content-Length`
//! (the page sends nothing else) of at most [`super::MAX_BODY`] bytes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connections served at once; beyond it a connection gets `503` and is closed.
pub(crate) const MAX_CONNECTIONS: usize = 32;
/// How long a connection may take to send its whole request (a client trickling a byte at a
/// time would otherwise hold its connection for as long as it likes).
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a reply may take to leave (a page that stopped reading its live stream).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// The most headers a request may carry.
const MAX_HEADERS: usize = 64;

/// One request, with the connection to answer it on.
pub(crate) struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target as sent: path and query.
    pub url: String,
    headers: Vec<(String, String)>,
    /// The body (empty for a GET).
    pub body: Vec<u8>,
    stream: TcpStream,
}

impl Request {
    /// Returns the value of the first header called `name` (case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Returns the values of every header called `name` (case-insensitively), in order.
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Sends `reply` and closes the connection.
    pub fn respond(mut self, reply: Reply) {
        let _ = write_reply(&mut self.stream, &reply);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// Sends `head`'s status and headers without a length and returns the connection, for a
    /// body streamed until the page goes (server-sent events).
    pub fn into_stream(mut self, head: &Reply) -> Option<TcpStream> {
        let mut text = status_line(head.status);
        for (k, v) in &head.headers {
            text.push_str(&format!("{k}: {v}\r\n"));
        }
        text.push_str("Connection: close\r\n\r\n");
        self.stream.write_all(text.as_bytes()).ok()?;
        self.stream.flush().ok()?;
        Some(self.stream)
    }
}

/// A whole reply: status, headers and body.
pub(crate) struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// Header names and values, in order (`Content-Length` and `Connection` are added when
    /// it is sent).
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

impl Reply {
    /// Returns a reply with `status` and `body` and no headers yet.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// Returns the reply with the header `name: value` added; a value holding a line break is
    /// left out (it would start a header of its own).
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if !value.contains(['\r', '\n']) {
            self.headers.push((name.to_string(), value.to_string()));
        }
        self
    }
}

fn status_line(status: u16) -> String {
    let reason = match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "",
    };
    format!("HTTP/1.1 {status} {reason}\r\n")
}

fn write_reply(stream: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let mut text = status_line(reply.status);
    for (k, v) in &reply.headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    stream.write_all(text.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()
}

/// Counts a connection being served for as long as it lives.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Accepts connections on `listener` in a background thread and hands each request to
/// `handle` on the connection's own thread, at most [`MAX_CONNECTIONS`] at once.
pub(crate) fn serve(
    listener: TcpListener,
    handle: Arc<dyn Fn(Request) + Send + Sync>,
) -> std::io::Result<()> {
    let busy = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("web".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    busy.fetch_sub(1, Ordering::SeqCst);
                    refuse_busy(stream);
                    continue;
                }
                let slot = Slot(busy.clone());
                let handle = handle.clone();
                let spawned = std::thread::Builder::new()
                    .name("web-request".into())
                    .spawn(move || {
                        let _slot = slot;
                        if let Some(request) = read_request(stream) {
                            handle(request);
                        }
                    });
                // A thread that cannot start gives its slot back on drop.
                drop(spawned);
            }
        })?;
    Ok(())
}

/// Answers a connection beyond the cap from the accepting thread, without waiting on it.
fn refuse_busy(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(true);
    let reply = Reply::new(503, "the web view is busy: too many connections at once\n")
        .with_header("Content-Type", "text/plain; charset=utf-8");
    let _ = write_reply(&mut stream, &reply);
}

/// Reads one request from `stream`; a malformed one is answered here and gives `None`.
fn read_request(mut stream: TcpStream) -> Option<Request> {
    let deadline = Instant::now() + READ_TIMEOUT;
    stream.set_write_timeout(Some(WRITE_TIMEOUT)).ok()?;
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    let (head_len, method, url, headers) = loop {
        let n = read_before(&mut stream, &mut chunk, deadline)?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Request::new(&mut slots);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let headers = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        let value = String::from_utf8_lossy(h.value).into_owned();
                        (h.name.to_string(), value)
                    })
                    .collect::<Vec<_>>();
                let method = parsed.method.unwrap_or("").to_string();
                let url = parsed.path.unwrap_or("").to_string();
                break (len, method, url, headers);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => continue,
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                return bad(stream, 431, "the request's head is too large");
            }
            Err(e) => return bad(stream, 400, &format!("malformed request: {e}")),
        }
    };
    let mut request = Request {
        method,
        url,
        headers,
        body: Vec::new(),
        stream,
    };
    if request.header("Transfer-Encoding").is_some() {
        return bad(request.stream, 501, "send the body with a Content-Length");
    }
    let lengths: Vec<&str> = request.headers_named("Content-Length").collect();
    let length = match lengths.as_slice() {
        [] => 0,
        [one] => match one.trim().parse::<u64>() {
            Ok(n) => n,
            Err(_) => return bad(request.stream, 400, "the Content-Length is not a number"),
        },
        _ => {
            return bad(
                request.stream,
                400,
                "the request has more than one Content-Length",
            );
        }
    };
    if length > super::MAX_BODY {
        return bad(request.stream, 413, "the request body is too large");
    }
    let mut body = buf.split_off(head_len);
    body.truncate(length as usize);
    while body.len() < length as usize {
        let want = (length as usize - body.len()).min(chunk.len());
        let n = read_before(&mut request.stream, &mut chunk[..want], deadline)?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    request.body = body;
    Some(request)
}

/// Reads what `stream` has into `buf`, waiting no later than `deadline`; `None` past it.
fn read_before(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Option<usize> {
    let left = deadline.checked_duration_since(Instant::now())?;
    stream
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .ok()?;
    stream.read(buf).ok()
}

fn bad(mut stream: TcpStream, status: u16, message: &str) -> Option<Request> {
    let reply = Reply::new(status, format!("{message}\n"))
        .with_header("Content-Type", "text/plain; charset=utf-8");
    let _ = write_reply(&mut stream, &reply);
    None
}

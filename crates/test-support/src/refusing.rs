//! A model server that refuses every request, for runs that fail on a model's error.

use std::net::TcpListener;

/// What the refusing model server says to every request.
pub const REFUSAL: &str = "model scripted-7b is not loaded on this server";

/// Starts a model server that refuses every request with HTTP 400 (a failure no retry
/// mends); returns its base URL.
pub fn refusing_model() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                use std::io::Write;
                if super::read_request(&stream).is_none() {
                    return;
                }
                let body = serde_json::json!({"error": {"message": REFUSAL, "type": "invalid_request_error"}})
                    .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    url
}

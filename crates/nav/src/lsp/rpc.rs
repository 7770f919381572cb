//! JSON-RPC 2.0 messages framed as the Language Server Protocol frames them: a
//! `Content-Length` header, an empty line, then that many bytes of JSON.

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};

/// The largest message accepted (a whole file's text in `didOpen` fits many times over).
const MAX_MESSAGE: usize = 256 << 20;

/// Reads the next message; `None` at the end of the input. A body that is not JSON is an
/// error (see [`read_body`] to answer it and read on).
pub fn read_message(input: &mut impl BufRead) -> io::Result<Option<Value>> {
    match read_body(input)? {
        Some(body) => serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        None => Ok(None),
    }
}

/// Reads the next message's body, whatever it holds; `None` at the end of the input. The
/// whole body is consumed, so a body that is not JSON leaves the stream at the next message.
pub fn read_body(input: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue; // stray blank lines between messages
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {length} bytes is over the limit of {MAX_MESSAGE}"),
        ));
    }
    let mut body = vec![0u8; length];
    input.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Writes one message with its header and flushes.
pub fn write_message(output: &mut impl Write, message: &Value) -> io::Result<()> {
    let body = serde_json::to_vec(message).map_err(io::Error::other)?;
    write!(output, "Content-Length: {}\r\n\r\n", body.len())?;
    output.write_all(&body)?;
    output.flush()
}

/// A request message.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification message.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// A successful response.
pub fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// JSON-RPC error codes the server answers with.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    pub const INVALID_REQUEST: i64 = -32600;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trips_and_skips_other_headers() {
        let mut buf = Vec::new();
        write_message(&mut buf, &request(1, "initialize", json!({"a": "é"}))).unwrap();
        let mut framed = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n".to_vec();
        framed.extend_from_slice(&buf);
        framed.extend_from_slice(&buf);
        let mut input = io::Cursor::new(framed);
        let first = read_message(&mut input).unwrap().unwrap();
        assert_eq!(first["params"]["a"], "é");
        assert_eq!(first["method"], "initialize");
        assert!(read_message(&mut input).unwrap().is_some());
        assert!(read_message(&mut input).unwrap().is_none());
    }

    #[test]
    fn a_cut_message_is_an_error() {
        let mut input = io::Cursor::new(b"Content-Length: 40\r\n\r\n{\"jsonrpc\"".to_vec());
        assert!(read_message(&mut input).is_err());
    }
}

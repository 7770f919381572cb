//! A scripted model on a loopback port, speaking the OpenAI-compatible chat completions wire
//! format, for the offline demo: no key, no network.
//!
//! Each script names the texts a conversation's system and first user message must contain
//! and the replies for its turns; the turn is the number of assistant messages in the request.
//! Choosing the reply from the request alone (not from arrival order) keeps the answers right
//! when packets run in parallel and when a resumed run asks again.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};

/// One tool call of a scripted reply.
#[derive(Debug, Clone, Deserialize)]
pub struct ScriptedCall {
    pub name: String,
    pub args: Value,
}

/// One scripted reply: text and/or tool calls.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ScriptedReply {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub calls: Vec<ScriptedCall>,
    /// How long the server waits before answering, to simulate a model's latency.
    #[serde(default)]
    pub delay_ms: u64,
}

/// One conversation: the texts that identify it and its replies, turn by turn.
#[derive(Debug, Clone, Deserialize)]
pub struct Script {
    pub name: String,
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    /// The model a request must ask for to match, when set (any model when unset).
    #[serde(default)]
    pub model: Option<String>,
    pub replies: Vec<ScriptedReply>,
}

/// Why the scripts could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("the demo's model script is not valid: {0}")]
    Parse(#[from] serde_json::Error),
    #[error("cannot listen on a loopback port: {0}")]
    Bind(std::io::Error),
}

/// Parses scripts from JSON (an array of [`Script`]).
pub fn parse_scripts(text: &str) -> Result<Vec<Script>, ScriptError> {
    Ok(serde_json::from_str(text)?)
}

/// A running scripted server; it stops accepting when dropped.
pub struct MockModel {
    /// The base URL to configure, e.g. `http://127.0.0.1:4242/v1`.
    pub url: String,
    requests: Arc<AtomicU64>,
    /// Every request body received, in order of arrival, unless started unrecorded.
    bodies: Arc<std::sync::Mutex<Vec<Value>>>,
    closed: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl MockModel {
    /// Starts serving `scripts` on a free loopback port, keeping every request body for
    /// [`MockModel::received`].
    pub fn start(scripts: Vec<Script>) -> Result<MockModel, ScriptError> {
        Self::start_with(scripts, true)
    }

    /// Starts serving `scripts` like [`MockModel::start`] without keeping the request bodies:
    /// a benchmark's thousands of requests would otherwise grow the process that also drives
    /// the run, and every process it starts would copy the larger memory map.
    pub fn start_unrecorded(scripts: Vec<Script>) -> Result<MockModel, ScriptError> {
        Self::start_with(scripts, false)
    }

    fn start_with(scripts: Vec<Script>, record: bool) -> Result<MockModel, ScriptError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(ScriptError::Bind)?;
        let addr = listener.local_addr().map_err(ScriptError::Bind)?;
        let requests = Arc::new(AtomicU64::new(0));
        let closed = Arc::new(AtomicBool::new(false));
        let scripts = Arc::new(scripts);
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (count, stop, kept) = (requests.clone(), closed.clone(), bodies.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (scripts, kept) = (scripts.clone(), kept.clone());
                count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = serve(stream, &scripts, record.then_some(&*kept));
                });
            }
        });
        Ok(MockModel {
            url: format!("http://{addr}/v1"),
            requests,
            bodies,
            closed,
            addr,
        })
    }

    /// Returns how many requests the server has received.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Returns the bodies of the chat requests received so far, in order of arrival, for a
    /// test to see what a model was sent (none when started unrecorded).
    pub fn received(&self) -> Vec<Value> {
        self.bodies.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Returns the reply to a chat completions request body, or an error message.
pub fn answer(scripts: &[Script], body: &Value) -> Result<Value, String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let text_of = |role: &str| -> String {
        messages
            .iter()
            .find(|m| m["role"] == role)
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    };
    let head = format!("{}\n{}", text_of("system"), text_of("user"));
    let turn = messages.iter().filter(|m| m["role"] == "assistant").count();
    let script = scripts
        .iter()
        .find(|s| {
            s.matches.iter().all(|m| head.contains(m.as_str()))
                && s.model.as_deref().is_none_or(|m| body["model"] == m)
        })
        .ok_or_else(|| {
            format!(
                "no script matches this conversation: {}",
                head.chars().take(200).collect::<String>()
            )
        })?;
    let reply = script
        .replies
        .get(turn)
        .ok_or_else(|| format!("script `{}` has no reply for turn {turn}", script.name))?;
    if reply.delay_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(reply.delay_ms));
    }
    let calls: Vec<Value> = reply
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": format!("{}-{turn}-{i}", script.name), "type": "function",
                   "function": {"name": c.name, "arguments": c.args.to_string()}})
        })
        .collect();
    let prompt_tokens = body.to_string().len().div_ceil(4);
    let completion_tokens =
        (reply.text.len() + calls.iter().map(|c| c.to_string().len()).sum::<usize>()).div_ceil(4);
    let mut message = json!({"role": "assistant", "content": reply.text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Ok(json!({
        "id": format!("{}-{turn}", script.name),
        // Like a provider, it answers with the model asked for.
        "model": body["model"].as_str().filter(|m| !m.is_empty()).unwrap_or("scripted"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": if reply.calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    }))
}

fn serve(
    stream: TcpStream,
    scripts: &[Script],
    kept: Option<&std::sync::Mutex<Vec<Value>>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(());
    }
    let mut length = 0usize;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Some(Ok(mut kept)) = kept.map(|k| k.lock()) {
        kept.push(request.clone());
    }
    let (status, reply) = match answer(scripts, &request) {
        Ok(v) => (200, v),
        Err(message) => (
            400,
            json!({"error": {"message": message, "type": "invalid_request_error"}}),
        ),
    };
    let text = reply.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} Scripted\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    )?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scripts() -> Vec<Script> {
        parse_scripts(
            r##"[{"name": "fix", "match": ["# Coder", "Resolve"], "replies": [{"text": "fixed"}]},
                {"name": "code", "match": ["# Coder"], "replies": [
                    {"calls": [{"name": "write_file", "args": {"path": "a", "content": "x"}}]},
                    {"text": "done"}]}]"##,
        )
        .unwrap()
    }

    #[test]
    fn replies_follow_the_matching_script_and_the_turn() {
        let s = scripts();
        let req = |user: &str, assistants: usize| {
            let mut m = vec![
                json!({"role": "system", "content": "# Coder"}),
                json!({"role": "user", "content": user}),
            ];
            for _ in 0..assistants {
                m.push(json!({"role": "assistant", "content": ""}));
            }
            json!({"messages": m})
        };
        let first = answer(&s, &req("task", 0)).unwrap();
        let call = &first["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "write_file");
        assert_eq!(first["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            answer(&s, &req("task", 1)).unwrap()["choices"][0]["message"]["content"],
            "done"
        );
        assert_eq!(
            answer(&s, &req("Resolve it", 0)).unwrap()["choices"][0]["message"]["content"],
            "fixed"
        );
        assert!(answer(&s, &req("task", 2)).unwrap_err().contains("turn 2"));
        let other = json!({"messages": [{"role": "system", "content": "# Planner"}]});
        assert!(answer(&s, &other).unwrap_err().contains("no script"));
    }
}

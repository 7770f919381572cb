//! The Anthropic Messages wire format, streamed: `tool_use` blocks out, `tool_result` blocks
//! back, system prompt as a top-level field.

use serde_json::{Value, json};

use super::http::{AuthStyle, Stream, Transport};
use super::profile::{ApiKey, Profile};
use super::sse::SseReader;
use super::types::{ChatRequest, ChatResponse, Delta, Message, StopReason, ToolCall, Usage};
use super::{ChatModel, LlmError};

/// The API version header every request carries.
const API_VERSION: &str = "2023-06-01";

/// A client of `POST {base_url}/messages`.
#[derive(Clone)]
pub struct AnthropicClient {
    http: Transport,
}

impl AnthropicClient {
    /// Returns a client for `profile`, presenting `key` as `x-api-key` when there is one.
    pub fn new(profile: Profile, key: Option<ApiKey>) -> AnthropicClient {
        AnthropicClient {
            http: Transport::new(profile, key, AuthStyle::XApiKey),
        }
    }

    /// Returns the JSON body for `req`.
    ///
    /// Consecutive messages of one side are merged into one message of content blocks, as the
    /// API requires strict user/assistant alternation (tool results are user content).
    pub fn body(&self, req: &ChatRequest) -> Value {
        let p = &self.http.profile;
        let mut system = Vec::new();
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        let mut push = |role: &'static str, block: Value| match messages.last_mut() {
            Some((r, blocks)) if *r == role => blocks.push(block),
            _ => messages.push((role, vec![block])),
        };
        for m in &req.messages {
            match m {
                Message::System { content } => system.push(content.as_str()),
                Message::User { content } => push("user", json!({"type": "text", "text": content})),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    if !content.is_empty() {
                        push("assistant", json!({"type": "text", "text": content}));
                    }
                    for c in tool_calls {
                        // Malformed arguments were answered with an error; the replayed call
                        // must still be an object.
                        let input = c.parse_arguments().unwrap_or_else(|_| json!({}));
                        push(
                            "assistant",
                            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                        );
                    }
                }
                Message::Tool {
                    call_id,
                    content,
                    is_error,
                    ..
                } => push(
                    "user",
                    json!({"type": "tool_result", "tool_use_id": call_id,
                           "content": content, "is_error": is_error}),
                ),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = json!({
            "model": p.model,
            "max_tokens": req.max_tokens.unwrap_or(p.max_tokens),
            "messages": messages,
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if let Some(t) = req.temperature.or(p.temperature) {
            body["temperature"] = json!(t);
        }
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
        }
        body
    }
}

/// A content block being assembled.
enum Block {
    Text,
    Tool {
        call: ToolCall,
        /// `input` from `content_block_start`, used when no fragments follow (optional: local
        /// servers omit it).
        initial: Option<String>,
    },
    Other,
}

/// What the stream has said so far: text, content blocks in progress, finished tool calls,
/// usage, model and stop reason.
struct Streamed {
    text: String,
    blocks: Vec<Block>,
    calls: Vec<ToolCall>,
    usage: Usage,
    model: String,
    stop: StopReason,
}

/// Returns the error for an answer the caller stopped by refusing a delta.
fn cancelled(http: &Transport) -> LlmError {
    LlmError::Cancelled {
        model: http.profile.label(),
    }
}

impl Streamed {
    /// Returns the state before the first event: nothing said, an ordinary end.
    fn new() -> Streamed {
        Streamed {
            text: String::new(),
            blocks: Vec::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            model: String::new(),
            stop: StopReason::End,
        }
    }

    /// Takes the model and the first usage from `message_start`.
    fn message_start(&mut self, m: &Value) {
        self.model = m["model"].as_str().unwrap_or_default().to_string();
        self.usage.input_tokens = m["usage"]["input_tokens"].as_u64().unwrap_or(0);
        self.usage.output_tokens = m["usage"]["output_tokens"].as_u64().unwrap_or(0);
    }

    /// Opens content block `index` from `content_block_start` (`b` is its `content_block`).
    fn block_start(
        &mut self,
        http: &Transport,
        index: usize,
        b: &Value,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<(), LlmError> {
        let block = match b["type"].as_str() {
            Some("text") => {
                if let Some(t) = b["text"].as_str().filter(|t| !t.is_empty()) {
                    self.text.push_str(t);
                    if !on_delta(Delta::Text(t)) {
                        return Err(cancelled(http));
                    }
                }
                Block::Text
            }
            Some("tool_use") => {
                let name = b["name"].as_str().unwrap_or_default();
                if !on_delta(Delta::ToolCallStarted { name }) {
                    return Err(cancelled(http));
                }
                Block::Tool {
                    call: ToolCall {
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: name.to_string(),
                        arguments: String::new(),
                    },
                    initial: b
                        .get("input")
                        .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        .map(Value::to_string),
                }
            }
            _ => Block::Other,
        };
        while self.blocks.len() < index {
            self.blocks.push(Block::Other);
        }
        if self.blocks.len() == index {
            self.blocks.push(block);
        } else {
            self.blocks[index] = block;
        }
        Ok(())
    }

    /// Adds a `content_block_delta` (`d` is its `delta`) to block `index`.
    fn block_delta(
        &mut self,
        http: &Transport,
        index: usize,
        d: &Value,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<(), LlmError> {
        match (d["type"].as_str(), self.blocks.get_mut(index)) {
            (Some("text_delta"), _) => {
                let t = d["text"].as_str().unwrap_or_default();
                self.text.push_str(t);
                if !on_delta(Delta::Text(t)) {
                    return Err(cancelled(http));
                }
            }
            (Some("input_json_delta"), Some(Block::Tool { call, .. })) => {
                let f = d["partial_json"].as_str().unwrap_or_default();
                call.arguments.push_str(f);
                if !on_delta(Delta::ToolArguments(f)) {
                    return Err(cancelled(http));
                }
            }
            (Some("input_json_delta"), _) => {
                return Err(http.protocol(format!(
                    "input_json_delta for block {index}, which is not a tool_use block"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Closes block `index`; a finished tool block becomes a call.
    fn block_stop(&mut self, index: usize) {
        if let Some(slot) = self.blocks.get_mut(index)
            && let Block::Tool { call, initial } = std::mem::replace(slot, Block::Other)
        {
            let mut call = call;
            if call.arguments.trim().is_empty() {
                call.arguments = initial.unwrap_or_else(|| "{}".to_string());
            }
            self.calls.push(call);
        }
    }

    /// Takes the stop reason and final usage from `message_delta`.
    fn message_delta(&mut self, v: &Value) {
        if let Some(r) = v["delta"]["stop_reason"].as_str() {
            self.stop = stop_reason(r);
        }
        if let Some(o) = v["usage"]["output_tokens"].as_u64() {
            self.usage.output_tokens = o;
        }
        if let Some(i) = v["usage"]["input_tokens"].as_u64().filter(|i| *i > 0) {
            self.usage.input_tokens = i;
        }
    }

    /// Returns the whole answer.
    fn finish(self) -> ChatResponse {
        ChatResponse::assembled(self.text, self.calls, self.stop, self.usage, self.model)
    }
}

/// Returns the classified error of an in-stream `error` event (`e` is its `error`).
fn stream_error(http: &Transport, e: &Value) -> LlmError {
    let message = http.scrub(e["message"].as_str().unwrap_or_default());
    let model = http.profile.label();
    match e["type"].as_str() {
        Some("overloaded_error") | Some("api_error") => LlmError::Unavailable {
            model,
            status: 529,
            message,
        },
        Some("rate_limit_error") => LlmError::RateLimited {
            model,
            retry_after: None,
        },
        _ => LlmError::BrokenStream { model, message },
    }
}

impl AnthropicClient {
    /// Sends `req` and reads its answer on the calling thread.
    fn stream(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let http = &self.http;
        let Stream { reader, is_sse } = http.post(
            "/messages",
            &[("anthropic-version", API_VERSION)],
            &self.body(req),
        )?;
        if !is_sse {
            return whole(http, reader, on_delta);
        }
        let mut sse = SseReader::new(reader);
        let mut streamed = Streamed::new();
        loop {
            let event = match sse.next_event() {
                Ok(Some(e)) => e,
                Ok(None) => return Err(http.truncated("`message_stop`")),
                Err(e) => return Err(http.read_error(&e)),
            };
            let v: Value = serde_json::from_str(&event.data).map_err(|e| {
                http.truncated(&format!(
                    "a complete event ({e}): {}",
                    orchestra_sys::redact::clip(&event.data, 200)
                ))
            })?;
            let kind = v
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(&event.event);
            let index = v.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            match kind {
                "message_start" => streamed.message_start(&v["message"]),
                "content_block_start" => {
                    streamed.block_start(http, index, &v["content_block"], on_delta)?;
                }
                "content_block_delta" => {
                    streamed.block_delta(http, index, &v["delta"], on_delta)?;
                }
                "content_block_stop" => streamed.block_stop(index),
                "message_delta" => streamed.message_delta(&v),
                "message_stop" => break,
                "error" => return Err(stream_error(http, &v["error"])),
                _ => {}
            }
        }
        Ok(streamed.finish())
    }
}

impl ChatModel for AnthropicClient {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        super::wait::call(
            self,
            AnthropicClient::stream,
            &self.http.profile,
            req,
            on_delta,
        )
    }

    fn label(&self) -> String {
        self.http.profile.label()
    }
}

fn stop_reason(r: &str) -> StopReason {
    match r {
        "end_turn" | "stop_sequence" => StopReason::End,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        _ => StopReason::Other,
    }
}

/// Parses a non-streamed answer (a server that ignored `stream: true`).
fn whole(
    http: &Transport,
    mut reader: impl std::io::Read,
    on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
) -> Result<ChatResponse, LlmError> {
    let mut body = String::new();
    reader
        .read_to_string(&mut body)
        .map_err(|e| http.read_error(&e))?;
    let v: Value = serde_json::from_str(&body)
        .map_err(|e| http.protocol(format!("the answer is not JSON ({e})")))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in v["content"].as_array().into_iter().flatten() {
        match b["type"].as_str() {
            Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => calls.push(ToolCall {
                id: b["id"].as_str().unwrap_or_default().to_string(),
                name: b["name"].as_str().unwrap_or_default().to_string(),
                arguments: b["input"].to_string(),
            }),
            _ => {}
        }
    }
    if !text.is_empty() && !on_delta(Delta::Text(&text)) {
        return Err(LlmError::Cancelled {
            model: http.profile.label(),
        });
    }
    Ok(ChatResponse {
        stop: if calls.is_empty() {
            stop_reason(v["stop_reason"].as_str().unwrap_or("end_turn"))
        } else {
            StopReason::ToolUse
        },
        text,
        tool_calls: calls,
        usage: Usage {
            input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
        },
        model: v["model"].as_str().unwrap_or_default().to_string(),
    })
}

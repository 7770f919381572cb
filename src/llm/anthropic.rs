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

impl ChatModel for AnthropicClient {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let http = &self.http;
        let cancelled = || LlmError::Cancelled {
            model: http.profile.label(),
        };
        let Stream { reader, is_sse } = http.post(
            "/messages",
            &[("anthropic-version", API_VERSION)],
            &self.body(req),
        )?;
        if !is_sse {
            return whole(http, reader, on_delta);
        }
        let mut sse = SseReader::new(reader);
        let mut text = String::new();
        let mut blocks: Vec<Block> = Vec::new();
        let mut calls = Vec::new();
        let mut usage = Usage::default();
        let mut model = String::new();
        let mut stop = StopReason::End;
        loop {
            let event = match sse.next_event() {
                Ok(Some(e)) => e,
                Ok(None) => return Err(http.truncated("`message_stop`")),
                Err(e) => return Err(http.read_error(&e)),
            };
            let v: Value = serde_json::from_str(&event.data).map_err(|e| {
                http.truncated(&format!(
                    "a complete event ({e}): {}",
                    crate::redact::clip(&event.data, 200)
                ))
            })?;
            let kind = v
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(&event.event);
            let index = v.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            match kind {
                "message_start" => {
                    let m = &v["message"];
                    model = m["model"].as_str().unwrap_or_default().to_string();
                    usage.input_tokens = m["usage"]["input_tokens"].as_u64().unwrap_or(0);
                    usage.output_tokens = m["usage"]["output_tokens"].as_u64().unwrap_or(0);
                }
                "content_block_start" => {
                    let b = &v["content_block"];
                    let block = match b["type"].as_str() {
                        Some("text") => {
                            if let Some(t) = b["text"].as_str().filter(|t| !t.is_empty()) {
                                text.push_str(t);
                                if !on_delta(Delta::Text(t)) {
                                    return Err(cancelled());
                                }
                            }
                            Block::Text
                        }
                        Some("tool_use") => {
                            let name = b["name"].as_str().unwrap_or_default();
                            if !on_delta(Delta::ToolCallStarted { name }) {
                                return Err(cancelled());
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
                    while blocks.len() < index {
                        blocks.push(Block::Other);
                    }
                    if blocks.len() == index {
                        blocks.push(block);
                    } else {
                        blocks[index] = block;
                    }
                }
                "content_block_delta" => {
                    let d = &v["delta"];
                    match (d["type"].as_str(), blocks.get_mut(index)) {
                        (Some("text_delta"), _) => {
                            let t = d["text"].as_str().unwrap_or_default();
                            text.push_str(t);
                            if !on_delta(Delta::Text(t)) {
                                return Err(cancelled());
                            }
                        }
                        (Some("input_json_delta"), Some(Block::Tool { call, .. })) => {
                            let f = d["partial_json"].as_str().unwrap_or_default();
                            call.arguments.push_str(f);
                            if !on_delta(Delta::ToolArguments(f)) {
                                return Err(cancelled());
                            }
                        }
                        (Some("input_json_delta"), _) => {
                            return Err(http.protocol(format!(
                                "input_json_delta for block {index}, which is not a tool_use block"
                            )));
                        }
                        _ => {}
                    }
                }
                "content_block_stop" => {
                    if let Some(slot) = blocks.get_mut(index)
                        && let Block::Tool { call, initial } = std::mem::replace(slot, Block::Other)
                    {
                        let mut call = call;
                        if call.arguments.trim().is_empty() {
                            call.arguments = initial.unwrap_or_else(|| "{}".to_string());
                        }
                        calls.push(call);
                    }
                }
                "message_delta" => {
                    if let Some(r) = v["delta"]["stop_reason"].as_str() {
                        stop = stop_reason(r);
                    }
                    if let Some(o) = v["usage"]["output_tokens"].as_u64() {
                        usage.output_tokens = o;
                    }
                    if let Some(i) = v["usage"]["input_tokens"].as_u64().filter(|i| *i > 0) {
                        usage.input_tokens = i;
                    }
                }
                "message_stop" => break,
                "error" => {
                    let e = &v["error"];
                    let message = http.scrub(e["message"].as_str().unwrap_or_default());
                    let model = http.profile.label();
                    return Err(match e["type"].as_str() {
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
                    });
                }
                _ => {}
            }
        }
        if !calls.is_empty() {
            stop = StopReason::ToolUse;
        }
        Ok(ChatResponse {
            text,
            tool_calls: calls,
            stop,
            usage,
            model,
        })
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

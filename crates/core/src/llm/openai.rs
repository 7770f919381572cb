//! The OpenAI-compatible chat completions wire format (OpenAI, Gemini's and Ollama's
//! compatible endpoints, OpenRouter, llama.cpp, vLLM), streamed.

use serde_json::{Value, json};

use super::http::{AuthStyle, Stream, Transport};
use super::profile::{ApiKey, Profile};
use super::sse::SseReader;
use super::types::{ChatRequest, ChatResponse, Delta, Message, StopReason, ToolCall, Usage};
use super::{ChatModel, LlmError};

/// A client of `POST {base_url}/chat/completions`.
#[derive(Clone)]
pub struct OpenAiClient {
    http: Transport,
}

impl OpenAiClient {
    /// Returns a client for `profile`, presenting `key` as a bearer token when there is one.
    pub fn new(profile: Profile, key: Option<ApiKey>) -> OpenAiClient {
        OpenAiClient {
            http: Transport::new(profile, key, AuthStyle::Bearer),
        }
    }

    /// Returns the JSON body for `req`.
    pub fn body(&self, req: &ChatRequest) -> Value {
        let p = &self.http.profile;
        let messages: Vec<Value> = req.messages.iter().map(message_json).collect();
        let mut body = json!({
            "model": p.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": req.max_tokens.unwrap_or(p.max_tokens),
        });
        if let Some(t) = req.temperature.or(p.temperature) {
            body["temperature"] = json!(t);
        }
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
        }
        body
    }
}

fn message_json(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut v = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": c.arguments}})
                    })
                    .collect();
            }
            v
        }
        Message::Tool {
            call_id,
            content,
            is_error,
            ..
        } => {
            let content = if *is_error {
                format!("error: {content}")
            } else {
                content.clone()
            };
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

/// Tool calls being assembled from streamed fragments, by their index.
#[derive(Default)]
struct Partial {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<String>,
    usage: Usage,
    model: String,
}

impl Partial {
    /// Folds one chunk (streamed or the whole non-streamed answer) into the answer so far.
    fn absorb(&mut self, chunk: &Value, on_delta: &mut dyn FnMut(Delta<'_>) -> bool) -> bool {
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            self.model = m.to_string();
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Usage {
                input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
            };
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return true;
        };
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(f.to_string());
        }
        // Streamed chunks carry `delta`, a whole answer carries `message`.
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
            return true;
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            if !on_delta(Delta::Text(text)) {
                return false;
            }
        }
        for (n, tc) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = tc.get("index").and_then(Value::as_u64).unwrap_or(n as u64) as usize;
            while self.calls.len() <= index {
                self.calls.push(ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let call = &mut self.calls[index];
            if let Some(id) = tc.get("id").and_then(Value::as_str)
                && !id.is_empty()
            {
                call.id = id.to_string();
            }
            let f = tc.get("function");
            if let Some(name) = f.and_then(|f| f.get("name")).and_then(Value::as_str)
                && !name.is_empty()
            {
                call.name.push_str(name);
                if !on_delta(Delta::ToolCallStarted { name }) {
                    return false;
                }
            }
            match f.and_then(|f| f.get("arguments")) {
                Some(Value::String(a)) if !a.is_empty() => {
                    call.arguments.push_str(a);
                    if !on_delta(Delta::ToolArguments(a)) {
                        return false;
                    }
                }
                // Some servers send arguments as an object instead of a JSON string.
                Some(v @ Value::Object(_)) => call.arguments.push_str(&v.to_string()),
                _ => {}
            }
        }
        true
    }

    fn finish(mut self) -> ChatResponse {
        for (n, c) in self.calls.iter_mut().enumerate() {
            if c.id.is_empty() {
                c.id = format!("call_{n}");
            }
        }
        self.calls.retain(|c| !c.name.is_empty());
        let stop = match self.finish.as_deref() {
            Some("stop") | None => StopReason::End,
            Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some(_) => StopReason::Other,
        };
        ChatResponse::assembled(self.text, self.calls, stop, self.usage, self.model)
    }
}

impl OpenAiClient {
    /// Sends `req` and reads its answer on the calling thread.
    fn stream(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let http = &self.http;
        let cancelled = || LlmError::Cancelled {
            model: http.profile.label(),
        };
        let Stream { reader, is_sse } = http.post("/chat/completions", &[], &self.body(req))?;
        let mut partial = Partial::default();
        if !is_sse {
            let mut text = String::new();
            let mut reader = reader;
            std::io::Read::read_to_string(&mut reader, &mut text)
                .map_err(|e| http.read_error(&e))?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| http.protocol(format!("the answer is not JSON ({e})")))?;
            if !partial.absorb(&v, on_delta) {
                return Err(cancelled());
            }
            if partial.finish.is_none() {
                return Err(http.protocol("the answer has no choices"));
            }
            return Ok(partial.finish());
        }
        let mut sse = SseReader::new(reader);
        loop {
            let event = match sse.next_event() {
                Ok(Some(e)) => e,
                Ok(None) => return Err(http.truncated("`data: [DONE]`")),
                Err(e) => return Err(http.read_error(&e)),
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                http.truncated(&format!(
                    "a complete chunk ({e}): {}",
                    orchestra_sys::redact::clip(data, 200)
                ))
            })?;
            if let Some(err) = chunk.get("error") {
                return Err(LlmError::BrokenStream {
                    model: http.profile.label(),
                    message: http.scrub(&super::http::error_message(
                        &json!({"error": err}).to_string(),
                    )),
                });
            }
            if !partial.absorb(&chunk, on_delta) {
                return Err(cancelled());
            }
        }
        Ok(partial.finish())
    }
}

impl ChatModel for OpenAiClient {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        super::wait::call(
            self,
            OpenAiClient::stream,
            &self.http.profile,
            req,
            on_delta,
        )
    }

    fn label(&self) -> String {
        self.http.profile.label()
    }
}

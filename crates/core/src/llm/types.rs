//! The provider-neutral request and response shapes both wire formats translate to and from.

use serde::{Deserialize, Serialize};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions; Anthropic sends them as the top-level `system` field.
    System { content: String },
    /// The task, a human's answer, or a nudge from the runtime.
    User { content: String },
    /// What the model said and which tools it called.
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answered to the call with the same id.
    Tool {
        call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    /// Returns a system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::System {
            content: content.into(),
        }
    }

    /// Returns a user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::User {
            content: content.into(),
        }
    }

    /// Returns the number of characters of text this message carries, a cheap size proxy.
    pub fn text_len(&self) -> usize {
        match self {
            Message::System { content } | Message::User { content } => content.len(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>()
            }
            Message::Tool { content, .. } => content.len(),
        }
    }
}

/// A tool the model may call: its name, what it does, and a JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// A JSON schema of type `object`.
    pub parameters: serde_json::Value,
}

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them: a JSON text that may be malformed. Kept raw so
    /// the conversation can be replayed exactly and a parse error can go back to the model.
    pub arguments: String,
}

impl ToolCall {
    /// Returns the parsed arguments, or a message the model can act on when they are not a
    /// JSON object.
    pub fn parse_arguments(&self) -> Result<serde_json::Value, String> {
        let text = if self.arguments.trim().is_empty() {
            "{}"
        } else {
            self.arguments.as_str()
        };
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) => Err(format!(
                "the arguments of `{}` must be a JSON object, got: {}",
                self.name,
                orchestra_sys::redact::clip(text, 200)
            )),
            Err(e) => Err(format!(
                "the arguments of `{}` are not valid JSON ({e}); got: {} — call the tool again with a JSON object matching its schema",
                self.name,
                orchestra_sys::redact::clip(text, 200)
            )),
        }
    }
}

/// One request to a chat model.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDef>,
    /// Overrides the profile's temperature.
    pub temperature: Option<f32>,
    /// Overrides the profile's output token limit.
    pub max_tokens: Option<u32>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    End,
    /// The model wants tool results.
    ToolUse,
    /// The output token limit cut the answer.
    MaxTokens,
    /// Anything else the provider reported (content filter, …).
    Other,
}

/// Tokens counted by the provider for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// The complete answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
    /// The model name the provider reported.
    pub model: String,
}

impl ChatResponse {
    /// Returns the answer assembled from a stream; any tool call makes it a tool-use stop,
    /// whatever stop reason the provider gave (some send `stop` with tool calls).
    pub fn assembled(
        text: String,
        tool_calls: Vec<ToolCall>,
        stop: StopReason,
        usage: Usage,
        model: String,
    ) -> ChatResponse {
        let stop = if tool_calls.is_empty() {
            stop
        } else {
            StopReason::ToolUse
        };
        ChatResponse {
            text,
            tool_calls,
            stop,
            usage,
            model,
        }
    }

    /// Returns the assistant message that records this answer in the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delta<'a> {
    /// Text as it arrives.
    Text(&'a str),
    /// The model started calling the tool `name`.
    ToolCallStarted { name: &'a str },
    /// A fragment of a tool call's arguments.
    ToolArguments(&'a str),
    /// Nothing streamed yet: the call is queued for a place under its profile's concurrency
    /// limit (sent periodically while it waits, so waiting is not taken for a stall).
    Queued,
    /// Nothing streamed yet: the request is sent and the server is working on it (sent every
    /// tenth of a second while it waits, so a caller can cancel a silent call at once).
    Waiting,
    /// The model server could not be reached; the same request is sent again after
    /// `retry_in` (sent once per wait, so a caller can say so).
    Unreachable { retry_in: std::time::Duration },
}

impl Delta<'_> {
    /// Returns true if and only if this piece is output of the model (text or a tool call),
    /// not a sign of waiting.
    pub fn is_output(&self) -> bool {
        matches!(
            self,
            Delta::Text(_) | Delta::ToolCallStarted { .. } | Delta::ToolArguments(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_pretty_empty_and_garbage() {
        let call = |a: &str| ToolCall {
            id: "1".into(),
            name: "read_file".into(),
            arguments: a.into(),
        };
        assert!(call("{\n  \"path\": \"a\"\n}").parse_arguments().unwrap()["path"] == "a");
        assert!(call("").parse_arguments().unwrap().is_object());
        let err = call("{\"path\": ").parse_arguments().unwrap_err();
        assert!(
            err.contains("not valid JSON") && err.contains("read_file"),
            "{err}"
        );
        let err = call("[1]").parse_arguments().unwrap_err();
        assert!(err.contains("JSON object"), "{err}");
    }
}

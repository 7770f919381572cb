//! The real LLM clients against the scripted mock server, in both wire formats.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use git_orchestra::llm::{
    self, ChatRequest, Delta, LlmError, Message, Profile, Provider, RetryEvent, RetryPolicy,
    StopReason, ToolDef,
};
use serde_json::json;

use crate::agent::mock::MockServer;

/// The fake key every test exports; it must never appear in an error, event or log.
pub const SECRET: &str = "sk-test-SECRET-0123456789";
pub const KEY_VAR: &str = "ORCHESTRA_TEST_API_KEY";

pub fn export_key() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once before any client reads it; std serialises environment access.
    ONCE.call_once(|| unsafe { std::env::set_var(KEY_VAR, SECRET) });
}

pub fn profile(server: &MockServer, provider: Provider) -> Profile {
    export_key();
    let mut p = Profile::new("test", provider, "mock-model", &server.url);
    p.api_key_env = Some(KEY_VAR.to_string());
    p.timeout = Duration::from_secs(5);
    p
}

fn read_file_tool() -> ToolDef {
    ToolDef {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_secs(2),
    }
}

fn no_deltas() -> impl FnMut(Delta<'_>) -> bool {
    |_| true
}

fn assert_no_secret(text: &str) {
    assert!(!text.contains(SECRET), "the API key leaked: {text}");
}

#[test]
fn openai_multi_turn_tool_use_streams_fragments_and_sends_results_back() {
    let server = MockServer::from_fixture("openai/tool_loop");
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let mut req = ChatRequest {
        messages: vec![
            Message::system("be brief"),
            Message::user("read the readme"),
        ],
        tools: vec![read_file_tool()],
        ..Default::default()
    };
    let mut fragments = Vec::new();
    let first = model
        .chat(&req, &mut |d| {
            if let Delta::ToolArguments(f) = d {
                fragments.push(f.to_string());
            }
            true
        })
        .unwrap();
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(fragments, ["{\"path\": ", "\"README.md\"}"]);
    let call = &first.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_a", "read_file")
    );
    assert_eq!(call.parse_arguments().unwrap()["path"], "README.md");
    assert_eq!(
        (first.usage.input_tokens, first.usage.output_tokens),
        (50, 12)
    );

    req.messages.push(first.to_message());
    req.messages.push(Message::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: "hello".into(),
        is_error: false,
    });
    let mut text = String::new();
    let second = model
        .chat(&req, &mut |d| {
            if let Delta::Text(t) = d {
                text.push_str(t);
            }
            true
        })
        .unwrap();
    assert_eq!(second.text, "The README says hello.");
    assert_eq!(text, second.text);
    assert_eq!(second.stop, StopReason::End);

    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let b0 = &sent[0].body;
    assert_eq!(b0["stream"], true);
    assert_eq!(b0["model"], "mock-model");
    assert_eq!(b0["tools"][0]["type"], "function");
    assert_eq!(b0["tools"][0]["function"]["name"], "read_file");
    assert_eq!(
        b0["tools"][0]["function"]["parameters"]["required"][0],
        "path"
    );
    let msgs = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "call_a");
    assert!(
        msgs[2]["tool_calls"][0]["function"]["arguments"].is_string(),
        "arguments go back as a JSON string"
    );
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "hello"})
    );
}

#[test]
fn a_rate_limit_is_waited_out_for_retry_after_and_a_5xx_is_retried() {
    let server = MockServer::from_fixture("openai/rate_limit_then_5xx");
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let mut events = Vec::new();
    let started = Instant::now();
    let (resp, used) = llm::chat_with_retry(
        &[model.as_ref()],
        &req,
        &fast_policy(),
        &AtomicBool::new(false),
        &mut no_deltas(),
        &mut |e| events.push(e.clone()),
    )
    .unwrap();
    assert_eq!((resp.text.as_str(), used), ("ok", 0));
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "retry-after was honoured"
    );
    assert_eq!(events.len(), 2, "{events:?}");
    match &events[0] {
        RetryEvent::Retrying { delay, error, .. } => {
            assert_eq!(*delay, Duration::from_millis(200));
            assert_eq!(error.kind(), "rate_limited");
        }
        other => panic!("{other:?}"),
    }
    match &events[1] {
        RetryEvent::Retrying { error, .. } => {
            assert!(
                matches!(error, LlmError::Unavailable { status: 500, .. }),
                "{error}"
            );
            assert!(error.to_string().contains("upstream exploded"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

/// Regression: llama.cpp answers HTTP 500 when it cannot parse the tool call the model
/// wrote, and that was reported as "service unavailable".
#[test]
fn a_500_about_an_unparsable_tool_call_blames_the_models_output_not_the_service() {
    let server = MockServer::from_fixture("openai/tool_call_parse_500");
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        tools: vec![read_file_tool()],
        ..Default::default()
    };
    for _ in 0..2 {
        let err = model.chat(&req, &mut no_deltas()).unwrap_err();
        assert!(
            matches!(err, LlmError::MalformedToolCall { status: 500, .. }),
            "{err:?}"
        );
        assert_eq!(err.kind(), "malformed_tool_call");
        let shown = err.to_string();
        assert!(!shown.contains("unavailable"), "{shown}");
        assert!(
            shown.contains("the model wrote a tool call the server could not parse"),
            "{shown}"
        );
        assert!(shown.contains("Failed to parse"), "{shown}");
        assert_no_secret(&shown);
        // Sampled again, the model may write the call right: it is retried.
        assert!(err.is_transient());
    }
    let ok = model.chat(&req, &mut no_deltas()).unwrap();
    assert_eq!(ok.text, "recovered");
}

#[test]
fn a_truncated_stream_is_a_broken_stream_and_is_retried() {
    let server = MockServer::from_fixture("openai/truncated_then_ok");
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let err = model.chat(&req, &mut no_deltas()).unwrap_err();
    assert!(matches!(err, LlmError::BrokenStream { .. }), "{err}");
    assert!(err.is_transient());
    let ok = model.chat(&req, &mut no_deltas()).unwrap();
    assert_eq!(ok.text, "recovered");
}

#[test]
fn a_server_silent_past_the_time_to_first_token_fails_naming_that_limit() {
    let server = MockServer::from_fixture("openai/slow_then_ok");
    let mut p = profile(&server, Provider::OpenaiCompatible);
    p.first_token_timeout = Duration::from_millis(700);
    p.first_token_per_1k = Duration::ZERO;
    let model = llm::connect(&p).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let started = Instant::now();
    let err = model.chat(&req, &mut no_deltas()).unwrap_err();
    assert!(matches!(err, LlmError::FirstTokenTimeout { .. }), "{err}");
    assert!(
        err.to_string().contains("first_token_timeout_secs"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn auth_failures_name_the_variable_and_never_the_key() {
    let server = MockServer::from_fixture("openai/unauthorized");
    let p = profile(&server, Provider::Openai);
    let model = llm::connect(&p).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let mut events = Vec::new();
    let err = llm::chat_with_retry(
        &[model.as_ref()],
        &req,
        &fast_policy(),
        &AtomicBool::new(false),
        &mut no_deltas(),
        &mut |e| events.push(format!("{e:?}")),
    )
    .unwrap_err();
    assert!(matches!(err, LlmError::Auth { .. }), "{err}");
    assert!(events.is_empty(), "auth errors are not retried: {events:?}");
    let text = format!("{err} {err:?} {p:?} {:?}", p.api_key().unwrap());
    assert!(text.contains(KEY_VAR), "{text}");
    assert!(
        text.contains("<redacted>"),
        "the echoed key is scrubbed: {text}"
    );
    assert_no_secret(&text);

    let mut missing = p.clone();
    missing.api_key_env = Some("ORCHESTRA_TEST_KEY_NOT_SET".into());
    let err = llm::connect(&missing).err().unwrap();
    assert!(
        err.to_string().contains("ORCHESTRA_TEST_KEY_NOT_SET"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "no request without a key");
}

#[test]
fn context_overflow_and_unstreamed_answers_are_understood() {
    let server = MockServer::from_fixture("openai/context_too_long");
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let err = model.chat(&req, &mut no_deltas()).unwrap_err();
    assert!(matches!(err, LlmError::ContextTooLong { .. }), "{err}");

    let server = MockServer::from_fixture("openai/not_streamed");
    let model = llm::connect(&profile(&server, Provider::OpenaiCompatible)).unwrap();
    let resp = model.chat(&req, &mut no_deltas()).unwrap();
    assert_eq!(resp.tool_calls[0].name, "list_dir");
    assert_eq!(resp.usage.input_tokens, 7);
}

#[test]
fn anthropic_multi_turn_tool_use_without_input_in_block_start() {
    let server = MockServer::from_fixture("anthropic/tool_loop");
    let model = llm::connect(&profile(&server, Provider::Anthropic)).unwrap();
    let mut req = ChatRequest {
        messages: vec![
            Message::system("be brief"),
            Message::user("read the readme"),
        ],
        tools: vec![read_file_tool()],
        temperature: Some(0.0),
        ..Default::default()
    };
    let first = model.chat(&req, &mut no_deltas()).unwrap();
    assert_eq!(first.text, "Let me look.");
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(first.tool_calls[0].id, "toolu_1");
    assert_eq!(
        first.tool_calls[0].parse_arguments().unwrap()["path"],
        "README.md"
    );
    assert_eq!(
        (first.usage.input_tokens, first.usage.output_tokens),
        (40, 9)
    );
    req.messages.push(first.to_message());
    req.messages.push(Message::Tool {
        call_id: "toolu_1".into(),
        name: "read_file".into(),
        content: "no such file".into(),
        is_error: true,
    });
    let second = model.chat(&req, &mut no_deltas()).unwrap();
    assert_eq!(second.text, "It says hello.");

    let sent = server.requests();
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].header("x-api-key"), Some(SECRET));
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));
    assert!(sent[0].header("authorization").is_none());
    let b0 = &sent[0].body;
    assert_eq!(b0["system"], "be brief");
    assert_eq!(b0["tools"][0]["input_schema"]["required"][0], "path");
    assert_eq!(b0["messages"].as_array().unwrap().len(), 1);
    let msgs = sent[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[1]["content"][1]["input"]["path"], "README.md");
    assert_eq!(
        msgs[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true}]})
    );
}

#[test]
fn anthropic_overload_and_cut_streams_recover_then_fallback_takes_over() {
    let server = MockServer::from_fixture("anthropic/overloaded_then_cut_then_ok");
    let model = llm::connect(&profile(&server, Provider::Anthropic)).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let mut kinds = Vec::new();
    let (resp, _) = llm::chat_with_retry(
        &[model.as_ref()],
        &req,
        &fast_policy(),
        &AtomicBool::new(false),
        &mut no_deltas(),
        &mut |e| {
            if let RetryEvent::Retrying { error, .. } = e {
                kinds.push(error.kind());
            }
        },
    )
    .unwrap();
    assert_eq!(resp.text, "whole");
    assert_eq!(kinds, ["unavailable", "broken_stream"]);

    // A primary that only fails (the mock answers 500 once its script is empty) hands over.
    let dead = MockServer::start(vec![]);
    let backup = MockServer::from_fixture("openai/tool_loop");
    let primary = llm::connect(&profile(&dead, Provider::Anthropic)).unwrap();
    let fallback = llm::connect(&profile(&backup, Provider::OpenaiCompatible)).unwrap();
    let mut events = Vec::new();
    let policy = RetryPolicy {
        max_retries: 1,
        ..fast_policy()
    };
    let (resp, used) = llm::chat_with_retry(
        &[primary.as_ref(), fallback.as_ref()],
        &req,
        &policy,
        &AtomicBool::new(false),
        &mut no_deltas(),
        &mut |e| events.push(e.clone()),
    )
    .unwrap();
    assert_eq!(used, 1);
    assert_eq!(resp.tool_calls[0].name, "read_file");
    assert_eq!(dead.requests().len(), 2);
    assert!(
        matches!(events.last(), Some(RetryEvent::FallingBack { .. })),
        "{events:?}"
    );
    assert_no_secret(&format!("{events:?}"));
}

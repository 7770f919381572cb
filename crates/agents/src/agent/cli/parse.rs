//! What an agent CLI's JSON output says it did: one parser per output format, each turning
//! the CLI's lines into one [`CliReport`] — messages, tool calls, commands, files touched,
//! tokens and cost when reported, the CLI's session id, an error.
//!
//! Lines that are not JSON (banners, warnings on stderr, which shares the log) are skipped;
//! fields a CLI does not report stay empty. Nothing here decides success: the exit status and
//! the report's `error` together do.

use std::collections::BTreeSet;

use serde_json::Value;

/// The output formats the built-in adapters read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code's `--output-format stream-json --verbose`, and Qwen Code's.
    Claude,
    /// Codex's `exec --json` (thread/turn/item events).
    Codex,
    /// Gemini CLI's `--output-format stream-json` (Qwen Code's follows Claude Code's).
    Gemini,
    /// opencode's `run --format json`.
    Opencode,
    /// Plain text: the last lines are kept as the message, and usage lines
    /// ([`super::text_usage`]) as its spend.
    Text,
}

impl Format {
    /// Returns the format named `name` in the configuration (`output = "…"`).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "claude" | "claude-stream-json" | "qwen" => Format::Claude,
            "codex" | "codex-json" => Format::Codex,
            "gemini" | "gemini-stream-json" => Format::Gemini,
            "opencode" | "opencode-json" => Format::Opencode,
            "text" => Format::Text,
            _ => return None,
        })
    }

    /// The names accepted by [`Format::from_name`], for error messages.
    pub const NAMES: &'static str = "claude (also qwen), codex, gemini, opencode, text";
}

/// One tool call the CLI reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolUse {
    pub name: String,
    /// False when the CLI reported the call as failed; true when it did not say.
    pub ok: bool,
    /// What it acted on, as its input named it: a path, a command's first line (clipped);
    /// empty when the input names neither.
    pub target: String,
}

/// What a CLI's output says about its run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliReport {
    /// The CLI's session (thread) id, for resuming it in a fix round.
    pub session: Option<String>,
    pub model: Option<String>,
    /// The assistant's text messages, in order.
    pub messages: Vec<String>,
    pub tools: Vec<ToolUse>,
    /// Shell commands it ran.
    pub commands: Vec<String>,
    /// Paths it wrote or edited, as it named them.
    pub files: BTreeSet<String>,
    /// Tools its MCP servers offered, as the CLI listed them (Claude Code's init line).
    pub mcp_tools: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model calls (turns) it reported.
    pub turns: u32,
    /// Cost in US dollars, when the CLI reports one.
    pub cost_usd: Option<f64>,
    /// The error the CLI reported (a failed turn, an error result), first line kept.
    pub error: Option<String>,
    /// The id of the last model response counted (Claude Code repeats it per content block).
    last_message_id: Option<String>,
}

impl CliReport {
    /// Returns the last message, the CLI's own account of what it did.
    pub fn last_message(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .map(|m| m.trim())
            .find(|m| !m.is_empty())
    }
}

/// Parses the whole output `text` of a CLI in `format`.
pub fn parse(format: Format, text: &str) -> CliReport {
    let mut report = CliReport::default();
    if format == Format::Text {
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        report.messages.push(tail.join("\n"));
        for line in text.lines() {
            super::text_usage::read(line, &mut report);
        }
        return report;
    }
    for line in text.lines() {
        parse_line(format, line, &mut report);
    }
    report
}

/// Adds what one output `line` of a CLI in `format` says to `report`, as [`parse`] does for
/// each line; lines that are not JSON, and every line of [`Format::Text`], add nothing.
pub fn parse_line(format: Format, line: &str, report: &mut CliReport) {
    let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
        return;
    };
    match format {
        Format::Claude => claude_line(&v, report),
        Format::Codex => codex_line(&v, report),
        Format::Gemini => gemini_line(&v, report),
        Format::Opencode => opencode_line(&v, report),
        Format::Text => {}
    }
}

/// Returns `text`'s first line, clipped for a progress line.
fn short(text: &str) -> String {
    orchestra_sys::redact::clip(text.lines().next().unwrap_or_default().trim(), 120)
}

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Records what a tool call's input says about commands and files, and returns what the call
/// acted on (its path or command) for its progress line.
fn tool_input(report: &mut CliReport, name: &str, input: &Value) -> String {
    let mut target = String::new();
    for key in ["file_path", "filePath", "path", "absolute_path", "pattern"] {
        if let Some(p) = input.get(key).and_then(Value::as_str)
            && target.is_empty()
        {
            target = short(p);
        }
    }
    for key in ["command", "cmd"] {
        if let Some(c) = input.get(key) {
            let text = match c {
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
                other => other.as_str().unwrap_or_default().to_string(),
            };
            if !text.is_empty() {
                if target.is_empty() {
                    target = short(&text);
                }
                report.commands.push(text);
            }
        }
    }
    let lower = name.to_ascii_lowercase();
    let writes = ["edit", "write", "replace", "patch", "create"]
        .iter()
        .any(|w| lower.contains(w));
    if writes {
        for key in ["file_path", "filePath", "path", "absolute_path"] {
            if let Some(p) = input.get(key).and_then(Value::as_str) {
                report.files.insert(p.to_string());
            }
        }
    }
    target
}

/// Returns the input tokens of a Claude-style `usage`: Claude Code counts cache reads and
/// writes apart from `input_tokens`; Qwen Code's `input_tokens` already holds them (its
/// `total_tokens` is input plus output).
fn input_tokens(usage: &Value) -> u64 {
    let (input, output) = (n(usage, "input_tokens"), n(usage, "output_tokens"));
    if usage.get("total_tokens").and_then(Value::as_u64) == Some(input + output) {
        return input;
    }
    input + n(usage, "cache_read_input_tokens") + n(usage, "cache_creation_input_tokens")
}

fn claude_line(v: &Value, report: &mut CliReport) {
    if let Some(id) = s(v, "session_id") {
        report.session = Some(id);
    }
    match v.get("type").and_then(Value::as_str) {
        Some("system") if v.get("subtype").and_then(Value::as_str) == Some("api_retry") => {
            // Claude Code retries a refused key many times; the first refusal says enough.
            if let Some(e) = s(v, "error") {
                report.error = Some(format!(
                    "{e} (HTTP {})",
                    v.get("error_status").and_then(Value::as_u64).unwrap_or(0)
                ));
            }
        }
        Some("system") if v.get("subtype").and_then(Value::as_str) == Some("init") => {
            report.model = s(v, "model");
            report.mcp_tools = v
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|t| t.starts_with("mcp__"))
                .map(str::to_string)
                .collect();
        }
        Some("assistant") => {
            let message = v.get("message").unwrap_or(&Value::Null);
            // One model response may come as several lines (one per content block) with the
            // same id and usage: count it once. The result line, when there is one, has the
            // totals and replaces these.
            let id = s(message, "id");
            if id.is_none() || id != report.last_message_id {
                report.turns += 1;
                let usage = message.get("usage").unwrap_or(&Value::Null);
                report.input_tokens += input_tokens(usage);
                report.output_tokens += n(usage, "output_tokens");
                report.last_message_id = id;
            }
            for block in message
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => report.messages.extend(s(block, "text")),
                    Some("tool_use") => {
                        let name = s(block, "name").unwrap_or_default();
                        let target =
                            tool_input(report, &name, block.get("input").unwrap_or(&Value::Null));
                        report.tools.push(ToolUse {
                            name,
                            ok: true,
                            target,
                        });
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
            // A tool result marked as an error fails the call it answers (the latest one).
            let failed = v
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|b| b.get("is_error").and_then(Value::as_bool) == Some(true));
            if failed && let Some(last) = report.tools.last_mut() {
                last.ok = false;
            }
        }
        Some("result") => {
            let usage = v.get("usage").unwrap_or(&Value::Null);
            report.input_tokens = input_tokens(usage);
            report.output_tokens = n(usage, "output_tokens");
            report.cost_usd = v.get("total_cost_usd").and_then(Value::as_f64);
            if let Some(t) = v.get("num_turns").and_then(Value::as_u64) {
                report.turns = t as u32;
            }
            let is_error = v.get("is_error").and_then(Value::as_bool) == Some(true)
                || v.get("subtype").and_then(Value::as_str) != Some("success");
            if is_error {
                let first = v
                    .pointer("/errors/0")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                report.error = s(v, "result")
                    .or(first)
                    .or_else(|| s(v, "subtype"))
                    .or(Some("error".into()));
            } else if let Some(text) = s(v, "result") {
                report.messages.push(text);
            }
        }
        _ => {}
    }
}

fn codex_line(v: &Value, report: &mut CliReport) {
    match v.get("type").and_then(Value::as_str) {
        Some("thread.started") => report.session = s(v, "thread_id"),
        Some("turn.completed") => {
            let usage = v.get("usage").unwrap_or(&Value::Null);
            report.input_tokens += n(usage, "input_tokens");
            report.output_tokens += n(usage, "output_tokens");
            report.turns += 1;
        }
        Some("turn.failed") => {
            report.error = v
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        Some("error") => report.error = s(v, "message"),
        Some("item.completed") => codex_item(v.get("item").unwrap_or(&Value::Null), report),
        _ => {}
    }
}

fn codex_item(item: &Value, report: &mut CliReport) {
    let failed = item.get("status").and_then(Value::as_str) == Some("failed");
    match item.get("type").and_then(Value::as_str) {
        Some("agent_message") => report.messages.extend(s(item, "text")),
        Some("command_execution") => {
            let command = s(item, "command");
            let target = command.as_deref().map(short).unwrap_or_default();
            report.commands.extend(command);
            let ok = !failed && item.get("exit_code").and_then(Value::as_i64).unwrap_or(0) == 0;
            report.tools.push(ToolUse {
                name: "shell".into(),
                ok,
                target,
            });
        }
        Some("file_change") => {
            let mut paths = Vec::new();
            for change in item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                paths.extend(s(change, "path"));
            }
            let target = short(&paths.join(", "));
            report.files.extend(paths);
            report.tools.push(ToolUse {
                name: "apply_patch".into(),
                ok: !failed,
                target,
            });
        }
        Some("mcp_tool_call") => {
            let name = format!(
                "{}.{}",
                s(item, "server").unwrap_or_default(),
                s(item, "tool").unwrap_or_default()
            );
            report.tools.push(ToolUse {
                name,
                ok: !failed,
                target: String::new(),
            });
        }
        Some("error") => report.error = s(item, "message"),
        _ => {}
    }
}

fn gemini_line(v: &Value, report: &mut CliReport) {
    match v.get("type").and_then(Value::as_str) {
        Some("init") => {
            report.session = s(v, "session_id");
            report.model = s(v, "model");
        }
        Some("message") if v.get("role").and_then(Value::as_str) == Some("assistant") => {
            let text = s(v, "content").unwrap_or_default();
            // Streamed deltas continue the message before them.
            let delta = v.get("delta").and_then(Value::as_bool) == Some(true);
            match report.messages.last_mut() {
                Some(last) if delta => last.push_str(&text),
                _ => report.messages.push(text),
            }
        }
        Some("tool_use") => {
            let name = s(v, "tool_name").unwrap_or_default();
            let target = tool_input(report, &name, v.get("parameters").unwrap_or(&Value::Null));
            report.tools.push(ToolUse {
                name,
                ok: true,
                target,
            });
        }
        Some("tool_result") => {
            if s(v, "status").as_deref() == Some("error")
                && let Some(last) = report.tools.last_mut()
            {
                last.ok = false;
            }
        }
        Some("error") => report.error = s(v, "message"),
        Some("result") => {
            let stats = v.get("stats").unwrap_or(&Value::Null);
            report.input_tokens = n(stats, "input_tokens").max(n(stats, "input"));
            report.output_tokens = n(stats, "output_tokens");
            if s(v, "status").as_deref() == Some("error") {
                report.error = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or(Some("error".into()));
            }
        }
        _ => {}
    }
}

fn opencode_line(v: &Value, report: &mut CliReport) {
    if let Some(id) = s(v, "sessionID") {
        report.session = Some(id);
    }
    let part = v.get("part").unwrap_or(&Value::Null);
    match v.get("type").and_then(Value::as_str) {
        Some("text") => report.messages.extend(s(part, "text")),
        Some("tool_use") => {
            let name = s(part, "tool").unwrap_or_default();
            let state = part.get("state").unwrap_or(&Value::Null);
            let target = tool_input(report, &name, state.get("input").unwrap_or(&Value::Null));
            let ok = s(state, "status").as_deref() != Some("error");
            report.tools.push(ToolUse { name, ok, target });
        }
        Some("step_finish") => {
            let tokens = part.get("tokens").unwrap_or(&Value::Null);
            report.input_tokens += n(tokens, "input") + n(tokens, "cache_read");
            report.input_tokens += tokens
                .pointer("/cache/read")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            report.output_tokens += n(tokens, "output") + n(tokens, "reasoning");
            report.turns += 1;
            if let Some(c) = part.get("cost").and_then(Value::as_f64) {
                *report.cost_usd.get_or_insert(0.0) += c;
            }
        }
        Some("error") => {
            report.error = v
                .pointer("/error/data/message")
                .or_else(|| v.pointer("/error/message"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| s(v, "message"));
        }
        _ => {}
    }
}

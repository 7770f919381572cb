//! Streams an agent CLI's output into the packet's activity while the CLI runs: its tool
//! calls, the tokens (and cost) it reported so far, and, when nothing new showed for a while,
//! a note that it is still running, for how long and what it printed last.
//!
//! A CLI may work for many minutes; journaling only what its whole output says once it exits
//! left the terminal, `status` and the web view silent meanwhile. The lines are parsed as they
//! arrive by the same parser as the whole output ([`parse::parse_line`]); what was journaled is
//! counted in [`Sent`] so the account at the end adds only the rest and no token is counted
//! twice. A tool call is journaled once a later line arrived, as that line may report it failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::parse::{self, CliReport, Format};
use crate::agent::limit::SpendLimit;
use crate::agent::{AgentEvent, WorkerState};

/// Longest a running CLI goes without a line in its activity, unless configured.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

/// What was journaled of a CLI's run while it ran.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sent {
    /// Tool calls journaled (the first ones of the report, in order).
    pub tools: usize,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Cost journaled, when the CLI reported one.
    pub cost_usd: Option<f64>,
    pub model_calls: u32,
    /// Time the journaled model calls account for.
    pub ms: u64,
}

/// Turns a running CLI's output into agent events as it arrives.
pub struct Stream<'a> {
    name: String,
    format: Format,
    emit: &'a (dyn Fn(AgentEvent) + Sync),
    heartbeat: Duration,
    started: Instant,
    /// When the activity last got a line (an event or a heartbeat).
    shown: Instant,
    /// When the last model call was journaled, for the next one's duration.
    last_call: Instant,
    /// Bytes after the last complete line.
    pending: Vec<u8>,
    report: CliReport,
    /// When each tool call of the report was first seen.
    seen: Vec<Instant>,
    /// What it printed last, for the heartbeat: a text line, a message or a tool call.
    last: String,
    sent: Sent,
    /// The spend limit the CLI is stopped at, if any.
    limit: Option<Arc<SpendLimit>>,
}

impl<'a> Stream<'a> {
    /// Returns the stream of CLI `name` printing `format`, journaling through `emit`, with a
    /// heartbeat after `heartbeat` without a line.
    pub fn new(
        name: &str,
        format: Format,
        heartbeat: Duration,
        emit: &'a (dyn Fn(AgentEvent) + Sync),
    ) -> Stream<'a> {
        let now = Instant::now();
        Stream {
            name: name.to_string(),
            format,
            emit,
            heartbeat,
            started: now,
            shown: now,
            last_call: now,
            pending: Vec::new(),
            report: CliReport::default(),
            seen: Vec::new(),
            last: String::new(),
            sent: Sent::default(),
            limit: None,
        }
    }

    /// Returns this stream checking what the CLI reported against `limit` (none: no limit).
    pub fn with_limit(mut self, limit: Option<Arc<SpendLimit>>) -> Stream<'a> {
        self.limit = limit;
        self
    }

    /// Returns the reason the CLI must stop, naming the limit its reported tokens (input plus
    /// output) or cost reached; `None` while under it or without a limit. The cost is the
    /// CLI's own figure, else its tokens at the limit's prices.
    pub fn over_limit(&self) -> Option<String> {
        let limit = self.limit.as_ref()?;
        let r = &self.report;
        let cost = r.cost_usd.unwrap_or_else(|| {
            let model = r.model.as_deref().unwrap_or(&self.name);
            limit.cost_of(model, r.input_tokens, r.output_tokens)
        });
        limit.reached_at(r.input_tokens + r.output_tokens, cost)
    }

    /// Journals that the CLI started, writing its output to `log`.
    pub fn start(&mut self, log: &str) {
        self.show(AgentEvent::State {
            from: WorkerState::Initializing,
            to: WorkerState::Running,
            reason: format!("{} started; its output goes to {log}", self.name),
        });
    }

    /// Returns what was journaled so far.
    pub fn sent(&self) -> Sent {
        self.sent
    }

    /// Takes `bytes` the CLI printed next and journals what its complete lines say.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.line(&String::from_utf8_lossy(&line));
        }
    }

    /// Journals a note that the CLI is still running when the activity got no line for the
    /// heartbeat's length.
    pub fn tick(&mut self) {
        if self.shown.elapsed() < self.heartbeat {
            return;
        }
        let mut reason = format!(
            "{} running for {}",
            self.name,
            human(self.started.elapsed())
        );
        if self.format != Format::Text {
            reason.push_str(&format!(
                "; {} tool calls, {} in / {} out tokens so far",
                self.report.tools.len(),
                self.report.input_tokens,
                self.report.output_tokens
            ));
        }
        reason.push_str("; last output: ");
        reason.push_str(if self.last.is_empty() {
            "none yet"
        } else {
            &self.last
        });
        self.show(AgentEvent::State {
            from: WorkerState::Running,
            to: WorkerState::Running,
            reason,
        });
    }

    fn show(&mut self, event: AgentEvent) {
        (self.emit)(event);
        self.shown = Instant::now();
    }

    fn line(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        if self.format == Format::Text {
            // Its usage lines are all a spend limit can act on while it runs.
            super::text_usage::read(line, &mut self.report);
            self.last = orchestra_sys::redact::clip(line, 200);
            return;
        }
        // Every call before this line is settled: a failure would have been reported by now.
        let settled = self.report.tools.len();
        let messages = self.report.messages.len();
        parse::parse_line(self.format, line, &mut self.report);
        let now = Instant::now();
        self.seen.resize(self.report.tools.len(), now);
        if let Some(t) = self.report.tools.get(settled..).and_then(<[_]>::last) {
            self.last = format!("{} {}", t.name, t.target).trim().to_string();
        } else if self.report.messages.len() > messages
            && let Some(m) = self.report.last_message()
        {
            self.last = orchestra_sys::redact::clip(m.lines().next().unwrap_or_default(), 200);
        }
        self.tools(settled);
        self.model_call();
    }

    /// Journals the tool calls before `settled` not journaled yet.
    fn tools(&mut self, settled: usize) {
        while self.sent.tools < settled {
            let i = self.sent.tools;
            let Some(t) = self.report.tools.get(i).cloned() else {
                break;
            };
            let ms = self
                .seen
                .get(i)
                .map_or(0, |s| s.elapsed().as_millis() as u64);
            self.sent.tools += 1;
            self.show(tool_event(i, &t, ms));
        }
    }

    /// Journals the tokens and cost reported since the last model call journaled.
    fn model_call(&mut self) {
        let r = &self.report;
        let input = r.input_tokens.saturating_sub(self.sent.input_tokens);
        let output = r.output_tokens.saturating_sub(self.sent.output_tokens);
        let cost = r
            .cost_usd
            .map(|c| c - self.sent.cost_usd.unwrap_or(0.0))
            .filter(|c| *c > 0.0);
        if input == 0 && output == 0 && cost.is_none() {
            return;
        }
        let ms = self.last_call.elapsed().as_millis() as u64;
        let event = AgentEvent::ModelCall {
            turn: r.turns.max(1),
            model: r.model.clone().unwrap_or_else(|| self.name.clone()),
            input_tokens: input,
            output_tokens: output,
            cost,
            ms,
        };
        self.sent.input_tokens = self.sent.input_tokens.max(r.input_tokens);
        self.sent.output_tokens = self.sent.output_tokens.max(r.output_tokens);
        if let Some(c) = r.cost_usd {
            self.sent.cost_usd = Some(self.sent.cost_usd.unwrap_or(0.0).max(c));
        }
        self.sent.model_calls += 1;
        self.sent.ms += ms;
        self.last_call = Instant::now();
        self.show(event);
    }
}

/// Returns the event of the `i`-th tool call `t` of a CLI's run, which took `ms`.
pub fn tool_event(i: usize, t: &parse::ToolUse, ms: u64) -> AgentEvent {
    AgentEvent::ToolCall {
        turn: i as u32 + 1,
        name: t.name.clone(),
        ok: t.ok,
        ms,
        summary: String::new(),
        target: t.target.clone(),
        args: serde_json::Value::Null,
        output_tail: String::new(),
    }
}

/// Returns `d` as `1h2m`, `3m4s` or `5s`.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn collect(format: Format, heartbeat: Duration, chunks: &[&str]) -> Vec<AgentEvent> {
        let events = Mutex::new(Vec::new());
        let emit = |e: AgentEvent| events.lock().unwrap().push(e);
        let mut stream = Stream::new("claude", format, heartbeat, &emit);
        for c in chunks {
            stream.feed(c.as_bytes());
            stream.tick();
        }
        drop(stream);
        events.into_inner().unwrap()
    }

    #[test]
    fn lines_split_across_reads_are_parsed_once_whole_and_a_tool_waits_for_the_next_line() {
        let tool = r#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":10,"output_tokens":0},"content":[{"type":"tool_use","name":"Edit","input":{"file_path":"src/a.rs"}}]}}"#;
        let failed =
            r#"{"type":"user","message":{"content":[{"type":"tool_result","is_error":true}]}}"#;
        let (a, b) = tool.split_at(40);
        let events = collect(
            Format::Claude,
            Duration::from_secs(60),
            &[a, &format!("{b}\n"), &format!("{failed}\n")],
        );
        let kinds: Vec<String> = events
            .iter()
            .map(|e| match e {
                AgentEvent::ModelCall { input_tokens, .. } => format!("model {input_tokens}"),
                AgentEvent::ToolCall {
                    name, ok, target, ..
                } => format!("tool {name} {ok} {target}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["model 10", "tool Edit false src/a.rs"]);
    }

    #[test]
    fn the_limit_is_reached_once_the_reported_tokens_or_cost_reach_it() {
        let turn = |i: u32| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"m{i}","usage":{{"input_tokens":100,"output_tokens":0}},"content":[]}}}}
"#
            )
        };
        let emit = |_: AgentEvent| {};
        let limit = SpendLimit::new(Some(250), None, Default::default());
        let mut stream = Stream::new("claude", Format::Claude, Duration::from_secs(60), &emit)
            .with_limit(Some(Arc::new(limit)));
        for i in 1..=2 {
            stream.feed(turn(i).as_bytes());
            assert_eq!(stream.over_limit(), None, "turn {i}");
        }
        stream.feed(turn(3).as_bytes());
        let why = stream.over_limit().unwrap();
        assert!(
            why.contains("budget of 250 tokens") && why.contains("300"),
            "{why}"
        );
        // The CLI's own cost counts against a cost limit; no limit: never reached.
        let limit = SpendLimit::new(None, Some(0.05), Default::default());
        let mut stream = Stream::new("claude", Format::Claude, Duration::from_secs(60), &emit)
            .with_limit(Some(Arc::new(limit)));
        stream.feed(b"{\"type\":\"result\",\"subtype\":\"success\",\"total_cost_usd\":0.06,\"usage\":{\"input_tokens\":1}}\n");
        assert!(stream.over_limit().unwrap().contains("budget of 0.0500"));
        let mut free = Stream::new("claude", Format::Claude, Duration::from_secs(60), &emit);
        free.feed(turn(1).as_bytes());
        assert_eq!(free.over_limit(), None);
    }

    #[test]
    fn a_quiet_text_cli_gets_a_heartbeat_with_its_last_line() {
        let events = collect(Format::Text, Duration::ZERO, &["first\nsecond\n"]);
        let Some(AgentEvent::State { to, reason, .. }) = events.last() else {
            panic!("{events:?}");
        };
        assert_eq!(*to, WorkerState::Running);
        assert!(
            reason.contains("running for") && reason.ends_with("last output: second"),
            "{reason}"
        );
    }
}

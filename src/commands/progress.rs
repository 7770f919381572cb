//! Renders engine events as progress lines on stderr while a run executes.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use git_orchestra::store::Event;

/// Returns a closure that prints one line per interesting event, or nothing when `quiet`;
/// while an agent waits for its model, a line says for how long.
pub fn printer(quiet: bool) -> impl Fn(&str, &Event) + Sync {
    let waits = (!quiet).then(Waits::start);
    move |_run: &str, event: &Event| {
        let Some(waits) = &waits else {
            return;
        };
        waits.observe(event);
        if let Some(line) = line(event) {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        }
    }
}

/// Seconds of waiting for a model before the first "waiting" line, and between later ones.
const WAIT_FIRST_SECS: u64 = 15;
const WAIT_EVERY_SECS: u64 = 30;

/// Agents waiting for their model, by packet: role, turn, since when, and how many waiting
/// lines were printed.
type Waiting = HashMap<String, (String, u32, Instant, u64)>;

/// Says on stderr, every so often, which agents have been waiting for their model and for
/// how long: a long model call otherwise prints nothing at all.
#[derive(Clone, Default)]
pub struct Waits {
    waiting: Arc<Mutex<Waiting>>,
}

impl Waits {
    /// Returns the tracker, with the thread that prints its lines.
    pub fn start() -> Waits {
        let waits = Waits::default();
        let shared = waits.waiting.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                for line in due(&mut shared.lock().unwrap_or_else(|p| p.into_inner())) {
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        });
        waits
    }

    /// Notes what `event` says of an agent's waiting.
    pub fn observe(&self, event: &Event) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::AgentWaiting { packet, role, turn } => {
                waiting.insert(packet.clone(), (role.clone(), *turn, Instant::now(), 0));
            }
            Event::AgentModelCall { packet, .. }
            | Event::AgentState { packet, .. }
            | Event::WorkerFinished { packet, .. } => {
                waiting.remove(packet);
            }
            _ => {}
        }
    }
}

/// Returns the waiting lines due now, counting them in `waiting`.
fn due(waiting: &mut Waiting) -> Vec<String> {
    let mut lines = Vec::new();
    for (packet, (role, turn, since, printed)) in waiting.iter_mut() {
        let secs = since.elapsed().as_secs();
        if secs >= WAIT_FIRST_SECS + *printed * WAIT_EVERY_SECS {
            *printed += 1;
            lines.push(format!(
                "[{}] {}: waiting for the model (turn {turn}): {secs}s",
                git_orchestra::redact::terminal_safe(packet),
                git_orchestra::redact::terminal_safe(role)
            ));
        }
    }
    lines.sort();
    lines
}

/// Returns the progress line for `event`, or `None` for events not worth a line.
pub fn line(event: &Event) -> Option<String> {
    if let Event::RunStarted { resumed: true, .. } = event {
        return Some("resuming run".to_string());
    }
    packet_line(event)
        .or_else(|| merge_line(event))
        .or_else(|| agent_line(event))
        // What a line quotes (file names, commands, model text) never drives the terminal.
        .map(|l| match git_orchestra::redact::terminal_safe(&l) {
            std::borrow::Cow::Borrowed(_) => l,
            std::borrow::Cow::Owned(safe) => safe,
        })
}

/// Returns the line for an event of a packet's pipeline.
fn packet_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::PacketStarted {
            packet,
            worktree,
            attempt,
            ..
        } => format!("[{packet}] started (attempt {attempt}) in {worktree}"),
        Event::PacketResumed {
            packet,
            attempt,
            phase,
        } => format!("[{packet}] started again (attempt {attempt}, resumed in its {phase} phase)"),
        Event::WorktreeReady { packet, how } => format!("[{packet}] worktree ready ({how})"),
        Event::WorkerFinished {
            packet,
            exit_code,
            duration_ms,
            timed_out,
            ..
        } => {
            let how = match (timed_out, exit_code) {
                (true, _) => "timed out".to_string(),
                (false, Some(c)) => format!("exit {c}"),
                (false, None) => "killed".to_string(),
            };
            format!("[{packet}] worker finished: {how} ({})", secs(*duration_ms))
        }
        Event::PacketCommitted {
            packet, changed, ..
        } if changed.is_empty() => format!("[{packet}] no changes: the worker changed no file"),
        Event::PacketCommitted {
            packet,
            commit,
            changed,
        } => format!(
            "[{packet}] committed {} ({} file{} changed)",
            short(commit),
            changed.len(),
            if changed.len() == 1 { "" } else { "s" }
        ),
        Event::ValidationFinished {
            packet,
            command,
            exit_code,
            duration_ms,
            ..
        } => format!(
            "[{packet}] validation `{command}`: {} ({})",
            if *exit_code == Some(0) {
                "passed"
            } else {
                "FAILED"
            },
            secs(*duration_ms)
        ),
        Event::WorkerRetrying {
            packet,
            attempt,
            reason,
            delay_ms,
        } => format!(
            "[{packet}] {reason}; may pass on another try: try {attempt} in {:.1}s",
            *delay_ms as f64 / 1000.0
        ),
        Event::PacketReviewed {
            packet,
            reviewer,
            approved,
            blocking,
            round,
            ..
        } => format!(
            "[{packet}] review by {reviewer}{}: {}",
            if *round > 0 {
                format!(" (fix round {round})")
            } else {
                String::new()
            },
            if *approved {
                "approved".to_string()
            } else {
                format!(
                    "rejected ({blocking} blocking finding{})",
                    if *blocking == 1 { "" } else { "s" }
                )
            }
        ),
        Event::PacketSucceeded { packet, commit } => {
            format!("[{packet}] succeeded at {}", short(commit))
        }
        Event::PacketFailed { packet, reason } => format!("[{packet}] FAILED: {reason}"),
        Event::PacketSkipped { packet, reason } => format!("[{packet}] skipped: {reason}"),
        Event::PacketInterrupted { packet } => format!("[{packet}] interrupted"),
        Event::WorktreeParked { packet, pool } => {
            format!("[{packet}] worktree parked for the next packet ({pool})")
        }
        Event::WorktreeRestored { packet, how } => {
            format!("[{packet}] worktree checked out again ({how})")
        }
        _ => return None,
    })
}

/// Returns the line for an event of the merge coordinator.
fn merge_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::MergeStarted {
            target,
            integration,
            packets,
            already,
        } => merge_started_line(target, integration, packets, already),
        Event::PacketConflicted { packet, paths } => {
            format!("[{packet}] CONFLICTS in {}", paths.join(", "))
        }
        Event::MergeValidationFinished {
            packets,
            command,
            exit_code,
            duration_ms,
            ..
        } => format!(
            "[merge {}] validation `{command}`: {} ({})",
            packets.join("+"),
            if *exit_code == Some(0) {
                "passed"
            } else {
                "FAILED"
            },
            secs(*duration_ms)
        ),
        Event::PacketIntegrated { packet, commit } => {
            format!("[{packet}] integrated at {}", short(commit))
        }
        Event::PacketSentBack { packet, reason } => format!("[{packet}] SENT BACK: {reason}"),
        Event::MergeFinished {
            integration,
            commit,
            target_advanced,
            target_note,
            target_moved,
            ..
        } => format!(
            "{integration} at {}{}",
            short(commit),
            match (target_advanced, target_moved, target_note) {
                // Journals from before `target_moved` only said whether the target was there.
                (true, Some(true) | None, _) => "; target advanced".to_string(),
                (true, Some(false), _) => "; target unchanged (already there)".to_string(),
                (false, _, Some(note)) => format!("; target not advanced: {note}"),
                (false, _, None) => String::new(),
            }
        ),
        _ => return None,
    })
}

/// Returns the line for the start of a merge, saying why when there is nothing to merge.
fn merge_started_line(
    target: &str,
    integration: &str,
    packets: &[String],
    already: &[String],
) -> String {
    match (packets.len(), already.is_empty()) {
        (0, true) => format!("nothing to merge: no packet succeeded (target {target})"),
        (0, false) => format!(
            "nothing new to merge: {} already in {integration} (target {target})",
            already.join(", ")
        ),
        (n, _) => format!(
            "merging {n} packet{} into {integration} (target {target})",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// Returns the line for an agent's state, a fallback or a scheduling note.
fn agent_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::AgentState {
            packet,
            role,
            from,
            to,
            reason,
        } if from == to => format!("[{packet}] {role}: {}", first_line(reason)),
        Event::AgentState {
            packet,
            role,
            from,
            to,
            reason,
        } => format!("[{packet}] {role}: {from} → {to} ({})", first_line(reason)),
        Event::AgentFallback {
            packet, from, to, ..
        } => format!("[{packet}] model {from} keeps failing; falling back to {to}"),
        Event::AgentRetry {
            packet,
            role,
            error,
            delay_ms,
            ..
        } if error == git_orchestra::agent::UNREACHABLE => format!(
            "[{packet}] {role}: model server unreachable, retrying in {} s",
            delay_ms.div_ceil(1000)
        ),
        Event::AgentRetry {
            packet,
            role,
            model,
            attempt,
            delay_ms,
            error,
        } => format!(
            "[{packet}] {role}: model {model} failed ({}); retry {attempt} in {}",
            first_line(error),
            secs(*delay_ms)
        ),
        Event::AgentModelCall {
            packet,
            role,
            turn,
            input_tokens,
            output_tokens,
            duration_ms,
            ..
        } => format!(
            "[{packet}] {role}: model turn {turn} ({input_tokens} in / {output_tokens} out, {})",
            secs(*duration_ms)
        ),
        Event::AgentToolCall {
            packet,
            role,
            tool,
            ok,
            duration_ms,
            target,
            ..
        } => format!(
            "[{packet}] {role}: {tool}{}{} ({})",
            if target.is_empty() {
                String::new()
            } else {
                format!(" {target}")
            },
            if *ok { "" } else { " failed" },
            secs(*duration_ms)
        ),
        Event::QuestionAsked { packet, question } => format!(
            "[{packet}] asks: {} — answer with `git orchestra answer {packet} \"…\"`",
            first_line(question)
        ),
        Event::QuestionAnswered { packet, text } => {
            format!("[{packet}] answered: {}", first_line(text))
        }
        Event::CommentsSent { packet, fixes } => {
            format!("[{packet}] a person commented: {}", first_line(fixes))
        }
        Event::CommentsDelivered { packet, round } => {
            format!("[{packet}] the comments go to its worker (fix round {round})")
        }
        Event::PacketsShareFiles { note, .. } => note.clone(),
        Event::PacketDispatched {
            packet,
            executor,
            host,
            round,
        } => match round {
            0 => format!("[{packet}] runs on {executor} host {host}"),
            n => format!("[{packet}] fix round {n} runs on {executor} host {host}"),
        },
        Event::ScopeFinding {
            packet,
            file,
            lines,
            declared,
        } => format!(
            "[{packet}] scope finding: changed {file} lines {lines} outside its declared symbols ({}); commit kept",
            declared.join(", ")
        ),
        _ => return None,
    })
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    let mut end = line.len().min(120);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// Returns the first 10 characters of a commit id.
pub fn short(id: &str) -> &str {
    &id[..id.len().min(10)]
}

fn secs(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

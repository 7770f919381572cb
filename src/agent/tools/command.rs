//! run_command: a shell command in the worktree with a timeout, a scrubbed environment and
//! truncated output.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolFailure, ToolResult, arg_str, truncate};
use crate::llm::ToolDef;

const DEFAULT_TIMEOUT: u64 = 300;
const MAX_OUTPUT: usize = 16 * 1024;

/// Environment variables a command keeps; everything else (API keys included) is dropped.
const KEEP: [&str; 9] = [
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "USER",
    "TMPDIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
];

pub(super) fn tools() -> Vec<Tool> {
    vec![Tool {
        def: ToolDef {
            name: "run_command".into(),
            description: "Runs a shell command (sh -c) in the worktree root and returns its exit status and output (truncated). Secrets are not in its environment.".into(),
            parameters: json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "timeout_secs": {"type": "integer", "minimum": 1}},
                "required": ["command"]}),
        },
        mutating: true,
        handler: run_command,
    }]
}

fn run_command(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let command = arg_str(args, "command")?;
    let timeout = Duration::from_secs(
        args["timeout_secs"]
            .as_u64()
            .unwrap_or(DEFAULT_TIMEOUT)
            .clamp(1, 3600),
    );
    let mut cmd = match &ctx.sandbox {
        Some(sandbox) => {
            fs_err::create_dir_all(&sandbox.tmp).map_err(|e| {
                ToolFailure::Infrastructure(format!("cannot create the command's temp dir: {e}"))
            })?;
            sandbox.command(ctx.root.root(), command, ctx.network)
        }
        None => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(command);
            c
        }
    };
    cmd.current_dir(ctx.root.root())
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for k in KEEP {
        if let Ok(v) = std::env::var(k) {
            cmd.env(k, v);
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolFailure::Infrastructure(format!("cannot start `sh`: {e}")))?;
    let pid = child.id() as i32;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_end(&mut o);
        }
        o
    });
    let ereader = std::thread::spawn(move || {
        let mut e = Vec::new();
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_end(&mut e);
        }
        e
    });
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| ToolFailure::Infrastructure(format!("cannot wait for the command: {e}")))?
        {
            break status;
        }
        if started.elapsed() > timeout || ctx.stop.load(Ordering::SeqCst) {
            timed_out = started.elapsed() > timeout;
            // SAFETY: plain syscall on the group this function created.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            break child.wait().map_err(|e| {
                ToolFailure::Infrastructure(format!("cannot wait for the command: {e}"))
            })?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = reader.join().unwrap_or_default();
    let stderr = ereader.join().unwrap_or_default();
    let mut text = format!(
        "exit status: {}{}{}\n",
        status
            .code()
            .map_or("killed".to_string(), |c| c.to_string()),
        if timed_out {
            format!(" (timed out after {}s)", timeout.as_secs())
        } else {
            String::new()
        },
        if ctx.sandbox.is_none() {
            " (not sandboxed)"
        } else {
            ""
        }
    );
    if !stdout.is_empty() {
        text.push_str("--- stdout ---\n");
        text.push_str(&String::from_utf8_lossy(&stdout));
    }
    if !stderr.is_empty() {
        text.push_str("\n--- stderr ---\n");
        text.push_str(&String::from_utf8_lossy(&stderr));
    }
    Ok(ToolResult::Text(truncate(&text, MAX_OUTPUT)))
}

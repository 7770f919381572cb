//! run_command: a shell command in the worktree with a timeout, a scrubbed environment and
//! truncated output.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolFailure, ToolResult, arg_str, truncate};
use orchestra_core::llm::ToolDef;
use orchestra_sys::exec::capture::capture;
use orchestra_sys::exec::denied::{denied_path, hint};

const DEFAULT_TIMEOUT: u64 = 300;
const MAX_OUTPUT: usize = 16 * 1024;
/// Bytes of each stream kept before truncation (the rest is read and counted).
const KEPT_OUTPUT: usize = 64 * 1024;

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
        handler: std::sync::Arc::new(run_command),
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
            sandbox.command(ctx.root.root(), command, ctx.network, timeout)
        }
        None => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(command);
            c
        }
    };
    // The allow-listed environment every sandboxed command gets (API keys, tokens and agent
    // sockets dropped).
    cmd.current_dir(ctx.root.root());
    orchestra_sys::exec::command_env::scrub(&mut cmd);
    // Pipes read with a deadline and the whole tree ended with the command (see
    // `exec::capture`; the sandbox's launcher also kills what left the process group).
    let ran = capture(&mut cmd, timeout, ctx.stop, KEPT_OUTPUT)
        .map_err(|e| ToolFailure::Infrastructure(format!("cannot start `sh`: {e}")))?;
    let mut text = format!(
        "exit status: {}{}{}\n",
        ran.status
            .and_then(|s| s.code())
            .map_or("killed".to_string(), |c| c.to_string()),
        if ran.timed_out {
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
    if !ran.stdout.is_empty() {
        text.push_str("--- stdout ---\n");
        text.push_str(&String::from_utf8_lossy(&ran.stdout));
    }
    if !ran.stderr.is_empty() {
        text.push_str("\n--- stderr ---\n");
        text.push_str(&String::from_utf8_lossy(&ran.stderr));
    }
    // A path the sandbox refused reads as a bare "Permission denied": say what it was.
    let failed = ran.status.is_some_and(|s| !s.success()) && !ran.timed_out;
    if let Some(path) = ctx
        .sandbox
        .as_ref()
        .filter(|_| failed)
        .and_then(|_| denied_path(&String::from_utf8_lossy(&ran.stderr), ctx.root.root()))
    {
        text.push_str(&format!("\n[{}]", hint(&path)));
    }
    if ran.dropped > 0 {
        text.push_str(&format!(
            "\n[{} more bytes of output not kept]",
            ran.dropped
        ));
    }
    Ok(ToolResult::Text(truncate(&text, MAX_OUTPUT)))
}

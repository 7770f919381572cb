//! Tools from MCP servers the user configured, for our own agents: `[mcp.servers.<name>]` in
//! the configuration and, once the user trusts the repository, `.mcp.json` at its top (the
//! `mcpServers` format other agents read). A role names the servers it may use (`mcp:` in its file, or
//! `[roles.<role>] mcp = [...]`); each of those servers is started for the agent in its
//! worktree, speaking MCP over standard input and output, and its tools join the agent's as
//! `mcp__<server>__<tool>`. A tool the server does not mark read-only (`readOnlyHint`) is
//! offered only to roles with a write scope, and whatever any tool changes in the worktree is
//! held to the packet's scope by the engine's check like the agent's own writes. The servers
//! stop when the agent ends.
//!
//! Each server runs in the agents' sandbox (`super::sandbox`): it reads the worktree, the
//! system and the toolchains, writes the worktree only for a role with a write scope, and
//! otherwise only its own temporary directory and the user's `[sandbox] writable` caches; it
//! opens no connection and dies with the engine (the launcher supervises it). Only the user's
//! configuration may say otherwise for a server (`sandbox = false`, `network = true`): those
//! keys are dropped from `.mcp.json` and the repository's configuration.
//!
//! The client is small and synchronous: newline-delimited JSON-RPC requests, answers matched
//! by id, each with a deadline; requests a server sends are answered "method not found".

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::role::Role;
use super::sandbox::Sandbox;
use super::tools::{Registry, Tool, ToolContext, ToolFailure, ToolResult};
use orchestra_core::config::McpServerConfig;
use orchestra_core::llm::ToolDef;

/// The protocol version the client asks for; servers answer with the one they speak.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// How long a server may take to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one tool call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Most bytes of a tool's answer given to the model.
const MAX_ANSWER: usize = 16_000;

/// Returns the servers configured for the repository at `root`: `.mcp.json`'s `mcpServers`
/// (servers of other transports than standard input and output are left out with a note),
/// then `[mcp.servers.*]` from the configuration, which wins on a name both give.
///
/// Configuration loading already adds a trusted repository's `.mcp.json` to
/// `[mcp.servers]`; this reads one without asking, for callers that decided to trust `root`.
pub fn servers(
    root: &Path,
    configured: &BTreeMap<String, McpServerConfig>,
) -> (BTreeMap<String, McpServerConfig>, Vec<String>) {
    let (mut found, notes) = orchestra_core::config::trust::mcp_json(root);
    for (name, spec) in configured {
        found.insert(name.clone(), spec.clone());
    }
    (found, notes)
}

/// The sandbox the servers of one agent run in.
#[derive(Debug, Clone)]
pub struct ServerSandbox {
    /// The agents' sandbox; each server gets a temporary directory of its own under its `tmp`.
    pub sandbox: Sandbox,
    /// Whether the servers may write the worktree (the role has a write scope).
    pub write_worktree: bool,
    /// The longest CPU time a server process may use (the agent's time limit).
    pub lifetime: Duration,
}

/// One running server.
struct Server {
    name: String,
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    answers: Mutex<Receiver<Value>>,
    next_id: Mutex<u64>,
    /// Set once the process was waited for: its id may belong to another process after.
    stopped: std::sync::atomic::AtomicBool,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
#[error("MCP server `{server}`: {message}")]
pub struct McpError {
    pub server: String,
    pub message: String,
}

impl Server {
    /// Starts `spec` in `cwd` — in `sandbox` unless the user's configuration turned the
    /// server's sandbox off — its standard error going to `stderr_log`, and initialises it.
    fn start(
        name: &str,
        spec: &McpServerConfig,
        cwd: &Path,
        sandbox: Option<&ServerSandbox>,
        stderr_log: &Path,
    ) -> Result<Server, McpError> {
        let fail = |message: String| McpError {
            server: name.to_string(),
            message,
        };
        let stderr = stderr_log
            .parent()
            .map_or(Ok(()), fs_err::create_dir_all)
            .and_then(|()| fs_err::File::create(stderr_log))
            .map(|f| Stdio::from(f.into_parts().0))
            .unwrap_or_else(|_| Stdio::null());
        let mut cmd = command(name, spec, cwd, sandbox).map_err(fail)?;
        cmd.envs(&spec.env)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        // The profiles' keys are not the server's business.
        for var in orchestra_sys::exec::secret_env::withheld() {
            cmd.env_remove(var);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| fail(format!("cannot start `{}`: {e}", spec.command)))?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| fail("no stdout".into()))?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(line.trim())
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let server = Server {
            name: name.to_string(),
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            answers: Mutex::new(rx),
            next_id: Mutex::new(0),
            stopped: std::sync::atomic::AtomicBool::new(false),
        };
        server.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "git-orchestra", "version": env!("CARGO_PKG_VERSION")}}),
            START_TIMEOUT,
        )?;
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn fail(&self, message: impl Into<String>) -> McpError {
        McpError {
            server: self.name.clone(),
            message: message.into(),
        }
    }

    fn send(&self, message: &Value) -> Result<(), McpError> {
        let mut stdin = self.stdin.lock().map_err(|_| self.fail("lock poisoned"))?;
        let pipe = stdin.as_mut().ok_or_else(|| self.fail("stopped"))?;
        writeln!(pipe, "{message}")
            .and_then(|()| pipe.flush())
            .map_err(|e| self.fail(format!("the server stopped reading: {e}")))
    }

    /// Sends request `method` and waits at most `timeout` for its answer.
    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, McpError> {
        // One request at a time: answers are matched by id, and a server's own requests in
        // between are refused.
        let answers = self
            .answers
            .lock()
            .map_err(|_| self.fail("lock poisoned"))?;
        let id = {
            let mut next = self
                .next_id
                .lock()
                .map_err(|_| self.fail("lock poisoned"))?;
            *next += 1;
            *next
        };
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match answers.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.fail(format!(
                        "no answer to `{method}` within {} s",
                        timeout.as_secs()
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.fail(format!("the server exited during `{method}`")));
                }
            };
            if message.get("method").is_some() {
                if let Some(their) = message.get("id") {
                    self.send(&json!({"jsonrpc": "2.0", "id": their,
                        "error": {"code": -32601, "message": "not supported by this client"}}))?;
                }
                continue;
            }
            if message["id"] != json!(id) {
                continue;
            }
            if let Some(e) = message.get("error") {
                return Err(self.fail(format!(
                    "`{method}` failed: {}",
                    e["message"].as_str().unwrap_or("no message")
                )));
            }
            return Ok(message["result"].clone());
        }
    }

    /// Returns every tool the server lists (following `nextCursor`).
    fn tools(&self) -> Result<Vec<Value>, McpError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = self.request("tools/list", params, START_TIMEOUT)?;
            all.extend(page["tools"].as_array().cloned().unwrap_or_default());
            match page["nextCursor"].as_str() {
                Some(c) if !c.is_empty() => cursor = Some(c.to_string()),
                _ => break,
            }
        }
        Ok(all)
    }

    /// Calls `tool` with `args`; the text of its answer, or its error for the model.
    fn call(&self, tool: &str, args: &Value) -> Result<ToolResult, ToolFailure> {
        let result = self
            .request(
                "tools/call",
                json!({"name": tool, "arguments": args}),
                CALL_TIMEOUT,
            )
            .map_err(|e| ToolFailure::Model(e.to_string()))?;
        let text: Vec<String> = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| match c["type"].as_str() {
                Some("text") => c["text"].as_str().unwrap_or("").to_string(),
                Some(other) => format!("[{other} content left out]"),
                None => String::new(),
            })
            .collect();
        let mut text = text.join("\n");
        if text.is_empty()
            && let Some(s) = result.get("structuredContent")
        {
            text = s.to_string();
        }
        let text = super::tools::truncate(&text, MAX_ANSWER);
        if result["isError"].as_bool() == Some(true) {
            Err(ToolFailure::Model(text))
        } else {
            Ok(ToolResult::Text(text))
        }
    }

    /// Closes the server's input and gives it a moment to exit; then asks the process (the
    /// sandbox launcher, which then ends everything the server started) to end, and after a
    /// while more ends its process group.
    fn stop(&self) {
        if self.stopped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        let Ok(mut child) = self.child.lock() else {
            return;
        };
        let exited = |child: &mut Child, within: Duration| {
            let deadline = Instant::now() + within;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        };
        // SIGKILL would leave the launcher no time to end the server it supervises.
        if !exited(&mut child, Duration::from_secs(2)) {
            // SAFETY: a plain system call on our child, not yet waited for.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            exited(&mut child, Duration::from_secs(6));
        }
        orchestra_sys::exec::process::kill_group(child.id() as i32, libc::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Returns the command that starts `spec` (the server `name`) for the worktree `cwd`: through
/// the sandbox launcher, or — the user's configuration said `sandbox = false` — as the user,
/// in a process group of its own that ends with the engine. Without a sandbox to run in, a
/// server that did not turn it off does not start.
fn command(
    name: &str,
    spec: &McpServerConfig,
    cwd: &Path,
    sandbox: Option<&ServerSandbox>,
) -> Result<Command, String> {
    use std::os::unix::process::CommandExt;
    if spec.sandbox == Some(false) {
        let mut cmd = Command::new(&spec.command);
        cmd.args(&spec.args).process_group(0);
        // SAFETY: a single prctl between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        return Ok(cmd);
    }
    let Some(s) = sandbox else {
        return Err("cannot find this program to start the server in the sandbox; set `sandbox = false` for it in your user configuration to run it unconfined".into());
    };
    let dir: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let tmp = s.sandbox.tmp.join(dir);
    fs_err::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let program = orchestra_nav::lsp::settings::which(&spec.command)
        .unwrap_or_else(|| PathBuf::from(&spec.command));
    let mut cmd = Sandbox {
        tmp,
        ..s.sandbox.clone()
    }
    .server_command(
        cwd,
        &program,
        &spec.args,
        s.write_worktree,
        spec.network == Some(true),
        s.lifetime,
    );
    cmd.process_group(0);
    Ok(cmd)
}

/// The servers started for one agent; they stop when this is dropped.
#[derive(Default)]
pub struct McpSession {
    servers: Vec<Arc<Server>>,
    /// Servers the role named that could not be used, and why (for the agent's log).
    pub notes: Vec<String>,
}

impl Drop for McpSession {
    fn drop(&mut self) {
        for s in &self.servers {
            s.stop();
        }
    }
}

/// Returns a tool name the providers accept (letters, digits, `_` and `-`).
fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.chars().take(64).collect()
}

/// Returns the MCP servers `role` may use: `[roles.<role>] mcp` when set, else its file's.
pub fn names_for(role: &Role, config: &orchestra_core::config::RepoConfig) -> Vec<String> {
    config
        .roles
        .get(&role.name)
        .and_then(|c| c.mcp.clone())
        .unwrap_or_else(|| role.mcp.clone())
}

/// Starts the servers `names` among `available` in `worktree`, each in `sandbox` (see
/// [`command`]), and adds their tools to `registry` (write tools only when the role has a
/// write scope). Logs of the servers' standard error go to `logs`. A server that cannot start
/// or list its tools is left out with a note; the agent works without it.
pub fn attach(
    registry: &mut Registry,
    role: &Role,
    names: &[String],
    available: &BTreeMap<String, McpServerConfig>,
    worktree: &Path,
    sandbox: Option<&ServerSandbox>,
    logs: &Path,
) -> McpSession {
    let mut session = McpSession::default();
    for name in names {
        let Some(spec) = available.get(name) else {
            session.notes.push(format!(
                "role `{}` names MCP server `{name}`, which is configured neither in .mcp.json nor in [mcp.servers]; known: {}",
                role.name,
                available.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
            continue;
        };
        let log: PathBuf = logs.join(format!("mcp-{name}.stderr"));
        // A server that started but cannot list its tools stops when dropped here.
        let started = Server::start(name, spec, worktree, sandbox, &log).and_then(|s| {
            let tools = s.tools()?;
            Ok((Arc::new(s), tools))
        });
        let (server, tools) = match started {
            Ok(pair) => pair,
            Err(e) => {
                session.notes.push(e.to_string());
                continue;
            }
        };
        for t in tools {
            let Some(tool) = t["name"].as_str() else {
                continue;
            };
            let read_only = t["annotations"]["readOnlyHint"].as_bool() == Some(true);
            if !read_only && role.write_scope.is_empty() {
                continue;
            }
            let s = server.clone();
            let remote = tool.to_string();
            registry.register(Tool {
                def: ToolDef {
                    name: tool_name(name, tool),
                    description: format!(
                        "[MCP server `{name}`] {}",
                        t["description"].as_str().unwrap_or("")
                    ),
                    parameters: t
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object"})),
                },
                mutating: !read_only,
                handler: Arc::new(move |_ctx: &ToolContext<'_>, args: &Value| {
                    s.call(&remote, args)
                }),
            });
        }
        session.servers.push(server);
    }
    session
}

/// Starts the MCP servers `role` may use for an agent working in `worktree` of the repository
/// whose common git directory is `common_dir` (servers from `config` only: the user's, and a
/// trusted repository's `[mcp.servers]` and `.mcp.json` at its top — never the worktree's
/// files, which the agent writes), in the agents' sandbox, and adds their tools to `registry`;
/// what could not be used is written to the agent's transcript `log`, whose directory also
/// takes the servers' standard error and temporary directories.
pub fn for_agent(
    registry: &mut Registry,
    role: &Role,
    config: &orchestra_core::config::RepoConfig,
    worktree: &Path,
    common_dir: Option<&Path>,
    transcript: &Path,
    log: &mut dyn Write,
) -> McpSession {
    let names = names_for(role, config);
    if names.is_empty() {
        return McpSession::default();
    }
    let available = config.mcp.servers.clone();
    let mut notes = Vec::new();
    let logs = transcript.parent().unwrap_or(worktree);
    let sandbox = std::env::current_exe().ok().map(|launcher| ServerSandbox {
        sandbox: Sandbox {
            launcher,
            tmp: transcript.with_extension("mcp-tmp"),
            read: Sandbox::server_reads(common_dir, &config.sandbox),
            write: Sandbox::writes(&config.sandbox),
            limits: super::sandbox::Limits::from_config(&config.sandbox),
            if_unavailable: super::sandbox::IfUnavailable::from_config(
                config.sandbox.if_unavailable,
            ),
        },
        write_worktree: !role.write_scope.is_empty(),
        lifetime: Duration::from_secs(role.timeout_secs.max(60)),
    });
    let session = attach(
        registry,
        role,
        &names,
        &available,
        worktree,
        sandbox.as_ref(),
        logs,
    );
    notes.extend(session.notes.iter().cloned());
    for note in notes {
        let _ = writeln!(log, "{}", json!({"type": "mcp_unavailable", "note": note}));
    }
    session
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_namespaced_and_kept_to_what_providers_accept() {
        assert_eq!(tool_name("graph", "nav_def"), "mcp__graph__nav_def");
        assert_eq!(tool_name("my docs", "look.up"), "mcp__my_docs__look_up");
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }
}

//! Tools as values: each declares its name, JSON schema and whether it mutates, and handles a
//! call. A registry per role holds the tools the role's allow-list grants.
//!
//! A handler's failure is either an answer for the model (bad arguments, a missing anchor, a
//! refused write — the model can correct course) or an infrastructure failure that ends the
//! agent (the worktree vanished). Only the second aborts.

mod command;
mod control;
mod files;
pub mod nav;
mod patch;
mod search;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use orchestra_core::llm::ToolDef;
use orchestra_core::plan::Scope;
use orchestra_sys::confine::ConfinedRoot;

pub use control::{Signal, SubtaskRequest};

use super::role::Role;

/// Names of every built-in tool but the symbol tools ([`nav::NAMES`]).
pub const KNOWN: [&str; 10] = [
    "read_file",
    "list_dir",
    "write_file",
    "edit_file",
    "grep",
    "run_command",
    "signal_state",
    "ask",
    "spawn_subtask",
    "complete",
];

/// Returns true if and only if `name` is a built-in tool or a symbol tool.
pub fn is_known(name: &str) -> bool {
    KNOWN.contains(&name) || nav::NAMES.contains(&name)
}

/// Returns every tool name a role may list, for error messages.
pub fn known_names() -> Vec<&'static str> {
    KNOWN.iter().chain(nav::NAMES.iter()).copied().collect()
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    /// Text for the model.
    Text(String),
    /// A control signal for the runtime (state change, question, completion), with the text
    /// the model gets back.
    Signal(Signal, String),
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolFailure {
    /// The model can fix this; the message goes back as an error result.
    Model(String),
    /// The environment is broken; the agent stops.
    Infrastructure(String),
}

impl From<orchestra_sys::confine::ConfineError> for ToolFailure {
    fn from(e: orchestra_sys::confine::ConfineError) -> Self {
        if e.is_infrastructure() {
            ToolFailure::Infrastructure(e.to_string())
        } else {
            ToolFailure::Model(e.to_string())
        }
    }
}

/// Everything a tool may touch: the confined worktree, the scopes writes must satisfy, and a
/// record of what was written.
pub struct ToolContext<'a> {
    pub root: &'a ConfinedRoot,
    /// The role's write scope.
    pub role_scope: Scope,
    pub role_scope_text: Vec<String>,
    /// The packet's declared files, when the agent works on a plan packet.
    pub packet_scope: Option<(Scope, Vec<String>)>,
    /// Paths written so far (relative, normalised).
    pub touched: Mutex<BTreeSet<String>>,
    /// Raised to cancel; long tools poll it.
    pub stop: &'a AtomicBool,
    /// Whether run_command may reach the network.
    pub network: bool,
    /// How run_command is confined; `None` runs commands unrestricted (said in each result).
    pub sandbox: Option<crate::agent::sandbox::Sandbox>,
    /// The symbol index and the navigation counter of this run.
    pub nav: nav::NavState,
}

impl ToolContext<'_> {
    /// Returns the normalised path if `path` may be written, or an explanation the model can
    /// act on.
    pub fn check_write(&self, path: &str) -> Result<String, ToolFailure> {
        let rel = normalise(path).ok_or_else(|| {
            ToolFailure::Model(format!(
                "`{path}` is outside the worktree; use a path relative to the worktree root"
            ))
        })?;
        if !self.role_scope.matches(&rel) {
            return Err(ToolFailure::Model(if self.role_scope_text.is_empty() {
                format!(
                    "writing `{rel}` is refused: this role is read-only. Report what should change in `complete` instead"
                )
            } else {
                format!(
                    "writing `{rel}` is refused: this role may only write files matching {}. Choose a path inside that scope or report the needed change in `complete`",
                    self.role_scope_text.join(", ")
                )
            }));
        }
        if let Some((scope, text)) = &self.packet_scope
            && !scope.matches(&rel)
        {
            return Err(ToolFailure::Model(format!(
                "writing `{rel}` is refused: this packet declared only {}. Keep the change inside those files, or signal `blocked` explaining which file you need",
                text.join(", ")
            )));
        }
        Ok(rel)
    }

    fn record(&self, rel: &str) {
        if let Ok(mut t) = self.touched.lock() {
            t.insert(rel.to_string());
        }
    }
}

/// Resolves `.` and `..` lexically; `None` when the path climbs above the root or is absolute.
pub fn normalise(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// A built-in tool's handler.
pub type HandlerFn = fn(&ToolContext<'_>, &Value) -> Result<ToolResult, ToolFailure>;

/// A tool handler: a built-in function, or a closure holding what it calls (an MCP server).
pub type Handler = std::sync::Arc<
    dyn Fn(&ToolContext<'_>, &Value) -> Result<ToolResult, ToolFailure> + Send + Sync,
>;

/// One tool: its definition for the model and its handler.
#[derive(Clone)]
pub struct Tool {
    pub def: ToolDef,
    pub mutating: bool,
    pub handler: Handler,
}

/// The tools one agent may call, by name.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Tool>,
}

impl Registry {
    /// Returns every built-in tool.
    pub fn builtin() -> Registry {
        let mut r = Registry::default();
        for t in files::tools()
            .into_iter()
            .chain(search::tools())
            .chain(command::tools())
            .chain(control::tools())
            .chain(nav::tools())
        {
            r.register(t);
        }
        r
    }

    /// Adds (or replaces) a tool: the registration point for the navigation tools.
    pub fn register(&mut self, tool: Tool) {
        self.tools.retain(|t| t.def.name != tool.def.name);
        self.tools.push(tool);
    }

    /// Returns the subset `role` may call (`signal_state` and `complete` always included).
    pub fn for_role(&self, role: &Role) -> Registry {
        Registry {
            tools: self
                .tools
                .iter()
                .filter(|t| {
                    matches!(t.def.name.as_str(), "signal_state" | "complete")
                        || role.tools.contains(&t.def.name)
                })
                .cloned()
                .collect(),
        }
    }

    /// Returns the definitions to send to the model.
    pub fn defs(&self) -> Vec<ToolDef> {
        self.tools.iter().map(|t| t.def.clone()).collect()
    }

    /// Returns the tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.def.name == name)
    }

    /// Returns the names of the tools, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.def.name.clone()).collect()
    }
}

/// Returns the string argument `key`, or an error naming it.
pub(crate) fn arg_str<'v>(args: &'v Value, key: &str) -> Result<&'v str, ToolFailure> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolFailure::Model(format!("missing string argument `{key}`")))
}

/// Returns at most `max` bytes of `text`, with a note saying how much was cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output truncated: {} of {} bytes shown]",
        &text[..end],
        end,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_resolves_dots_and_refuses_escapes() {
        assert_eq!(normalise("./src/../src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(normalise("../x"), None);
        assert_eq!(normalise("/etc/passwd"), None);
    }
}

//! The symbol tools (nav_def, nav_refs, nav_callers, …): the navigation queries of
//! [`orchestra_nav::nav::tools`] registered as agent tools over the packet's worktree.
//!
//! The index is opened on the first symbol call, for the worktree the agent is confined to;
//! its blob cache lives in the common git directory, so a fresh packet worktree of a known
//! commit is ready without parsing. Every call refreshes the index first, so the agent sees
//! its own edits. Each call is counted as symbolic navigation in the run's [`NavCounter`].

use std::sync::Mutex;

use serde_json::Value;

use super::{Tool, ToolContext, ToolFailure, ToolResult};
use orchestra_core::llm::ToolDef;
use orchestra_nav::nav::Index;
use orchestra_nav::nav::tools::{self as nav_tools, NavCounter, ToolError};

/// Names of the symbol tools, in the order of [`orchestra_nav::nav::tools::tool_specs`].
pub const NAMES: [&str; 11] = [
    "nav_def",
    "nav_refs",
    "nav_callers",
    "nav_callees",
    "nav_impls",
    "nav_imports",
    "nav_importers",
    "nav_outline",
    "nav_show",
    "nav_search",
    "nav_map",
];

/// The navigation state of one agent run: its lazily opened index and its call counter.
#[derive(Default)]
pub struct NavState {
    index: Mutex<Option<Index>>,
    /// Symbolic versus textual navigation calls of this run.
    pub counter: NavCounter,
    /// Whether the symbol tools are offered to the agent (grep then points at them).
    pub offered: bool,
}

impl NavState {
    /// Returns a state for a run whose registry offers the symbol tools when `offered`.
    pub fn new(offered: bool) -> NavState {
        NavState {
            offered,
            ..NavState::default()
        }
    }
}

/// Returns the symbol tools as agent tools.
pub(super) fn tools() -> Vec<Tool> {
    const HANDLERS: [super::HandlerFn; 11] = [
        call::<0>, call::<1>, call::<2>, call::<3>, call::<4>, call::<5>, call::<6>, call::<7>,
        call::<8>, call::<9>, call::<10>,
    ];
    let specs = nav_tools::tool_specs();
    NAMES
        .iter()
        .zip(HANDLERS)
        .filter_map(|(name, handler)| {
            let spec = specs.iter().find(|s| s.name == *name)?;
            Some(Tool {
                def: ToolDef {
                    name: spec.name.to_string(),
                    description: spec.description.to_string(),
                    parameters: spec.parameters.clone(),
                },
                mutating: false,
                handler: std::sync::Arc::new(handler),
            })
        })
        .collect()
}

/// Runs symbol tool number `I` of [`NAMES`].
fn call<const I: usize>(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    answer(ctx, NAMES[I], args, None)
}

/// Language servers behind the symbol tools of a run's agents: started for a worktree in the
/// background when an agent with symbol tools starts there (or, failing that, with its first
/// question a server can answer; the graph answers until they are ready, with a notice), told
/// of the agents' edits before each question, shared by the run's worktrees where the server
/// takes workspace folders, and shut down when the last agent of the run lets go of them.
pub struct Servers {
    tier: orchestra_nav::lsp::Tier,
    /// The worktrees servers were started for.
    started: Mutex<std::collections::HashSet<std::path::PathBuf>>,
}

impl Servers {
    /// Returns the servers of `settings` (`[nav.lsp]`), or `None` when they are turned off.
    pub fn new(settings: orchestra_nav::lsp::Settings) -> Option<std::sync::Arc<Servers>> {
        settings.enabled.then(|| {
            std::sync::Arc::new(Servers {
                tier: orchestra_nav::lsp::Tier::new(settings),
                started: Mutex::default(),
            })
        })
    }

    /// Starts, on a thread of its own, the servers the worktree at `root` needs, unless they
    /// were started for it already: its index is opened and refreshed there (which also warms
    /// the blob cache the agent's own index reads). Nothing starts when the run has ended by
    /// the time the index is ready.
    pub fn start_early(
        servers: &std::sync::Arc<Servers>,
        root: &orchestra_sys::confine::ConfinedRoot,
    ) {
        let dir = root.root().to_path_buf();
        if !lock(&servers.started).insert(dir.clone()) {
            return;
        }
        let common = root.common_dir().map(std::path::Path::to_path_buf);
        let servers = std::sync::Arc::downgrade(servers);
        let started = std::thread::Builder::new()
            .name("lsp-start".into())
            .spawn(move || {
                let index = match &common {
                    Some(common) => Index::open_in(&dir, common),
                    None => Index::open(&dir),
                };
                let Ok(mut index) = index else { return };
                if let Err(e) = index.refresh() {
                    tracing::info!(error = %e, "language servers not started early");
                    return;
                }
                if let Some(servers) = servers.upgrade() {
                    for notice in servers.tier.start(&index) {
                        tracing::info!(notice, "language server not used");
                    }
                }
            });
        if let Err(e) = started {
            tracing::info!(error = %e, "language servers not started early");
        }
    }

    /// Starts the servers of `index`'s worktree unless they were started already.
    fn start_for(&self, index: &Index) {
        let mut started = lock(&self.started);
        if started.insert(index.root().to_path_buf()) {
            for notice in self.tier.start(index) {
                tracing::info!(notice, "language server not used");
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Replaces the symbol tools of `registry` by ones that ask `servers` first; returns true if
/// and only if one of them is a question a server can answer.
pub fn with_servers(registry: &mut super::Registry, servers: &std::sync::Arc<Servers>) -> bool {
    let mut answerable = false;
    for tool in tools() {
        if registry.get(&tool.def.name).is_none() {
            continue;
        }
        answerable |= orchestra_nav::lsp::Query::of_tool(&tool.def.name).is_some();
        let servers = servers.clone();
        let name = tool.def.name.clone();
        registry.register(Tool {
            handler: std::sync::Arc::new(move |ctx: &ToolContext<'_>, args: &Value| {
                answer(ctx, &name, args, Some(&servers))
            }),
            ..tool
        });
    }
    answerable
}

/// Answers symbol tool `name` from the worktree's index, asking `servers` first when given.
fn answer(
    ctx: &ToolContext<'_>,
    name: &str,
    args: &Value,
    servers: Option<&Servers>,
) -> Result<ToolResult, ToolFailure> {
    let mut slot = ctx
        .nav
        .index
        .lock()
        .map_err(|_| ToolFailure::Infrastructure("the symbol index lock is poisoned".into()))?;
    if slot.is_none() {
        // The common directory recorded when the root was opened, before the agent ran: the
        // worktree's `.git` may have been changed since.
        let index = match ctx.root.common_dir() {
            Some(common) => Index::open_in(ctx.root.root(), common),
            None => Index::open(ctx.root.root()),
        };
        *slot = Some(index.map_err(unavailable)?);
    }
    let Some(index) = slot.as_mut() else {
        return Err(ToolFailure::Infrastructure(
            "the symbol index did not open".into(),
        ));
    };
    // Servers start with the first question they can answer (not for an outline or a map).
    let servers = servers.filter(|_| orchestra_nav::lsp::Query::of_tool(name).is_some());
    let precise = servers.map(|s| {
        s.start_for(index);
        &s.tier as &dyn nav_tools::Precise
    });
    match nav_tools::call_with(index, &ctx.nav.counter, name, args, precise) {
        Ok(text) => Ok(ToolResult::Text(text)),
        Err(ToolError::Arguments(m)) => Err(ToolFailure::Model(m)),
        Err(ToolError::Failed(e)) => Err(unavailable(e)),
    }
}

/// A broken index is not the end of the run: the agent can still read and grep.
fn unavailable(e: orchestra_nav::nav::NavError) -> ToolFailure {
    ToolFailure::Model(format!(
        "the symbol index is unavailable ({e}); use grep and read_file instead"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_navigation_specs() {
        assert_eq!(nav_tools::symbol_tool_names(), NAMES);
        assert_eq!(tools().len(), NAMES.len());
    }
}

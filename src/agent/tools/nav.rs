//! The symbol tools (nav_def, nav_refs, nav_callers, …): the navigation queries of
//! [`crate::nav::tools`] registered as agent tools over the packet's worktree.
//!
//! The index is opened on the first symbol call, for the worktree the agent is confined to;
//! its blob cache lives in the common git directory, so a fresh packet worktree of a known
//! commit is ready without parsing. Every call refreshes the index first, so the agent sees
//! its own edits. Each call is counted as symbolic navigation in the run's [`NavCounter`].

use std::sync::Mutex;

use serde_json::Value;

use super::{Tool, ToolContext, ToolFailure, ToolResult};
use crate::llm::ToolDef;
use crate::nav::Index;
use crate::nav::tools::{self as nav_tools, NavCounter, ToolError};

/// Names of the symbol tools, in the order of [`crate::nav::tools::tool_specs`].
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

/// Language servers behind one agent's symbol tools: started for its worktree with the
/// first navigation call (in the background; the graph answers until they are ready, with a
/// notice), told of the agent's edits before each question, shut down when the agent's
/// registry is dropped.
pub struct Servers {
    tier: crate::lsp::Tier,
    started: std::sync::Once,
}

/// Replaces the symbol tools of `registry` by ones that ask the language servers of
/// `settings` first (`[nav.lsp]`); nothing changes when the settings turn them off.
pub fn with_servers(registry: &mut super::Registry, settings: crate::lsp::Settings) {
    if !settings.enabled {
        return;
    }
    let servers = std::sync::Arc::new(Servers {
        tier: crate::lsp::Tier::new(settings),
        started: std::sync::Once::new(),
    });
    for tool in tools() {
        if registry.get(&tool.def.name).is_none() {
            continue;
        }
        let servers = servers.clone();
        let name = tool.def.name.clone();
        registry.register(Tool {
            handler: std::sync::Arc::new(move |ctx: &ToolContext<'_>, args: &Value| {
                answer(ctx, &name, args, Some(&servers))
            }),
            ..tool
        });
    }
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
    let servers = servers.filter(|_| crate::lsp::Query::of_tool(name).is_some());
    let precise = servers.map(|s| {
        s.started.call_once(|| {
            for notice in s.tier.start(index) {
                tracing::info!(notice, "language server not used");
            }
        });
        &s.tier as &dyn nav_tools::Precise
    });
    match nav_tools::call_with(index, &ctx.nav.counter, name, args, precise) {
        Ok(text) => Ok(ToolResult::Text(text)),
        Err(ToolError::Arguments(m)) => Err(ToolFailure::Model(m)),
        Err(ToolError::Failed(e)) => Err(unavailable(e)),
    }
}

/// A broken index is not the end of the run: the agent can still read and grep.
fn unavailable(e: crate::nav::NavError) -> ToolFailure {
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

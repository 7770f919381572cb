//! The navigation queries as agent tools: a name, a JSON-schema for the arguments, and a call
//! that returns bounded text; plus a `grep` tool that still works but points at the symbol
//! tools, and a counter of symbolic versus textual navigation calls.
//!
//! Bad arguments come back as [`ToolError::Arguments`], a message for the model to read and
//! correct; only [`ToolError::Failed`] (index or git trouble) should abort a turn.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::NavError;
use super::index::Index;
use super::map::MapOptions;
use super::render::{render_imports, render_locations, render_outline, render_places};
use super::target::At;

/// The default answer budget in characters when the caller gives none.
pub const DEFAULT_MAX_CHARS: usize = 8_000;

/// A tool's declaration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// Why a tool call failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model's arguments were wrong; the message tells it how to fix them.
    #[error("{0}")]
    Arguments(String),
    /// The index or git failed; not the model's fault.
    #[error(transparent)]
    Failed(NavError),
}

impl From<NavError> for ToolError {
    fn from(e: NavError) -> Self {
        match e {
            NavError::UnknownFile { .. }
            | NavError::UnknownSymbol { .. }
            | NavError::BadArgument { .. } => ToolError::Arguments(e.to_string()),
            other => ToolError::Failed(other),
        }
    }
}

/// Counts navigation calls of one agent: symbolic (symbol tools) versus textual (grep).
#[derive(Debug, Default)]
pub struct NavCounter {
    symbolic: AtomicU64,
    textual: AtomicU64,
}

impl NavCounter {
    /// Counts one call of a symbol tool.
    pub fn record_symbolic(&self) {
        self.symbolic.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one textual search (grep).
    pub fn record_textual(&self) {
        self.textual.fetch_add(1, Ordering::Relaxed);
    }

    /// Returns (symbolic, textual) call counts.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.symbolic.load(Ordering::Relaxed),
            self.textual.load(Ordering::Relaxed),
        )
    }

    /// Returns the share of navigation calls that were symbolic, `None` before any call.
    pub fn symbolic_share(&self) -> Option<f64> {
        let (s, t) = self.counts();
        (s + t > 0).then(|| s as f64 / (s + t) as f64)
    }
}

fn symbol_schema(extra: Value) -> Value {
    let mut props = json!({
        "symbol": {"type": "string", "description": "Name or qualified name: `send`, `Client.send`, `mod::Type`"},
        "max_chars": {"type": "integer", "minimum": 200, "description": "Answer budget in characters"}
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"type": "object", "properties": props, "required": ["symbol"], "additionalProperties": false})
}

/// The schema of a query about a symbol that a position can narrow (`from`); the symbol may
/// be left out when `from` has a column.
fn target_schema(extra: Value) -> Value {
    let mut props = json!({
        "symbol": {"type": "string", "description": "Name or qualified name: `send`, `Client.send`, `mod::Type`; optional when `from` has a column"},
        "from": {"type": "string", "description": "path:line or path:line:col of a use or definition: answer about the definition the token there denotes (through its qualifier, receiver, imports and scopes) instead of every definition of the name"},
        "max_chars": {"type": "integer", "minimum": 200, "description": "Answer budget in characters"}
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"type": "object", "properties": props, "additionalProperties": false})
}

fn path_schema() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string", "description": "File path relative to the repository root"},
        "max_chars": {"type": "integer", "minimum": 200}
    }, "required": ["path"], "additionalProperties": false})
}

fn context_property() -> Value {
    json!({"context": {"type": "boolean", "description": "Show each place's source line too (default: locations grouped by file)"}})
}

/// Returns the declarations of every navigation tool.
pub fn tool_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "nav_def",
            description: "Where a symbol is defined. Give `from` (path:line, or path:line:col) to resolve the name as used there through its qualifier, receiver, imports and scopes.",
            parameters: target_schema(json!({})),
        },
        ToolSpec {
            name: "nav_refs",
            description: "Every reference to a symbol (with `from`: to the definition the token there denotes), resolved through imports, labelled resolved or candidate.",
            parameters: target_schema(context_property()),
        },
        ToolSpec {
            name: "nav_callers",
            description: "Call sites of a function or method, with the calling definition.",
            parameters: target_schema(context_property()),
        },
        ToolSpec {
            name: "nav_callees",
            description: "Functions and methods a definition calls.",
            parameters: target_schema(context_property()),
        },
        ToolSpec {
            name: "nav_impls",
            description: "Subclasses, implementations and impl blocks of a type or trait.",
            parameters: target_schema(context_property()),
        },
        ToolSpec {
            name: "nav_imports",
            description: "What a file imports, with the files the imports resolve to.",
            parameters: path_schema(),
        },
        ToolSpec {
            name: "nav_importers",
            description: "Files that import the given file.",
            parameters: path_schema(),
        },
        ToolSpec {
            name: "nav_outline",
            description: "The definitions of a file with kinds and lines.",
            parameters: path_schema(),
        },
        ToolSpec {
            name: "nav_show",
            description: "The exact source of one definition.",
            parameters: symbol_schema(json!({})),
        },
        ToolSpec {
            name: "nav_search",
            description: "Find definitions by name pattern (`send*`, substring), optionally by kind.",
            parameters: json!({"type": "object", "properties": {
            "pattern": {"type": "string"}, "kind": {"type": "string", "description": "function, method, class, struct, trait, interface, …"},
            "max_chars": {"type": "integer", "minimum": 200}}, "required": ["pattern"], "additionalProperties": false}),
        },
        ToolSpec {
            name: "nav_map",
            description: "A ranked map of the repository's key definitions within a token budget.",
            parameters: json!({"type": "object", "properties": {
            "focus": {"type": "array", "items": {"type": "string"}}, "mentioned": {"type": "array", "items": {"type": "string"}},
            "tokens": {"type": "integer", "minimum": 64}}, "additionalProperties": false}),
        },
        ToolSpec {
            name: "grep",
            description: "Search file contents with a regular expression (git grep). Prefer the nav_* tools for definitions, references and callers.",
            parameters: json!({"type": "object", "properties": {
            "pattern": {"type": "string"}, "max_chars": {"type": "integer", "minimum": 200}}, "required": ["pattern"], "additionalProperties": false}),
        },
    ]
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ToolError::Arguments(format!("missing string argument `{key}`")))
}

fn max_chars(args: &Value) -> usize {
    args.get("max_chars")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_MAX_CHARS, |n| (n as usize).max(200))
}

/// Returns the `symbol` and `from` arguments of a query about a symbol; at least one is
/// needed.
fn target_args(args: &Value) -> Result<(Option<&str>, Option<At>), ToolError> {
    let symbol = args
        .get("symbol")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    let from = match args.get("from").and_then(Value::as_str) {
        Some(f) => Some(At::parse(f)?),
        None => None,
    };
    if symbol.is_none() && from.as_ref().is_none_or(|f| f.col.is_none()) {
        return Err(ToolError::Arguments(
            "missing string argument `symbol` (or give `from` as path:line:col)".into(),
        ));
    }
    Ok((symbol, from))
}

/// Returns how an answer's title names what it is about: the symbol, or the position.
pub fn title_of(symbol: Option<&str>, from: Option<&At>) -> String {
    match (symbol, from) {
        (Some(s), _) => s.to_string(),
        (None, Some(at)) => format!("{}:{}:{}", at.path, at.line, at.col.unwrap_or(0)),
        (None, None) => String::new(),
    }
}

/// A source of answers more precise than the graph for some tools (a language server),
/// consulted before the graph.
pub trait Precise: Send + Sync {
    /// Answers tool `name` with `args` (refreshing `index` first), or says why the graph
    /// answers instead.
    fn answer(&self, index: &mut Index, name: &str, args: &Value) -> PreciseAnswer;
}

/// What a [`Precise`] source made of a tool call.
pub enum PreciseAnswer {
    /// The whole answer, saying where it came from.
    Answered(String),
    /// The graph answers; the notice (if any) goes first.
    Graph(Option<String>),
}

/// Runs tool `name` like [`call`], asking `precise` first when there is one.
pub fn call_with(
    index: &mut Index,
    counter: &NavCounter,
    name: &str,
    args: &Value,
    precise: Option<&dyn Precise>,
) -> Result<String, ToolError> {
    let Some(precise) = precise else {
        return call(index, counter, name, args);
    };
    if !tool_specs().iter().any(|t| t.name == name) || name == "grep" {
        return call(index, counter, name, args);
    }
    match precise.answer(index, name, args) {
        PreciseAnswer::Answered(text) => {
            counter.record_symbolic();
            Ok(text)
        }
        PreciseAnswer::Graph(None) => call(index, counter, name, args),
        PreciseAnswer::Graph(Some(notice)) => {
            let text = call(index, counter, name, args)?;
            Ok(format!(
                "[graph] {notice}; answered from the symbol graph\n{text}"
            ))
        }
    }
}

/// Returns the `symbol` and `from` arguments of a symbol tool.
pub fn target_of(args: &Value) -> Result<(Option<&str>, Option<At>), ToolError> {
    target_args(args)
}

/// Returns the `max_chars` argument of a tool call, or its default.
pub fn max_chars_of(args: &Value) -> usize {
    max_chars(args)
}

/// Runs tool `name` with JSON `args` on a refreshed index and returns bounded text.
pub fn call(
    index: &mut Index,
    counter: &NavCounter,
    name: &str,
    args: &Value,
) -> Result<String, ToolError> {
    if name == "grep" {
        counter.record_textual();
        return grep(index, str_arg(args, "pattern")?, max_chars(args));
    }
    if !tool_specs().iter().any(|t| t.name == name) {
        return Err(ToolError::Arguments(format!("unknown tool `{name}`")));
    }
    counter.record_symbolic();
    index.refresh()?;
    let index: &Index = index;
    let limit = max_chars(args);
    let context = args
        .get("context")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let text = match name {
        "nav_def" => {
            let (symbol, from) = target_args(args)?;
            render_locations(
                &format!("definition of {}", title_of(symbol, from.as_ref())),
                &index.definition_at(symbol, from.as_ref())?,
                limit,
                false,
            )
            .text
        }
        "nav_refs" | "nav_callers" | "nav_callees" | "nav_impls" => {
            let (symbol, from) = target_args(args)?;
            places(index, name, symbol, from.as_ref(), limit, context)?
        }
        "nav_imports" | "nav_importers" => imports(index, name, str_arg(args, "path")?, limit)?,
        "nav_outline" => {
            let p = str_arg(args, "path")?;
            render_outline(p, &index.outline(p)?, limit, false).text
        }
        "nav_show" => show(index, str_arg(args, "symbol")?, limit)?,
        "nav_search" => {
            let p = str_arg(args, "pattern")?;
            let kind = args.get("kind").and_then(Value::as_str);
            render_locations(
                &format!("definitions matching {p}"),
                &index.search(p, kind)?,
                limit,
                false,
            )
            .text
        }
        _ => repo_map(index, args),
    };
    Ok(text)
}

/// Runs one of the tools that list the places of `symbol`: `nav_refs`, `nav_callers`,
/// `nav_callees` or `nav_impls`.
fn places(
    index: &Index,
    tool: &str,
    symbol: Option<&str>,
    from: Option<&At>,
    limit: usize,
    context: bool,
) -> Result<String, ToolError> {
    let what = title_of(symbol, from);
    let (title, places) = match tool {
        "nav_refs" => (
            format!("references to {what}"),
            index.references_at(symbol, from)?,
        ),
        "nav_callers" => (
            format!("callers of {what}"),
            index.callers_at(symbol, from)?,
        ),
        "nav_callees" => (
            format!("callees of {what}"),
            index.callees_at(symbol, from)?,
        ),
        _ => (
            format!("implementations of {what}"),
            index.implementations_at(symbol, from)?,
        ),
    };
    let note = index.ambiguity_note(symbol, from);
    let budget = limit.saturating_sub(note.as_ref().map_or(0, |n| n.chars().count() + 1));
    let text = render_places(&title, &places, budget.max(200), false, context).text;
    Ok(match note {
        Some(n) => format!("{n}\n{text}"),
        None => text,
    })
}

/// Runs `nav_imports` or `nav_importers` on the file `path`.
fn imports(index: &Index, tool: &str, path: &str, limit: usize) -> Result<String, ToolError> {
    let (title, edges) = match tool {
        "nav_imports" => (format!("imports of {path}"), index.imports_of(path)?),
        _ => (format!("importers of {path}"), index.importers_of(path)?),
    };
    Ok(render_imports(&title, &edges, limit, false).text)
}

/// Runs `nav_show`: the source of every definition of `symbol`, each one replaced by a note
/// once the answer would go over `limit` characters.
fn show(index: &Index, symbol: &str, limit: usize) -> Result<String, ToolError> {
    let mut out = String::new();
    for src in index.show(symbol)? {
        let head = format!(
            "{}:{}-{}\n",
            src.location.path, src.location.line, src.location.end_line
        );
        if out.len() + head.len() + src.source.len() > limit {
            out.push_str(&format!(
                "{head}(source of {} lines not shown: over the {limit}-character limit)\n",
                src.location.end_line + 1 - src.location.line
            ));
        } else {
            out.push_str(&head);
            out.push_str(&src.source);
            out.push('\n');
        }
    }
    Ok(out)
}

/// Runs `nav_map`: the repository map under the `tokens` budget, ranked towards `focus` and
/// `mentioned`.
fn repo_map(index: &Index, args: &Value) -> String {
    let list = |k: &str| -> Vec<String> {
        args.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let tokens = args.get("tokens").and_then(Value::as_u64).unwrap_or(1024) as usize;
    index.repo_map(&MapOptions {
        focus: list("focus"),
        mentioned: list("mentioned"),
        tokens,
    })
}

/// The note every grep answer ends with, pointing at the symbol tools.
pub const GREP_POINTER: &str = "\nhint: for definitions, references, callers and implementations use nav_def, nav_refs, nav_callers and nav_impls — they resolve imports and scopes that grep cannot.\n";

/// Returns the names of the symbol tools (every tool of [`tool_specs`] but `grep`).
pub fn symbol_tool_names() -> Vec<&'static str> {
    tool_specs()
        .into_iter()
        .map(|t| t.name)
        .filter(|n| *n != "grep")
        .collect()
}

/// Runs `git grep` in the worktree and appends a pointer to the symbol tools.
fn grep(index: &Index, pattern: &str, limit: usize) -> Result<String, ToolError> {
    const POINTER: &str = GREP_POINTER;
    let git = index.git().map_err(ToolError::Failed)?;
    let out = match git.grep(pattern) {
        Ok(o) => o,
        Err(orchestra_git::git::GitError::Failed { stderr, .. }) => {
            return Err(ToolError::Arguments(format!("grep failed: {stderr}")));
        }
        Err(e) => return Err(ToolError::Failed(e.into())),
    };
    let total = out.lines().count();
    let budget = limit.saturating_sub(POINTER.len() + 120);
    let mut text = String::new();
    let mut shown = 0;
    for line in out.lines() {
        if text.len() + line.len() + 1 > budget {
            break;
        }
        text.push_str(line);
        text.push('\n');
        shown += 1;
    }
    if shown < total {
        text.push_str(&format!(
            "note: {shown} of {total} matching lines shown (over the {limit}-character limit)\n"
        ));
    } else if total == 0 {
        text.push_str("no matches\n");
    }
    text.push_str(POINTER);
    Ok(text)
}

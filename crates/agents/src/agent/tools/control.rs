//! The control tools: signal_state, ask, spawn_subtask and complete. They change no file
//! themselves; they tell the runtime something, and the loop acts on the [`Signal`].

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolFailure, ToolResult, arg_str};
use crate::agent::state::WorkerState;
use orchestra_core::llm::ToolDef;

/// What a control tool asks the runtime to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    State {
        state: WorkerState,
        reason: String,
    },
    Ask {
        question: String,
        to: Option<String>,
    },
    /// Run a subtask in a child packet and merge its work back (see [`SubtaskRequest`]).
    Spawn(SubtaskRequest),
    Complete {
        summary: String,
        touched_files: Vec<String>,
        learnings: Vec<String>,
    },
}

/// A subtask an agent asked for: a child packet whose declared files lie within the
/// parent's, worked on by `role` (default coder) in its own worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubtaskRequest {
    pub title: String,
    pub description: String,
    pub files: Vec<String>,
    pub validation: Vec<String>,
    pub role: Option<String>,
}

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            def: ToolDef {
                name: "signal_state".into(),
                description: "Reports a change of your state with the reason: blocked, waiting_for_input, waiting_for_subtask, running.".into(),
                parameters: json!({"type": "object", "properties": {
                    "state": {"type": "string", "enum": ["running", "waiting_for_input", "waiting_for_subtask", "blocked"]},
                    "reason": {"type": "string"}},
                    "required": ["state", "reason"]}),
            },
            mutating: false,
            handler: std::sync::Arc::new(signal_state),
        },
        Tool {
            def: ToolDef {
                name: "ask".into(),
                description: "Asks a human (or the named role) a question you cannot answer from the code.".into(),
                parameters: json!({"type": "object", "properties": {
                    "question": {"type": "string"},
                    "to": {"type": "string", "description": "a role name; default the human"}},
                    "required": ["question"]}),
            },
            mutating: false,
            handler: std::sync::Arc::new(ask),
        },
        Tool {
            def: ToolDef {
                name: "spawn_subtask".into(),
                description: "Delegates a self-contained part of your packet to a child agent working in its own worktree, forked from your committed work; waits for it and merges its work into your worktree. `files` must lie within your packet's files.".into(),
                parameters: json!({"type": "object", "properties": {
                    "title": {"type": "string", "description": "one line"},
                    "description": {"type": "string", "description": "the child's instructions"},
                    "files": {"type": "array", "items": {"type": "string"}, "description": "paths or globs the child may change, within yours"},
                    "validation": {"type": "array", "items": {"type": "string"}, "description": "shell commands that must pass in the child's worktree"},
                    "role": {"type": "string", "description": "default coder"}},
                    "required": ["title", "description", "files"]}),
            },
            mutating: true,
            handler: std::sync::Arc::new(spawn_subtask),
        },
        Tool {
            def: ToolDef {
                name: "complete".into(),
                description: "Ends your work: a summary of what you did, the files you touched, and what you learned that others should know.".into(),
                parameters: json!({"type": "object", "properties": {
                    "summary": {"type": "string"},
                    "touched_files": {"type": "array", "items": {"type": "string"}},
                    "learnings": {"type": "array", "items": {"type": "string"}}},
                    "required": ["summary"]}),
            },
            mutating: false,
            handler: std::sync::Arc::new(complete),
        },
    ]
}

fn signal_state(_: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let name = arg_str(args, "state")?;
    let reason = arg_str(args, "reason").unwrap_or("").to_string();
    let state = WorkerState::parse(name).map_err(ToolFailure::Model)?;
    Ok(ToolResult::Signal(
        Signal::State { state, reason },
        format!("state noted: {name}"),
    ))
}

fn ask(_: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let question = arg_str(args, "question")?.to_string();
    let to = args["to"].as_str().map(str::to_string);
    Ok(ToolResult::Signal(
        Signal::Ask { question, to },
        "question recorded".into(),
    ))
}

fn spawn_subtask(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let text = |k: &str| -> Result<String, ToolFailure> {
        let v = arg_str(args, k)?.trim().to_string();
        if v.is_empty() {
            return Err(ToolFailure::Model(format!(
                "`{k}` is empty; describe the subtask"
            )));
        }
        Ok(v)
    };
    let list = |k: &str| -> Result<Vec<String>, ToolFailure> {
        match &args[k] {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| {
                            ToolFailure::Model(format!("`{k}` must be a list of non-empty strings"))
                        })
                })
                .collect(),
            _ => Err(ToolFailure::Model(format!(
                "`{k}` must be a list of strings"
            ))),
        }
    };
    let (title, description) = (text("title")?, text("description")?);
    let files = list("files")?;
    if files.is_empty() {
        return Err(ToolFailure::Model(
            "`files` is empty; list the paths (within your packet's files) the subtask may change"
                .into(),
        ));
    }
    if let Some((scope, declared)) = &ctx.packet_scope {
        let outside: Vec<&str> = files
            .iter()
            .filter(|f| !within(scope, declared, f))
            .map(String::as_str)
            .collect();
        if !outside.is_empty() {
            return Err(ToolFailure::Model(format!(
                "the subtask's files {} are outside your packet's files ({}); a subtask may only change files your packet declared",
                outside.join(", "),
                declared.join(", ")
            )));
        }
    }
    let role = args["role"]
        .as_str()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    Ok(ToolResult::Signal(
        Signal::Spawn(SubtaskRequest {
            title,
            description,
            files,
            validation: list("validation")?,
            role,
        }),
        "subtask finished".into(),
    ))
}

/// Returns true if and only if every path `pattern` can name is inside the parent's scope: a
/// plain path the scope matches, one of the parent's own patterns, or a glob beneath a
/// directory the parent owns whole (`dir/**`).
fn within(scope: &orchestra_core::plan::Scope, declared: &[String], pattern: &str) -> bool {
    let Some(rel) = super::normalise(pattern) else {
        return false;
    };
    let is_glob = rel.contains(['*', '?', '[', '{']);
    if !is_glob {
        return !rel.is_empty() && scope.matches(&rel);
    }
    declared.iter().any(|d| {
        d == &rel
            || d == "**"
            || d.strip_suffix("/**")
                .is_some_and(|dir| rel.starts_with(&format!("{dir}/")))
    })
}

fn complete(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let summary = arg_str(args, "summary")?.to_string();
    let list = |k: &str| -> Vec<String> {
        args[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let mut touched = list("touched_files");
    if let Ok(t) = ctx.touched.lock() {
        for p in t.iter() {
            if !touched.contains(p) {
                touched.push(p.clone());
            }
        }
    }
    Ok(ToolResult::Signal(
        Signal::Complete {
            summary,
            touched_files: touched,
            learnings: list("learnings"),
        },
        "completion recorded".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtask_files_must_lie_within_the_parent_scope() {
        let declared = vec!["src/a.rs".to_string(), "docs/**".to_string()];
        let scope = orchestra_core::plan::Scope::new(&declared).unwrap();
        let ok = |p: &str| within(&scope, &declared, p);
        assert!(ok("src/a.rs") && ok("./src/a.rs") && ok("docs/x/y.md"));
        assert!(ok("docs/**") && ok("docs/guide/*.md"));
        assert!(!ok("src/b.rs") && !ok("src/*.rs") && !ok("../src/a.rs") && !ok("**"));
    }
}

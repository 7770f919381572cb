//! grep: literal text search through the confined worktree.
//!
//! Deliberately simple; the symbol tools (nav_def, nav_refs, nav_callers, …) answer "where
//! is X defined / used" better, so each answer points at them when the role has them, and
//! each call counts as textual navigation.

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolFailure, ToolResult, arg_str, truncate};
use orchestra_core::llm::ToolDef;
use orchestra_sys::confine::EntryKind;

const MAX_FILE: u64 = 1024 * 1024;
const MAX_FILES: usize = 20_000;

pub(super) fn tools() -> Vec<Tool> {
    vec![Tool {
        def: ToolDef {
            name: "grep".into(),
            description: "Finds lines containing a literal text in the worktree's files (case-sensitive unless ignore_case). For definitions and uses of a symbol prefer the symbol tools when available.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "literal text, not a regular expression"},
                "path": {"type": "string", "description": "directory or file to search; default ."},
                "ignore_case": {"type": "boolean"},
                "max_results": {"type": "integer", "minimum": 1}},
                "required": ["pattern"]}),
        },
        mutating: false,
        handler: std::sync::Arc::new(grep),
    }]
}

fn grep(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    ctx.nav.counter.record_textual();
    let pattern = arg_str(args, "pattern")?;
    if pattern.is_empty() {
        return Err(ToolFailure::Model("`pattern` is empty".into()));
    }
    let ignore_case = args["ignore_case"].as_bool().unwrap_or(false);
    let needle = if ignore_case {
        pattern.to_lowercase()
    } else {
        pattern.to_string()
    };
    let max = args["max_results"].as_u64().unwrap_or(100).clamp(1, 1000) as usize;
    let start = args["path"]
        .as_str()
        .unwrap_or(".")
        .trim_end_matches('/')
        .to_string();
    let mut stack = vec![start];
    let mut hits = Vec::new();
    let mut seen = 0;
    while let Some(path) = stack.pop() {
        if hits.len() >= max || seen >= MAX_FILES {
            break;
        }
        let info = ctx.root.metadata(&path)?;
        if info.kind == EntryKind::Dir {
            let mut entries = ctx.root.list_dir(&path)?;
            entries.sort_by(|a, b| b.name.cmp(&a.name));
            for e in entries {
                if e.name == ".git" || e.name == "target" || e.name == "node_modules" {
                    continue;
                }
                if matches!(e.kind, EntryKind::Dir | EntryKind::File) {
                    stack.push(if path == "." {
                        e.name
                    } else {
                        format!("{path}/{}", e.name)
                    });
                }
            }
            continue;
        }
        seen += 1;
        if info.size > MAX_FILE {
            continue;
        }
        let Ok(bytes) = ctx.root.read(&path) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let found = if ignore_case {
                line.to_lowercase().contains(&needle)
            } else {
                line.contains(&needle)
            };
            if found {
                hits.push(format!("{path}:{}: {}", n + 1, line.trim_end()));
                if hits.len() >= max {
                    break;
                }
            }
        }
    }
    let mut out = if hits.is_empty() {
        format!("no line contains `{pattern}`")
    } else {
        hits.join("\n")
    };
    if hits.len() >= max {
        out.push_str(&format!(
            "\n[stopped at {max} results; narrow `path` or the pattern]"
        ));
    }
    let mut out = truncate(&out, 48 * 1024);
    if ctx.nav.offered {
        out.push_str(orchestra_nav::nav::tools::GREP_POINTER);
    }
    Ok(ToolResult::Text(out))
}

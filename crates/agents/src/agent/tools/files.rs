//! The file tools: read_file, list_dir, write_file and edit_file, all through the confined
//! worktree root.

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolFailure, ToolResult, arg_str, truncate};
use orchestra_core::llm::ToolDef;
use orchestra_sys::confine::EntryKind;

/// Largest answer a read returns before cutting.
const MAX_READ: usize = 48 * 1024;

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            def: ToolDef {
                name: "read_file".into(),
                description: "Reads a text file of the worktree, with line numbers. Give start_line/end_line (1-based, inclusive) to read part of a large file.".into(),
                parameters: json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "path relative to the worktree root"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}},
                    "required": ["path"]}),
            },
            mutating: false,
            handler: std::sync::Arc::new(read_file),
        },
        Tool {
            def: ToolDef {
                name: "list_dir".into(),
                description: "Lists a directory of the worktree (names, kinds, sizes).".into(),
                parameters: json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "directory relative to the root; default ."}}}),
            },
            mutating: false,
            handler: std::sync::Arc::new(list_dir),
        },
        Tool {
            def: ToolDef {
                name: "write_file".into(),
                description: "Creates or replaces a whole file. Prefer edit_file for changes to existing files.".into(),
                parameters: json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"]}),
            },
            mutating: true,
            handler: std::sync::Arc::new(write_file),
        },
        Tool {
            def: ToolDef {
                name: "edit_file".into(),
                description: "Changes an existing file, either by replacing an exact text (`search` must occur exactly once — include surrounding lines to make it unique — unless replace_all is true) or by applying a unified diff (`diff`: `@@ -12,3 +12,4 @@` hunks of ` context`, `-removed` and `+added` lines). Give search/replace or diff, not both.".into(),
                parameters: json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "search": {"type": "string", "description": "exact existing text, whitespace included"},
                    "replace": {"type": "string"},
                    "replace_all": {"type": "boolean"},
                    "diff": {"type": "string", "description": "a unified diff of this one file"}},
                    "required": ["path"]}),
            },
            mutating: true,
            handler: std::sync::Arc::new(edit_file),
        },
    ]
}

fn read_file(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let path = arg_str(args, "path")?;
    let bytes = ctx.root.read(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolFailure::Model(format!("`{path}` is not a text file (not UTF-8)")))?;
    let total = text.lines().count();
    let start = args["start_line"].as_u64().unwrap_or(1).max(1) as usize;
    let end = args["end_line"]
        .as_u64()
        .map(|e| e as usize)
        .unwrap_or(total)
        .min(total);
    if start > total.max(1) {
        return Err(ToolFailure::Model(format!(
            "`{path}` has {total} lines; start_line {start} is past its end"
        )));
    }
    let mut out = String::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .skip(start - 1)
        .take(end + 1 - start)
    {
        out.push_str(&format!("{:>5}\t{line}\n", n + 1));
    }
    if start > 1 || end < total {
        out.push_str(&format!("[lines {start}–{end} of {total}]\n"));
    }
    Ok(ToolResult::Text(truncate(&out, MAX_READ)))
}

fn list_dir(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let path = args["path"].as_str().unwrap_or(".");
    let mut entries = ctx.root.list_dir(path)?;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::new();
    for e in entries {
        let line = match e.kind {
            EntryKind::Dir => format!("{}/\n", e.name),
            EntryKind::Symlink => format!("{} -> (symlink)\n", e.name),
            _ => format!("{}\t{} bytes\n", e.name, e.size),
        };
        out.push_str(&line);
    }
    if out.is_empty() {
        out = "(empty directory)".into();
    }
    Ok(ToolResult::Text(truncate(&out, MAX_READ)))
}

fn write_file(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let path = arg_str(args, "path")?;
    let content = arg_str(args, "content")?;
    let rel = ctx.check_write(path)?;
    if let Some(parent) = rel.rsplit_once('/').map(|(p, _)| p) {
        ctx.root.create_dir_all(parent)?;
    }
    ctx.root.write(&rel, content.as_bytes())?;
    ctx.record(&rel);
    Ok(ToolResult::Text(format!(
        "wrote {rel} ({} bytes, {} lines)",
        content.len(),
        content.lines().count()
    )))
}

fn edit_file(ctx: &ToolContext<'_>, args: &Value) -> Result<ToolResult, ToolFailure> {
    let path = arg_str(args, "path")?;
    if let Some(diff) = args.get("diff").and_then(Value::as_str) {
        if args.get("search").is_some() || args.get("replace").is_some() {
            return Err(ToolFailure::Model(
                "give either `diff` or `search`/`replace`, not both".into(),
            ));
        }
        return edit_by_diff(ctx, path, diff);
    }
    if args.get("search").is_none() {
        return Err(ToolFailure::Model(
            "give `search` and `replace` (exact text replacement) or `diff` (a unified diff)"
                .into(),
        ));
    }
    let search = arg_str(args, "search")?;
    let replace = arg_str(args, "replace")?;
    let all = args["replace_all"].as_bool().unwrap_or(false);
    let rel = ctx.check_write(path)?;
    if search.is_empty() {
        return Err(ToolFailure::Model(
            "`search` is empty; give the exact text to replace (use write_file to create a file)"
                .into(),
        ));
    }
    let text = String::from_utf8(ctx.root.read(&rel)?)
        .map_err(|_| ToolFailure::Model(format!("`{rel}` is not a text file (not UTF-8)")))?;
    let count = text.matches(search).count();
    if count == 0 {
        return Err(ToolFailure::Model(format!(
            "the search text was not found in `{rel}`{}. Read the file again and copy the text exactly, whitespace included",
            near_miss(&text, search)
        )));
    }
    if count > 1 && !all {
        let lines: Vec<String> = text
            .match_indices(search)
            .take(5)
            .map(|(i, _)| (text[..i].lines().count().max(1)).to_string())
            .collect();
        return Err(ToolFailure::Model(format!(
            "the search text occurs {count} times in `{rel}` (near lines {}); include more surrounding text to make it unique, or set replace_all",
            lines.join(", ")
        )));
    }
    let new = if all {
        text.replace(search, replace)
    } else {
        text.replacen(search, replace, 1)
    };
    ctx.root.write(&rel, new.as_bytes())?;
    ctx.record(&rel);
    Ok(ToolResult::Text(format!(
        "edited {rel}: {count} replacement(s)"
    )))
}

/// Applies a unified diff to `path`; nothing is written unless every hunk applies.
fn edit_by_diff(ctx: &ToolContext<'_>, path: &str, diff: &str) -> Result<ToolResult, ToolFailure> {
    let rel = ctx.check_write(path)?;
    let text = String::from_utf8(ctx.root.read(&rel)?)
        .map_err(|_| ToolFailure::Model(format!("`{rel}` is not a text file (not UTF-8)")))?;
    let new = super::patch::apply(&text, diff, &rel).map_err(ToolFailure::Model)?;
    let hunks = diff.lines().filter(|l| l.starts_with("@@")).count();
    ctx.root.write(&rel, new.as_bytes())?;
    ctx.record(&rel);
    Ok(ToolResult::Text(format!(
        "edited {rel}: {hunks} hunk(s) applied"
    )))
}

/// Returns a hint naming the line that best matches the first line of `search`, if any.
fn near_miss(text: &str, search: &str) -> String {
    let first = search
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if first.is_empty() {
        return String::new();
    }
    text.lines()
        .enumerate()
        .find(|(_, l)| l.trim() == first || (first.len() > 8 && l.contains(first)))
        .map(|(n, _)| format!(" (its first line appears at line {}, so the difference is further on or in whitespace)", n + 1))
        .unwrap_or_default()
}

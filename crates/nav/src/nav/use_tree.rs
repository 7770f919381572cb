//! Unfolds Rust `use` trees (`use a::{b::{self, C as D}, e::*}`) into one import per bound
//! name; a query can match the tree but not rebuild the paths inside its nesting.
//!
//! Each import carries the span of the name as written (`C` above, on whatever line of a
//! multi-line tree it stands), not of the whole statement, so an import site is reported
//! where the name is.

use tree_sitter::Node;

use super::extract::{node_text, span_of};
use super::facts::{Import, ImportKind, Span};

/// Returns the span of the last segment of a path (`c` in `b::c`), where the name is written.
fn last_segment_span(node: Node) -> Span {
    match node.kind() {
        "scoped_identifier" => node
            .child_by_field_name("name")
            .map_or_else(|| span_of(node), span_of),
        _ => span_of(node),
    }
}

/// Unfolds a Rust `use` tree into one import per bound name. `_statement` is the span of the
/// whole `use` item; every import takes the span of its own name instead.
pub(crate) fn rust_use_tree(
    node: Node,
    source: &[u8],
    prefix: &mut Vec<String>,
    reexport: bool,
    _statement: Span,
    out: &mut Vec<Import>,
) {
    unfold(node, source, prefix, reexport, out);
}

fn unfold(
    node: Node,
    source: &[u8],
    prefix: &mut Vec<String>,
    reexport: bool,
    out: &mut Vec<Import>,
) {
    let segments = |n: Node| -> Vec<String> {
        node_text(n, source)
            .split("::")
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let push = |path: Vec<String>, alias: Option<String>, span: Span, out: &mut Vec<Import>| {
        let Some((last, module)) = path.split_last() else {
            return;
        };
        if last == "self" {
            // `use a::b::{self}` binds the module `b`.
            if let Some((m_last, _)) = module.split_last() {
                out.push(Import {
                    kind: ImportKind::Module,
                    module: module.join("::"),
                    name: String::new(),
                    alias: alias.unwrap_or_else(|| m_last.clone()),
                    reexport,
                    span,
                });
            }
            return;
        }
        out.push(Import {
            kind: ImportKind::Name,
            module: module.join("::"),
            name: last.clone(),
            alias: alias.unwrap_or_else(|| last.clone()),
            reexport,
            span,
        });
    };
    match node.kind() {
        "use_as_clause" => {
            let mut path = prefix.clone();
            if let Some(p) = node.child_by_field_name("path") {
                path.extend(segments(p));
            }
            let alias = node
                .child_by_field_name("alias")
                .map(|a| node_text(a, source));
            let span = node
                .child_by_field_name("path")
                .map_or_else(|| span_of(node), last_segment_span);
            push(path, alias, span, out);
        }
        "scoped_use_list" => {
            let added = node
                .child_by_field_name("path")
                .map(segments)
                .unwrap_or_default();
            let n = added.len();
            prefix.extend(added);
            if let Some(list) = node.child_by_field_name("list") {
                unfold(list, source, prefix, reexport, out);
            }
            prefix.truncate(prefix.len() - n);
        }
        "use_list" => {
            let mut c = node.walk();
            let children: Vec<Node> = node.named_children(&mut c).collect();
            for child in children {
                unfold(child, source, prefix, reexport, out);
            }
        }
        "use_wildcard" => {
            let mut path = prefix.clone();
            let mut c = node.walk();
            if let Some(p) = node.named_children(&mut c).next() {
                path.extend(segments(p));
            }
            out.push(Import {
                kind: ImportKind::Glob,
                module: path.join("::"),
                name: String::new(),
                alias: String::new(),
                reexport,
                span: span_of(node),
            });
        }
        _ => {
            let mut path = prefix.clone();
            path.extend(segments(node));
            push(path, None, last_segment_span(node), out);
        }
    }
}

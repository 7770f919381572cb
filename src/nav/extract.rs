//! Turns one file's bytes into [`FileFacts`] by running its language's query files.
//!
//! The queries say *what* each node is; this file adds what queries cannot: nesting of
//! definitions, which names are local to a function (and so never refer to a global), which
//! definitions are exported, and the unfolding of Rust `use` trees.

use std::collections::{HashMap, HashSet};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, QueryCursor};

use super::NavError;
use super::doc_links::doc_link_refs;
use super::facts::{Def, FileFacts, Import, ImportKind, Ref, Relation, Span};
use super::lang::Lang;
use super::use_tree::rust_use_tree;

/// Bumped when the extraction code (not the queries) changes what it produces.
pub const EXTRACTOR_VERSION: &str = "3";

/// Files larger than this are indexed as empty: they are almost always generated or minified.
pub const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

/// A reusable parser and query cursor; one per thread.
pub struct Extractor {
    parser: Parser,
    cursor: QueryCursor,
}

/// A reference as matched, before filtering; text is only copied for references kept.
struct RawRef {
    pattern: usize,
    name: (usize, usize),
    node: Span,
    kind: &'static str,
    qualifier: Option<(usize, usize)>,
}

impl Extractor {
    /// Returns a fresh extractor.
    pub fn new() -> Self {
        Extractor {
            parser: Parser::new(),
            cursor: QueryCursor::new(),
        }
    }

    /// Returns the facts of `source` in language `lang`.
    pub fn extract(&mut self, lang: Lang, source: &[u8]) -> Result<FileFacts, NavError> {
        if source.len() > MAX_FILE_BYTES {
            return Ok(FileFacts::default());
        }
        let queries = lang.queries()?;
        self.parser
            .set_language(&lang.grammar())
            .map_err(|e| NavError::Query {
                lang: lang.name(),
                message: e.to_string(),
            })?;
        let Some(tree) = self.parser.parse(source, None) else {
            return Ok(FileFacts::default());
        };
        let root = tree.root_node();
        let mut facts = FileFacts::default();
        let mut excluded: HashSet<(usize, usize)> = HashSet::new();
        let mut import_spans: Vec<(usize, usize)> = Vec::new();

        // Imports first: names inside import statements are not references.
        let q = &queries.imports;
        let names = q.capture_names();
        let mut seen_stmt: HashSet<(usize, usize, usize)> = HashSet::new();
        let mut matches = self.cursor.matches(q, root, source);
        while let Some(m) = matches.next() {
            let mut role = None;
            let (mut module, mut name, mut alias, mut tree_node) = (None, None, None, None);
            for c in m.captures() {
                match names[c.index as usize] {
                    "module" => module = Some(c.node),
                    "name" => name = Some(c.node),
                    "alias" => alias = Some(c.node),
                    "tree" => tree_node = Some(c.node),
                    r if r.starts_with("import.")
                        || r.starts_with("reexport.")
                        || r.starts_with("export.") =>
                    {
                        role = Some((r, c.node))
                    }
                    _ => {}
                }
            }
            let Some((role, stmt)) = role else { continue };
            // `pub use` and `use` both match a use declaration; the earlier pattern wins.
            let key = (
                stmt.start_byte(),
                stmt.end_byte(),
                name.map_or(0, |n| n.start_byte()),
            );
            if !seen_stmt.insert(key) {
                continue;
            }
            import_spans.push((stmt.start_byte(), stmt.end_byte()));
            let text = |n: Option<Node>| n.map(|n| node_text(n, source)).unwrap_or_default();
            let span = span_of(stmt);
            let (family, kind) = role.split_once('.').unwrap_or((role, ""));
            let reexport = family == "reexport";
            if kind == "rust" {
                if let Some(t) = tree_node {
                    rust_use_tree(
                        t,
                        source,
                        &mut Vec::new(),
                        reexport,
                        span,
                        &mut facts.imports,
                    );
                }
                continue;
            }
            let module = text(module).trim_matches(['"', '`', '\'']).to_string();
            let name_t = text(name);
            let alias_t = text(alias);
            let import = match (family, kind) {
                ("export", "local") => Import {
                    // `export { x as y }`: `y` names the local `x`.
                    kind: ImportKind::Name,
                    module: String::new(),
                    alias: alias_t,
                    name: name_t,
                    reexport: true,
                    span,
                },
                ("export", _) => Import {
                    // `export default foo`: `default` names the local `foo`.
                    kind: ImportKind::Name,
                    module: String::new(),
                    name: name_t,
                    alias: "default".into(),
                    reexport: true,
                    span,
                },
                (_, "module") => Import {
                    kind: ImportKind::Module,
                    alias: if alias_t.is_empty() {
                        default_module_alias(lang, &module)
                    } else {
                        alias_t
                    },
                    module,
                    name: String::new(),
                    reexport,
                    span,
                },
                (_, "glob") => Import {
                    kind: ImportKind::Glob,
                    module,
                    name: String::new(),
                    alias: String::new(),
                    reexport,
                    span,
                },
                (_, "default") => Import {
                    kind: ImportKind::Name,
                    module,
                    name: "default".into(),
                    alias: alias_t,
                    reexport,
                    span,
                },
                _ => Import {
                    kind: ImportKind::Name,
                    alias: if alias_t.is_empty() {
                        name_t.clone()
                    } else {
                        alias_t
                    },
                    module,
                    name: name_t,
                    reexport,
                    span,
                },
            };
            // Python `import a.b` binds `a`; keep the dotted module for resolution.
            facts.imports.push(import);
        }

        // Tags: definitions, containers, relations, locals, references.
        let q = &queries.tags;
        let names = q.capture_names();
        let mut defs: Vec<(Node, Def)> = Vec::new();
        let mut seen_defs: HashSet<(usize, usize)> = HashSet::new();
        let mut locals: Vec<(usize, String)> = Vec::new();
        let mut raw_refs: Vec<RawRef> = Vec::new();
        let mut docs: Vec<Node> = Vec::new();
        let mut matches = self.cursor.matches(q, root, source);
        while let Some(m) = matches.next() {
            let mut role: Option<(&str, Node)> = None;
            let (mut name, mut body, mut qualifier, mut subject, mut target, mut receiver) =
                (None, None, None, None, None, None);
            let mut receiver_var = None;
            for c in m.captures() {
                match names[c.index as usize] {
                    "name" => name = Some(c.node),
                    "body" => body = Some(c.node),
                    "qualifier" => qualifier = Some(c.node),
                    "subject" => subject = Some(c.node),
                    "target" => target = Some(c.node),
                    "receiver" => receiver = Some(c.node),
                    "receiver_var" => receiver_var = Some(c.node),
                    "local" => {
                        locals.push((c.node.start_byte(), node_text(c.node, source)));
                        excluded.insert((c.node.start_byte(), c.node.end_byte()));
                    }
                    "ignore" => {
                        excluded.insert((c.node.start_byte(), c.node.end_byte()));
                    }
                    "doc" => docs.push(c.node),
                    r if r.starts_with("definition.")
                        || r.starts_with("container.")
                        || r.starts_with("reference.")
                        || r.starts_with("relation.") =>
                    {
                        // A capture that is also `@name` (Go `type_identifier`) names itself.
                        role = Some((r, c.node));
                    }
                    _ => {}
                }
            }
            let Some((role, node)) = role else { continue };
            let (family, kind) = role.split_once('.').unwrap_or((role, ""));
            let name = name.unwrap_or(node);
            match family {
                "definition" | "container" => {
                    if !seen_defs.insert((node.start_byte(), node.end_byte())) {
                        continue;
                    }
                    let name_t = node_text(name, source);
                    if name_t.is_empty() {
                        continue;
                    }
                    excluded.insert((name.start_byte(), name.end_byte()));
                    let kind = if family == "container" { "impl" } else { kind };
                    defs.push((
                        node,
                        Def {
                            exported: is_exported(lang, node, &name_t, source),
                            name: name_t,
                            kind: kind.to_string(),
                            parent: None,
                            span: span_of(node),
                            name_span: span_of(name),
                            body_start: body.map_or(name.end_byte(), |b| b.start_byte()) as u32,
                            signature: signature(node, source),
                            owner: receiver.map(|r| node_text(r, source)).unwrap_or_default(),
                            receiver_var: receiver_var
                                .map(|r| node_text(r, source))
                                .unwrap_or_default(),
                        },
                    ));
                }
                "relation" => {
                    if let (Some(s), Some(t)) = (subject, target) {
                        facts.relations.push(Relation {
                            kind: kind.to_string(),
                            subject: node_text(s, source),
                            target: node_text(t, source),
                            qualifier: qualifier.map(|q| node_text(q, source)).unwrap_or_default(),
                            span: span_of(t),
                        });
                    }
                }
                "reference" => raw_refs.push(RawRef {
                    pattern: m.pattern_index,
                    name: (name.start_byte(), name.end_byte()),
                    node: span_of(name),
                    kind,
                    qualifier: qualifier.map(|q| (q.start_byte(), q.end_byte())),
                }),
                _ => {}
            }
        }

        // Nest definitions: sorted by start, outer before inner at the same start.
        defs.sort_by_key(|(n, _)| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..defs.len() {
            let span = defs[i].1.span;
            while let Some(&top) = stack.last() {
                if defs[top].1.span.contains(&span) {
                    break;
                }
                stack.pop();
            }
            defs[i].1.parent = stack.last().map(|&p| p as u32);
            if let Some(&p) = stack.last() {
                let parent_kind = defs[p].1.kind.clone();
                if defs[i].1.kind == "function" && is_type_container(&parent_kind) {
                    defs[i].1.kind = "method".into();
                }
            }
            stack.push(i);
        }
        facts.defs = defs.into_iter().map(|(_, d)| d).collect();

        // Locals belong to the innermost enclosing function; at module level they are not locals.
        let mut local_names: HashMap<u32, HashSet<String>> = HashMap::new();
        for (at, name) in locals {
            if let Some(f) = enclosing_function(&facts, at) {
                local_names.entry(f).or_default().insert(name);
            }
        }

        // References: one per name node (earliest pattern wins), minus definitions and locals.
        raw_refs.sort_by_key(|r| (r.name, r.pattern));
        raw_refs.dedup_by_key(|r| r.name);
        import_spans.sort_unstable();
        for r in raw_refs {
            if excluded.contains(&r.name) || inside_any(&import_spans, r.name.0) {
                continue;
            }
            let name = String::from_utf8_lossy(&source[r.name.0..r.name.1]);
            if r.kind == "read" && r.qualifier.is_none() && is_builtin_constant(&name) {
                continue;
            }
            let scope = enclosing_def(&facts, r.name.0);
            if r.qualifier.is_none() && is_local(&facts, &local_names, scope, &name) {
                continue;
            }
            let qualifier = r
                .qualifier
                .map(|(s, e)| String::from_utf8_lossy(&source[s..e]).into_owned())
                .unwrap_or_default();
            facts.refs.push(Ref {
                name: name.into_owned(),
                kind: r.kind.to_string(),
                qualifier,
                span: r.node,
                scope,
            });
        }
        doc_link_refs(&mut facts, &docs, source);
        Ok(facts)
    }
}

impl Default for Extractor {
    fn default() -> Self {
        Self::new()
    }
}

/// Returns true if and only if `name` is a language constant that never names a definition.
fn is_builtin_constant(name: &str) -> bool {
    matches!(
        name,
        "self"
            | "cls"
            | "None"
            | "True"
            | "False"
            | "undefined"
            | "arguments"
            | "nil"
            | "true"
            | "false"
            | "iota"
            | "_"
    )
}

/// Returns true if and only if definitions of `kind` hold methods.
pub fn is_type_container(kind: &str) -> bool {
    matches!(
        kind,
        "class" | "impl" | "trait" | "interface" | "struct" | "enum"
    )
}

/// Returns true if and only if definitions of `kind` open a function scope.
pub fn is_function(kind: &str) -> bool {
    matches!(kind, "function" | "method")
}

fn inside_any(sorted: &[(usize, usize)], at: usize) -> bool {
    let i = sorted.partition_point(|(s, _)| *s <= at);
    sorted[..i]
        .iter()
        .rev()
        .take(4)
        .any(|(s, e)| *s <= at && at < *e)
}

/// Returns the innermost definition containing byte `at`.
pub fn enclosing_def(facts: &FileFacts, at: usize) -> Option<u32> {
    let at = at as u32;
    let i = facts.defs.partition_point(|d| d.span.start_byte <= at);
    let mut cur = i.checked_sub(1).map(|i| i as u32);
    while let Some(c) = cur {
        let d = &facts.defs[c as usize];
        if d.span.start_byte <= at && at < d.span.end_byte {
            return Some(c);
        }
        cur = d.parent;
    }
    None
}

fn enclosing_function(facts: &FileFacts, at: usize) -> Option<u32> {
    let mut cur = enclosing_def(facts, at);
    while let Some(c) = cur {
        let d = &facts.defs[c as usize];
        // Parameters precede the body but bind inside the function.
        if is_function(&d.kind) {
            return Some(c);
        }
        cur = d.parent;
    }
    None
}

fn is_local(
    facts: &FileFacts,
    locals: &HashMap<u32, HashSet<String>>,
    scope: Option<u32>,
    name: &str,
) -> bool {
    let mut cur = scope;
    while let Some(c) = cur {
        if locals.get(&c).is_some_and(|s| s.contains(name)) {
            return true;
        }
        cur = facts.defs[c as usize].parent;
    }
    false
}

fn node_text(node: Node, source: &[u8]) -> String {
    String::from_utf8_lossy(&source[node.byte_range()]).into_owned()
}

fn span_of(node: Node) -> Span {
    let s = node.start_position();
    let e = node.end_position();
    Span {
        start_byte: node.start_byte() as u32,
        end_byte: node.end_byte() as u32,
        line: s.row as u32 + 1,
        col: s.column as u32 + 1,
        end_line: e.row as u32 + 1,
    }
}

fn signature(node: Node, source: &[u8]) -> String {
    let text = &source[node.byte_range()];
    let first = text.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(first);
    let line = line.trim();
    let line = line
        .strip_suffix('{')
        .map(str::trim_end)
        .unwrap_or(line)
        .to_string();
    if line.chars().count() > 160 {
        let cut: String = line.chars().take(159).collect();
        format!("{cut}…")
    } else {
        line
    }
}

fn is_exported(lang: Lang, node: Node, name: &str, source: &[u8]) -> bool {
    match lang {
        Lang::Rust => {
            let mut c = node.walk();
            node.children(&mut c)
                .any(|ch| ch.kind() == "visibility_modifier")
        }
        Lang::Python => !name.starts_with('_') || (name.starts_with("__") && name.ends_with("__")),
        Lang::Go => name.chars().next().is_some_and(char::is_uppercase),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
            let mut cur = node.parent();
            for _ in 0..3 {
                match cur {
                    Some(p) if p.kind() == "export_statement" => return true,
                    Some(p) if p.kind() == "program" || p.kind().ends_with("body") => {
                        // Class members are reachable through their class.
                        return p.kind() == "class_body" || p.kind() == "interface_body";
                    }
                    Some(p) => cur = p.parent(),
                    None => return false,
                }
            }
            let _ = source;
            false
        }
    }
}

fn default_module_alias(lang: Lang, module: &str) -> String {
    match lang {
        // `import a.b` binds `a`; the resolver walks the rest of the dotted path.
        Lang::Python => module.split('.').next().unwrap_or(module).to_string(),
        // Go binds the last path element (the package name, by convention).
        Lang::Go => module.rsplit('/').next().unwrap_or(module).to_string(),
        Lang::Rust => module.to_string(),
        _ => module.to_string(),
    }
}

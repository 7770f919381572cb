//! Turns one file's bytes into [`FileFacts`] by running its language's query files.
//!
//! The queries say *what* each node is; this file adds what queries cannot: nesting of
//! definitions, which names are local to a function (and so never refer to a global), which
//! definitions are exported, and the unfolding of Rust `use` trees.

use std::collections::HashMap;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, QueryCursor};

use super::NavError;
use super::doc_links::doc_link_refs;
use super::facts::{Def, FileFacts, Import, ImportKind, Ref, Relation, Span};
use super::lang::{Capture, Family, Lang, LangQueries};
use super::typefacts::{RawBinding, type_facts};
use super::use_tree::rust_use_tree;

/// Bumped when the extraction code (not the queries) changes what it produces.
pub const EXTRACTOR_VERSION: &str = "11";

/// Files larger than this are indexed as empty: they are almost always generated or minified.
pub const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

/// A reusable parser and query cursor; one per thread.
pub struct Extractor {
    parser: Parser,
    cursor: QueryCursor,
    /// Runs every language's patterns with tree-sitter's query cursor, never the walk matcher.
    query_cursor_only: bool,
}

/// A reference as matched, before filtering; text and positions are only computed for
/// references kept.
struct RawRef<'t> {
    pattern: usize,
    name: (usize, usize),
    node: Node<'t>,
    kind: &'static str,
    qualifier: Option<(usize, usize)>,
}

/// Hash tables keyed by small integers and short byte strings, which need no defence
/// against crafted collisions and are probed once per capture.
type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

impl Extractor {
    /// Returns a fresh extractor.
    pub fn new() -> Self {
        Extractor {
            parser: Parser::new(),
            cursor: QueryCursor::new(),
            query_cursor_only: false,
        }
    }

    /// Returns an extractor that runs the patterns with tree-sitter's query cursor only (to
    /// check and measure the walk matcher against it).
    pub fn with_query_cursor_only() -> Self {
        Extractor {
            query_cursor_only: true,
            ..Extractor::new()
        }
    }

    /// Returns true if and only if `lang`'s patterns run on the walk matcher here.
    pub fn uses_matcher(&self, lang: Lang) -> bool {
        !self.query_cursor_only && lang.queries().is_ok_and(|q| q.matcher.is_some())
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
        let mut pass = Pass::default();

        // One pass matches the tags and the imports patterns; imports are told apart by
        // pattern number. Names inside import statements are not references: they are
        // dropped after the pass, once every import statement is known.
        let mut handle = for_tree(root, |pattern: usize, captures: &[(u32, Node)]| {
            if pattern >= queries.imports_from {
                pass.import(lang, queries, captures, source);
            } else {
                pass.tag(lang, queries, pattern, captures, source);
            }
        });
        match queries.matcher.as_ref().filter(|_| !self.query_cursor_only) {
            Some(matcher) => {
                matcher.for_each_match(root, source, |hit| handle(hit.pattern, hit.captures))
            }
            None => {
                let mut captures: Vec<(u32, Node)> = Vec::new();
                let mut matches = self.cursor.matches(&queries.query, root, source);
                while let Some(m) = matches.next() {
                    captures.clear();
                    captures.extend(m.captures().iter().map(|c| (c.index, c.node)));
                    handle(m.pattern_index, &captures);
                }
            }
        }
        let mut facts = pass.into_facts(source);
        if lang == Lang::Rust {
            facts.mod_paths = super::mod_paths::extract(root, source);
        }
        Ok(facts)
    }
}

/// Everything one pass of a language's patterns over a tree collects, before definitions are
/// nested and references filtered.
#[derive(Default)]
struct Pass<'t> {
    /// Imports and relations as matched; definitions and references are added at the end.
    facts: FileFacts,
    /// Byte ranges of names that are not references (definition names, locals, ignored).
    excluded: Vec<(usize, usize)>,
    import_spans: Vec<(usize, usize)>,
    seen_stmt: FastSet<(usize, usize, usize)>,
    defs: Vec<(Node<'t>, Def)>,
    seen_defs: FastSet<(usize, usize)>,
    locals: Vec<(usize, (usize, usize))>,
    raw_refs: Vec<RawRef<'t>>,
    bindings: Vec<RawBinding<'t>>,
    docs: Vec<Node<'t>>,
    /// For each import, the position it is put in document order by within its statement.
    import_order: Vec<usize>,
}

/// The captures of one match of a tags pattern, by what they mean.
#[derive(Default)]
struct TagMatch<'t> {
    /// The capture naming what the match is (definition, container, reference, relation).
    role: Option<(Family, u32, Node<'t>)>,
    name: Option<Node<'t>>,
    body: Option<Node<'t>>,
    qualifier: Option<Node<'t>>,
    subject: Option<Node<'t>>,
    target: Option<Node<'t>>,
    receiver: Option<Node<'t>>,
    receiver_var: Option<Node<'t>>,
    ty: Option<Node<'t>>,
}

impl<'t> Pass<'t> {
    /// Records one match of an imports pattern.
    fn import(
        &mut self,
        lang: Lang,
        queries: &LangQueries,
        captures: &[(u32, Node<'t>)],
        source: &[u8],
    ) {
        let before = self.facts.imports.len();
        import_match(
            lang,
            queries,
            captures,
            source,
            &mut self.seen_stmt,
            &mut self.import_spans,
            &mut self.facts.imports,
        );
        // Imports are put in document order after the pass: by statement, then by the
        // position of the captures (the imported name) within it.
        let at = captures
            .iter()
            .map(|(_, n)| n.start_byte())
            .max()
            .unwrap_or(0);
        self.import_order
            .extend((before..self.facts.imports.len()).map(|_| at));
    }

    /// Records one match of a tags pattern: a definition, container, relation, local or
    /// reference.
    fn tag(
        &mut self,
        lang: Lang,
        queries: &'static LangQueries,
        pattern: usize,
        captures: &[(u32, Node<'t>)],
        source: &[u8],
    ) {
        let mut m = TagMatch::default();
        for &(index, node) in captures {
            match queries.captures[index as usize] {
                Capture::Name => m.name = Some(node),
                Capture::Body => m.body = Some(node),
                Capture::Qualifier => m.qualifier = Some(node),
                Capture::Subject => m.subject = Some(node),
                Capture::Target => m.target = Some(node),
                Capture::Receiver => m.receiver = Some(node),
                Capture::ReceiverVar => m.receiver_var = Some(node),
                Capture::Local => {
                    let range = (node.start_byte(), node.end_byte());
                    self.locals.push((range.0, range));
                    self.excluded.push(range);
                }
                Capture::Ignore => {
                    self.excluded.push((node.start_byte(), node.end_byte()));
                }
                Capture::Doc => self.docs.push(node),
                Capture::Type => m.ty = Some(node),
                Capture::Role(
                    family @ (Family::Definition
                    | Family::Container
                    | Family::Reference
                    | Family::Relation
                    | Family::Binding),
                ) => {
                    // A capture that is also `@name` (Go `type_identifier`) names itself.
                    m.role = Some((family, index, node));
                }
                _ => {}
            }
        }
        let Some((family, capture, node)) = m.role else {
            return;
        };
        let kind = queries.kind(capture);
        let name = m.name.unwrap_or(node);
        match family {
            Family::Definition | Family::Container => {
                let kind = if family == Family::Container {
                    "impl"
                } else {
                    kind
                };
                self.definition(lang, kind, node, name, &m, source);
                if lang == Lang::Rust && matches!(kind, "struct" | "enum" | "union") {
                    self.derives(node, name, source);
                }
            }
            Family::Relation => {
                if let (Some(s), Some(t)) = (m.subject, m.target) {
                    self.facts.relations.push(Relation {
                        kind: kind.to_string(),
                        subject: node_text(s, source),
                        target: node_text(t, source),
                        qualifier: m
                            .qualifier
                            .map(|q| node_text(q, source))
                            .unwrap_or_default(),
                        span: span_of(t),
                    });
                }
            }
            Family::Binding => self.bindings.push(RawBinding {
                pattern,
                kind,
                name: m.name,
                ty: m.ty,
            }),
            Family::Reference => self.raw_refs.push(RawRef {
                pattern,
                name: (name.start_byte(), name.end_byte()),
                node: name,
                kind,
                qualifier: m.qualifier.map(|q| (token_receiver_start(q), q.end_byte())),
            }),
            _ => {}
        }
    }

    /// Records the traits the Rust item `node` derives (`#[derive(Clone, Debug)]` among the
    /// attributes above it) as relations of kind `derives`: each an implementation of the
    /// trait for the item, placed at the attribute.
    fn derives(&mut self, node: Node<'t>, name: Node<'t>, source: &[u8]) {
        let mut prev = node.prev_sibling();
        while let Some(p) = prev {
            match p.kind() {
                "attribute_item" => {
                    let attr = p.named_child(0).filter(|a| a.kind() == "attribute");
                    let args = attr
                        .filter(|a| {
                            a.named_child(0)
                                .is_some_and(|n| node_text(n, source) == "derive")
                        })
                        .and_then(|a| a.child_by_field_name("arguments"));
                    if let Some(args) = args {
                        self.derived_traits(args, name, source);
                    }
                }
                "line_comment" | "block_comment" => {}
                _ => break,
            }
            prev = p.prev_sibling();
        }
    }

    /// Records one `derives` relation per trait of a derive's arguments (`(Clone, serde::Ser)`):
    /// the last name of each comma-separated path.
    fn derived_traits(&mut self, args: Node<'t>, item: Node<'t>, source: &[u8]) {
        let mut last: Option<Node<'t>> = None;
        let mut cursor = args.walk();
        let children: Vec<Node<'t>> = args.children(&mut cursor).collect();
        for c in children {
            match c.kind() {
                "identifier" => last = Some(c),
                "," | ")" => {
                    if let Some(t) = last.take() {
                        self.facts.relations.push(Relation {
                            kind: "derives".into(),
                            subject: node_text(item, source),
                            target: node_text(t, source),
                            qualifier: String::new(),
                            span: span_of(t),
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// Records the definition `node` named by `name`, unless already recorded or unnamed.
    fn definition(
        &mut self,
        lang: Lang,
        kind: &str,
        node: Node<'t>,
        name: Node<'t>,
        m: &TagMatch<'t>,
        source: &[u8],
    ) {
        if !self.seen_defs.insert((node.start_byte(), node.end_byte())) {
            return;
        }
        if name.start_byte() == name.end_byte() {
            return;
        }
        let name_t = node_text(name, source);
        self.excluded.push((name.start_byte(), name.end_byte()));
        self.defs.push((
            node,
            Def {
                exported: is_exported(lang, node, &name_t, source),
                name: name_t,
                kind: kind.to_string(),
                parent: None,
                span: span_of(node),
                name_span: span_of(name),
                body_start: m.body.map_or(name.end_byte(), |b| b.start_byte()) as u32,
                signature: signature(node, source),
                owner: m.receiver.map(|r| node_text(r, source)).unwrap_or_default(),
                receiver_var: m
                    .receiver_var
                    .map(|r| node_text(r, source))
                    .unwrap_or_default(),
            },
        ));
    }

    /// Returns the file's facts: imports and relations in document order, definitions nested,
    /// references filtered and scoped, then the references in doc comments.
    fn into_facts(self, source: &[u8]) -> FileFacts {
        let Pass {
            mut facts,
            mut excluded,
            mut import_spans,
            mut defs,
            locals,
            mut raw_refs,
            mut docs,
            bindings,
            import_order,
            ..
        } = self;
        // Matchers differ in the order they find matches in; facts kept in that order are put
        // in document order.
        let mut keyed: Vec<(usize, Import)> = import_order
            .into_iter()
            .zip(std::mem::take(&mut facts.imports))
            .collect();
        keyed.sort_by_key(|(at, i)| (i.span.start_byte, *at));
        facts.imports = keyed.into_iter().map(|(_, i)| i).collect();
        facts
            .relations
            .sort_by_key(|r| (r.span.start_byte, r.span.end_byte));
        docs.sort_by_key(|d| d.start_byte());

        nest(&mut defs);
        facts.defs = defs.into_iter().map(|(_, d)| d).collect();

        // Locals belong to the innermost enclosing function; at module level they are not locals.
        let mut local_names: FastMap<u32, FastSet<&[u8]>> = FastMap::default();
        for (at, (s, e)) in locals {
            if let Some(f) = enclosing_function(&facts, at) {
                local_names.entry(f).or_default().insert(&source[s..e]);
            }
        }

        // References: one per name node (earliest pattern wins), minus definitions and locals.
        raw_refs.sort_by_key(|r| (r.name, r.pattern));
        raw_refs.dedup_by_key(|r| r.name);
        excluded.sort_unstable();
        import_spans.sort_unstable();
        for r in raw_refs {
            if excluded.binary_search(&r.name).is_ok() || inside_any(&import_spans, r.name.0) {
                continue;
            }
            let raw = &source[r.name.0..r.name.1];
            let name = String::from_utf8_lossy(raw);
            if r.kind == "read" && r.qualifier.is_none() && is_builtin_constant(&name) {
                continue;
            }
            let scope = enclosing_def(&facts, r.name.0);
            if r.qualifier.is_none() && is_local(&facts, &local_names, scope, raw) {
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
                span: span_of(r.node),
                scope,
            });
        }
        doc_link_refs(&mut facts, &docs, source);
        facts.types = type_facts(bindings, &facts, source);
        facts
    }
}

/// Nests definitions: each gets the innermost definition containing it as parent, and a
/// function directly inside a type container becomes a method. Sorts them by start, outer
/// before inner at the same start.
fn nest(defs: &mut [(Node, Def)]) {
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
        // A type bound by `infer` inside an object type (`T extends { a: infer U } ? U : …`)
        // belongs to the declaration around it, not to the property it sits in.
        let infer_in_field =
            |p: usize| defs[i].1.kind == "type_parameter" && defs[p].1.kind == "field";
        // A TypeScript constructor's parameter property (`constructor(private x: X)`) is
        // the class's.
        let constructor_property = |p: usize| {
            defs[i].1.kind == "field"
                && defs[p].1.kind == "method"
                && defs[p].1.name == "constructor"
        };
        defs[i].1.parent = stack
            .iter()
            .rev()
            .find(|&&p| !infer_in_field(p) && !constructor_property(p))
            .map(|&p| p as u32);
        if let Some(&p) = stack.last()
            && defs[i].1.kind == "function"
            && is_type_container(&defs[p].1.kind)
        {
            defs[i].1.kind = "method".into();
        }
        stack.push(i);
    }
}

/// Ties the nodes a match handler receives to the lifetime of `root`'s tree.
fn for_tree<'t, F: FnMut(usize, &[(u32, Node<'t>)])>(_root: Node<'t>, f: F) -> F {
    f
}

/// Records the import of one match of an imports pattern, unless an earlier pattern already
/// recorded the same statement and name.
fn import_match(
    lang: Lang,
    queries: &LangQueries,
    captures: &[(u32, Node<'_>)],
    source: &[u8],
    seen_stmt: &mut FastSet<(usize, usize, usize)>,
    import_spans: &mut Vec<(usize, usize)>,
    imports: &mut Vec<Import>,
) {
    let mut role = None;
    let (mut module, mut name, mut alias, mut tree_node) = (None, None, None, None);
    for &(index, node) in captures {
        match queries.captures[index as usize] {
            Capture::Module => module = Some(node),
            Capture::Name => name = Some(node),
            Capture::Alias => alias = Some(node),
            Capture::Tree => tree_node = Some(node),
            Capture::Role(family @ (Family::Import | Family::Reexport | Family::Export)) => {
                role = Some((family, index, node))
            }
            _ => {}
        }
    }
    let Some((family, capture, stmt)) = role else {
        return;
    };
    // `pub use` and `use` both match a use declaration; the earlier pattern wins. Each name,
    // alias or module of a statement is an import of its own (`import os, sys`,
    // `import React, * as R from 'react'`).
    let key = (
        stmt.start_byte(),
        stmt.end_byte(),
        name.or(alias).or(module).map_or(0, |n| n.start_byte()),
    );
    if !seen_stmt.insert(key) {
        return;
    }
    import_spans.push((stmt.start_byte(), stmt.end_byte()));
    let text = |n: Option<Node>| n.map(|n| node_text(n, source)).unwrap_or_default();
    let span = span_of(stmt);
    let kind = queries.kind(capture);
    let reexport = family == Family::Reexport;
    if kind == "rust" {
        if let Some(t) = tree_node {
            rust_use_tree(t, source, &mut Vec::new(), reexport, span, imports);
        }
        return;
    }
    // A named import takes the span of its name, where a reader (and a language server)
    // sees the reference, on whatever line of a multi-line import it stands.
    let name_span = name.or(alias).map_or(span, span_of);
    let module = text(module).trim_matches(['"', '`', '\'']).to_string();
    let name_t = text(name);
    let alias_t = text(alias);
    let import = match (family, kind) {
        (Family::Export, "local") => Import {
            // `export { x as y }`: `y` names the local `x`.
            kind: ImportKind::Name,
            module: String::new(),
            alias: alias_t,
            name: name_t,
            reexport: true,
            span: name_span,
        },
        (Family::Export, _) => Import {
            // `export default foo`: `default` names the local `foo`.
            kind: ImportKind::Name,
            module: String::new(),
            name: name_t,
            alias: "default".into(),
            reexport: true,
            span: name_span,
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
            span: name_span,
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
            span: name_span,
        },
    };
    // Python `import a.b` binds `a`; keep the dotted module for resolution.
    imports.push(import);
}

impl Default for Extractor {
    fn default() -> Self {
        Self::new()
    }
}

/// Returns true if and only if `name` is a language constant that never names a definition.
/// Returns where the receiver ending at qualifier `q` starts. Inside a macro's arguments
/// (token trees) a method call's qualifier is the token before the dot — the arguments
/// `("x")` of `parser("x").parse()` — so the receiver reaches back over the call, and the
/// path or chain before it (`Arg::new("a").short('a')`), to the first token that is neither.
fn token_receiver_start(q: Node) -> usize {
    if q.kind() != "token_tree" || q.parent().is_none_or(|p| p.kind() != "token_tree") {
        return q.start_byte();
    }
    let is_name = |n: Node| matches!(n.kind(), "identifier" | "self" | "super" | "crate");
    // Read backwards: arguments need their callee, a name may follow `.` or `::`, and what
    // stands before a separator (a name, or a call's arguments) continues the chain.
    let mut start = q;
    let mut want_callee = true;
    while let Some(prev) = start.prev_sibling() {
        if want_callee {
            if !is_name(prev) {
                break;
            }
            start = prev;
            want_callee = false;
            continue;
        }
        if !matches!(prev.kind(), "." | "::") {
            break;
        }
        match prev.prev_sibling() {
            Some(before) if is_name(before) => start = before,
            Some(before) if before.kind() == "token_tree" => {
                start = before;
                want_callee = true;
            }
            _ => break,
        }
    }
    if start.id() == q.id() {
        return q.start_byte();
    }
    start.start_byte()
}

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
    locals: &FastMap<u32, FastSet<&[u8]>>,
    scope: Option<u32>,
    name: &[u8],
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

/// The text of `node`, lossily decoded.
pub(super) fn node_text(node: Node, source: &[u8]) -> String {
    String::from_utf8_lossy(&source[node.byte_range()]).into_owned()
}

/// Where `node` is, in bytes and 1-based lines and columns.
pub(super) fn span_of(node: Node) -> Span {
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

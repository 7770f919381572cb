//! Turns the `@binding.*` matches of a file's query into [`TypeFact`]s: which name each binds,
//! to what type or call, in which scope.
//!
//! One name node can be matched by several patterns (`x: Client = make()` is an annotation, a
//! call and an assignment); the most telling kind wins — a declared type over a call's value
//! over an unknown value — and an unknown value is kept, because a re-binding that cannot be
//! typed must hide an older binding that could.

use tree_sitter::Node;

use super::extract::{enclosing_def, span_of};
use super::facts::{FileFacts, TypeFact};

/// A binding as matched, before the definitions are nested.
pub(crate) struct RawBinding<'t> {
    pub pattern: usize,
    /// `annotation`, `property`, `returns`, `call`, `unwrap`, `alias` (another name's
    /// value), `element` (an element of a collection), `variant`, `tuple`, `tuple_unwrap` (a
    /// field or element at the name's position in a pattern), `none` or `unknown`.
    pub kind: &'static str,
    pub name: Option<Node<'t>>,
    pub ty: Option<Node<'t>>,
}

/// Longest type or callee text kept; longer ones are expressions no rule types.
const MAX_TYPE_TEXT: usize = 160;

fn rank(kind: &str) -> u8 {
    match kind {
        "annotation" | "property" | "returns" => 0,
        "call" | "unwrap" | "alias" | "element" | "variant" | "tuple" | "tuple_unwrap" => 1,
        "none" => 2,
        _ => 3,
    }
}

/// Returns the text of `node` with whitespace removed (`self . x` → `self.x`).
fn compact(node: Node, source: &[u8]) -> String {
    String::from_utf8_lossy(&source[node.byte_range()])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Returns the definition a binding at byte `at` belongs to: the innermost function or type
/// around it (a field or module-level variable is itself a definition, skipped).
fn binding_scope(facts: &FileFacts, at: usize) -> Option<u32> {
    let mut cur = enclosing_def(facts, at);
    while let Some(c) = cur {
        let d = &facts.defs[c as usize];
        if matches!(
            d.kind.as_str(),
            "field" | "constant" | "variable" | "variant"
        ) {
            cur = d.parent;
        } else {
            return Some(c);
        }
    }
    None
}

/// Returns the position of the name `name` among the elements of the tuple (struct) pattern
/// holding it: `e` in `Entry::Occupied(_, e)` is at 1, `b` in `(a, b)` too.
fn pattern_position(name: Node) -> Option<usize> {
    let pattern = name.parent()?;
    let path = pattern.child_by_field_name("type").map(|t| t.id());
    let mut cursor = pattern.walk();
    // `_` is an unnamed node; after `..` positions count from the end, which is not followed.
    let elements: Vec<Node> = pattern
        .children(&mut cursor)
        .filter(|c| (c.is_named() || c.kind() == "_") && Some(c.id()) != path)
        .filter(|c| !c.kind().ends_with("comment"))
        .collect();
    if elements
        .iter()
        .any(|c| matches!(c.kind(), "remaining_field_pattern" | ".."))
    {
        return None;
    }
    elements.iter().position(|c| c.id() == name.id())
}

/// Returns the type facts of the bindings matched in a file whose definitions are nested.
pub(crate) fn type_facts(
    mut raw: Vec<RawBinding>,
    facts: &FileFacts,
    source: &[u8],
) -> Vec<TypeFact> {
    // One binding per name node (per return type for `returns`): the best kind, then the
    // earliest pattern.
    let key = |b: &RawBinding| {
        b.name
            .or(b.ty)
            .map_or((0, 0), |n| (n.start_byte(), n.end_byte()))
    };
    raw.sort_by_key(|b| (key(b), rank(b.kind), b.pattern));
    raw.dedup_by_key(|b| key(b));
    let mut out = Vec::new();
    for b in raw {
        if b.kind == "none" {
            continue;
        }
        let var = match (b.kind, b.name) {
            ("returns", _) => String::new(),
            ("property", Some(n)) => format!("this.{}", compact(n, source)),
            (_, Some(n)) => compact(n, source).replace(' ', ""),
            (_, None) => continue,
        };
        let mut ty = b.ty.map(|t| compact(t, source)).unwrap_or_default();
        // A pattern's binding: the position of the name in its tuple (see `patterns`).
        if matches!(b.kind, "variant" | "tuple" | "tuple_unwrap") {
            let Some(index) = b.name.and_then(pattern_position) else {
                continue;
            };
            ty = format!("{ty}#{index}");
        }
        let mut kind = b.kind;
        // A loop over an expression too long to type still binds its variable.
        if kind == "element" && ty.len() > MAX_TYPE_TEXT {
            (kind, ty) = ("unknown", String::new());
        }
        if ty.len() > MAX_TYPE_TEXT || (ty.is_empty() && kind != "unknown") {
            continue;
        }
        let anchor = b.ty.or(b.name);
        let Some(anchor) = anchor else { continue };
        let kind = match kind {
            "property" | "returns" => "annotation",
            k => k,
        };
        out.push(TypeFact {
            var,
            ty,
            kind: kind.to_string(),
            span: span_of(b.name.unwrap_or(anchor)),
            // A return type belongs to its function, which may be a constant holding an
            // arrow function.
            scope: if b.kind == "returns" {
                enclosing_def(facts, anchor.start_byte())
            } else {
                binding_scope(facts, anchor.start_byte())
            },
        });
    }
    out.sort_by_key(|f| f.span.start_byte);
    out
}

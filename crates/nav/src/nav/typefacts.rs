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
use super::narrowing::narrowing_fact;

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
        "annotation" | "property" | "returns" | "construct" | "construct_property" | "literal"
        | "cast" => 0,
        "call" | "unwrap" | "alias" | "element" | "callback" | "variant" | "tuple"
        | "tuple_unwrap" => 1,
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

/// The variable and type text of the fact that records an object literal a function returns
/// (`return { batch() {…} }`): its span is the literal's, its members are the methods inside.
pub(crate) const LITERAL: &str = "{}";

/// Returns the text of a binding's type node: a call's callee with its arguments
/// (`difference(prev, next)`), or the callee alone when the arguments are too long to keep.
fn type_text(node: Node, source: &[u8]) -> String {
    if node.kind() != "call_expression" {
        return compact(node, source);
    }
    let Some(callee) = node.child_by_field_name("function") else {
        return compact(node, source);
    };
    let callee = compact(callee, source);
    let args = node
        .child_by_field_name("arguments")
        .map(|a| compact(a, source))
        .filter(|a| a.starts_with('(') && callee.len() + a.len() <= MAX_TYPE_TEXT);
    match args {
        Some(a) => format!("{callee}{a}"),
        None => callee,
    }
}

/// Returns the type an `as` expression casts to (`Procedure | undefined` of `defs[p] as |
/// Procedure | undefined`), or `None` for a cast that tells nothing (`as const`, `as any`).
fn cast_type(text: &str) -> Option<&str> {
    let (_, ty) = text.rsplit_once(" as ")?;
    let ty = ty.trim().trim_start_matches('|').trim_start();
    (!matches!(ty, "const" | "any" | "unknown" | "never") && !ty.is_empty()).then_some(ty)
}

/// Returns where a callback's parameter `name` sits in the call `call` that takes the
/// callback, as `callee#argument#parameter` (`createReducer#1#0` for `builder` in
/// `createReducer(init, (builder) => …)`).
fn callback_site(name: Node, call: Node, source: &[u8]) -> Option<String> {
    let mut arrow = name.parent()?;
    while arrow.kind() != "arrow_function" {
        arrow = arrow.parent()?;
    }
    let params = arrow.child_by_field_name("parameters");
    let param = match params {
        None => 0,
        Some(p) => {
            let mut c = p.walk();
            let mut named = p.named_children(&mut c);
            named.position(|n| {
                n.start_byte() <= name.start_byte() && name.end_byte() <= n.end_byte()
            })?
        }
    };
    let args = call.child_by_field_name("arguments")?;
    let mut c = args.walk();
    let mut named = args.named_children(&mut c);
    let arg = named.position(|n| n.id() == arrow.id())?;
    let callee = compact(call.child_by_field_name("function")?, source);
    Some(format!("{callee}#{arg}#{param}"))
}

/// Returns the type a `new` expression with type arguments constructs (`Map<K, V>` of
/// `new Map<K, V>(entries)`).
fn constructed_type(text: &str) -> Option<&str> {
    let t = text.strip_prefix("new")?.trim_start();
    let open = t.find('<')?;
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in t.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '<' => depth += 1,
            // The `>` of an arrow (`() => void`) closes nothing.
            '>' if prev != '=' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&t[..=i]);
                }
            }
            _ => {}
        }
        prev = c;
    }
    None
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
        if b.kind == "narrow" {
            let fact =
                b.ty.and_then(|c| narrowing_fact(c, source, binding_scope(facts, c.start_byte())));
            out.extend(fact);
            continue;
        }
        let var = match (b.kind, b.name) {
            ("returns", _) => String::new(),
            ("literal", _) => LITERAL.to_string(),
            ("property" | "construct_property", Some(n)) => format!("this.{}", compact(n, source)),
            (_, Some(n)) => compact(n, source).replace(' ', ""),
            (_, None) => continue,
        };
        let mut ty = match (b.kind, b.name, b.ty) {
            ("callback", Some(n), Some(call)) => callback_site(n, call, source).unwrap_or_default(),
            _ => b.ty.map(|t| type_text(t, source)).unwrap_or_default(),
        };
        // A pattern's binding: the position of the name in its tuple (see `patterns`).
        if matches!(b.kind, "variant" | "tuple" | "tuple_unwrap") {
            let Some(index) = b.name.and_then(pattern_position) else {
                continue;
            };
            ty = format!("{ty}#{index}");
        }
        let mut kind = b.kind;
        match kind {
            // `new Map<K, V>(…)` holds a `Map<K, V>`, as if so annotated.
            "construct" | "construct_property" => {
                ty = constructed_type(&ty).unwrap_or_default().to_string();
                kind = "annotation";
            }
            "literal" => ty = LITERAL.to_string(),
            // `x as Procedure | undefined` holds what it is cast to; `as const`, `as any` and
            // `as unknown` tell nothing.
            "cast" => match cast_type(&ty) {
                Some(t) => (kind, ty) = ("annotation", t.to_string()),
                None => (kind, ty) = ("unknown", String::new()),
            },
            _ => {}
        }
        // A loop over an expression too long to type still binds its variable.
        if kind == "element" && ty.len() > MAX_TYPE_TEXT {
            (kind, ty) = ("unknown", String::new());
        }
        // An unknown value's text only says what kind of literal it is: a long one still binds.
        if kind == "unknown" && ty.len() > MAX_TYPE_TEXT {
            ty.truncate(ty.floor_char_boundary(MAX_TYPE_TEXT));
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
            // A return type (or a returned literal) belongs to its function, which may be a
            // constant holding an arrow function.
            scope: if matches!(b.kind, "returns" | "literal") {
                enclosing_def(facts, anchor.start_byte())
            } else {
                binding_scope(facts, anchor.start_byte())
            },
        });
    }
    out.sort_by_key(|f| f.span.start_byte);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_expressions_with_type_arguments_name_the_type_they_construct() {
        assert_eq!(
            constructed_type("new Map<string, Entry<V>>()"),
            Some("Map<string, Entry<V>>")
        );
        assert_eq!(
            constructed_type("new Set<() => void>(items)"),
            Some("Set<() => void>")
        );
        assert_eq!(constructed_type("new Entry()"), None);
        assert_eq!(
            cast_type("defs[path] as | Procedure<A, B> | undefined"),
            Some("Procedure<A, B> | undefined")
        );
        assert_eq!(cast_type("{ a: 1 } as const"), None);
        assert_eq!(constructed_type("make<T>()"), None);
    }
}

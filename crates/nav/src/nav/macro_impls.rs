//! Finds the `impl` blocks written inside a `macro_rules!` body (`impl From<$ty> for Value {…}`),
//! which tree-sitter leaves as token trees: each one the macro expands is an implementation of
//! the trait and the type it names, and rust-analyzer places it there, in the body.
//!
//! Only blocks whose trait and self type are named in the body count: a metavariable
//! (`for $t`, `for ($($T,)*)`) names whatever the caller passes, which the body alone does not
//! tell.

use tree_sitter::Node;

/// One `impl` block of a macro body, as token nodes.
pub(super) struct MacroImpl<'t> {
    /// The `impl` keyword: where the block starts.
    pub impl_token: Node<'t>,
    /// The block's body (`{…}`): where it ends.
    pub body: Node<'t>,
    /// The self type's last name (`Value` in `for crate::Value`), or its first token when it
    /// is no path (`&'a Value`).
    pub self_type: Node<'t>,
    /// The name the block is known by: the self type's last name, or the whole type as
    /// written when it is no path (a reference's impl is no impl of the type referred to).
    pub self_name: String,
    /// The trait's last name and the path before it (`de` in `de::Error`), when it is a
    /// trait impl.
    pub trait_name: Option<(Node<'t>, String)>,
}

/// Returns the `impl` blocks with plain-named traits and self types anywhere in the token
/// trees under `node` (a `macro_definition`).
pub(super) fn macro_impls<'t>(node: Node<'t>, source: &[u8]) -> Vec<MacroImpl<'t>> {
    let mut out = Vec::new();
    let mut todo = vec![node];
    while let Some(n) = todo.pop() {
        let mut cursor = n.walk();
        let children: Vec<Node<'t>> = n.children(&mut cursor).collect();
        for (i, c) in children.iter().enumerate() {
            if c.kind() == "impl" {
                out.extend(one_impl(*c, &children[i + 1..], source));
            }
            if c.child_count() > 0 {
                todo.push(*c);
            }
        }
    }
    out.sort_by_key(|m| m.impl_token.start_byte());
    out
}

/// Reads one block from the tokens after its `impl` keyword: the names at angle depth 0
/// before `for` (the trait's path) and after it (the self type's), up to the body.
fn one_impl<'t>(impl_token: Node<'t>, rest: &[Node<'t>], source: &[u8]) -> Option<MacroImpl<'t>> {
    let mut depth = 0i32;
    let mut before_for: Vec<Node<'t>> = Vec::new();
    let mut after_for: Option<Vec<Node<'t>>> = None;
    // The self type's first token, and whether it is a path (`Value`, `a::B<T>`).
    let mut self_start: Option<Node<'t>> = None;
    let mut self_is_path = true;
    // Where a `where` clause starts, which ends the self type.
    let mut where_at: Option<usize> = None;
    for t in rest {
        let text = t.utf8_text(source).unwrap_or("");
        if after_for.is_some() && self_start.is_none() {
            self_start = Some(*t);
        }
        match t.kind() {
            "token_tree" if depth == 0 && text.starts_with('{') => {
                let (self_type, self_name, trait_name) = match (&after_for, self_start) {
                    (Some(_), Some(start)) if !self_is_path => {
                        let end = where_at.unwrap_or(t.start_byte());
                        let written = String::from_utf8_lossy(&source[start.start_byte()..end]);
                        let name = written.split_whitespace().collect::<Vec<_>>().join(" ");
                        (
                            start,
                            name,
                            Some((plain_last(&before_for)?, qualifier(&before_for, source))),
                        )
                    }
                    (Some(ty), _) => {
                        let last = plain_last(ty)?;
                        let name = last.utf8_text(source).unwrap_or("").to_string();
                        (
                            last,
                            name,
                            Some((plain_last(&before_for)?, qualifier(&before_for, source))),
                        )
                    }
                    (None, _) => {
                        let last = plain_last(&before_for)?;
                        (last, last.utf8_text(source).unwrap_or("").to_string(), None)
                    }
                };
                return Some(MacroImpl {
                    impl_token,
                    body: *t,
                    self_type,
                    self_name,
                    trait_name,
                });
            }
            "for" if depth == 0 => after_for = Some(Vec::new()),
            "where" if depth == 0 => where_at = Some(t.start_byte()),
            _ if where_at.is_some() => {}
            // A tuple or array self type built by a repetition (`for ($(ignore!($Y, A),)*)`)
            // is a type per expansion: rust-analyzer places those impls where the macro is
            // called.
            "token_tree" | "token_repetition" if after_for.is_some() && text.contains('$') => {
                return None;
            }
            "token_tree" if depth == 0 && after_for.is_some() => self_is_path = false,
            "identifier" | "metavariable" | "::" | "self" | "super" | "crate" if depth == 0 => {
                match after_for.as_mut() {
                    Some(p) => p.push(*t),
                    None => before_for.push(*t),
                }
            }
            ";" => return None,
            _ => {
                if depth == 0 && after_for.is_some() && !text.contains("::") && !text.contains('<')
                {
                    self_is_path = false;
                }
                depth += text.matches('<').count() as i32;
                depth -= text.matches('>').count() as i32 - text.matches("->").count() as i32;
                if depth == 0 && text.contains("::") {
                    match after_for.as_mut() {
                        Some(p) => p.push(*t),
                        None => before_for.push(*t),
                    }
                }
            }
        }
    }
    None
}

/// Returns the last name of a path of tokens, when it is a plain identifier.
fn plain_last<'t>(path: &[Node<'t>]) -> Option<Node<'t>> {
    path.iter()
        .rev()
        .find(|t| t.kind() != "::")
        .filter(|t| t.kind() == "identifier")
        .copied()
}

/// Returns the path before a path's last name, as written (`de` for `de::Error`), or empty.
fn qualifier(path: &[Node], source: &[u8]) -> String {
    let names: Vec<&str> = path
        .iter()
        .filter(|t| t.kind() != "::")
        .map(|t| t.utf8_text(source).unwrap_or(""))
        .collect();
    names[..names.len().saturating_sub(1)].join("::")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::macro_impls;

    /// Returns (self name, trait) of every block the macro definitions of `src` write.
    fn found(src: &str) -> Vec<(String, String)> {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_rust::LANGUAGE.into())
            .unwrap();
        let tree = parser.parse(src, None).unwrap();
        let root = tree.root_node();
        let mut out = Vec::new();
        let mut cursor = root.walk();
        for item in root.children(&mut cursor) {
            for m in macro_impls(item, src.as_bytes()) {
                let t = m
                    .trait_name
                    .map(|(t, q)| format!("{q}|{}", t.utf8_text(src.as_bytes()).unwrap()))
                    .unwrap_or_default();
                out.push((m.self_name, t));
            }
        }
        out
    }

    #[test]
    fn blocks_of_a_body_give_their_self_type_and_trait() {
        let src = "macro_rules! m {\n    ($t:ty) => {\n        $(impl<'a> de::Convert<$t> for &'a Value {})*\n        impl Value { fn f() {} }\n        impl Marker for $t {}\n        impl<T> crate::Other<T> for a::Thing<T> where T: Clone {}\n        impl<A> Tuple for ($(ignore!($Y, A),)*) {}\n    };\n}\n";
        assert_eq!(
            found(src),
            [
                ("&'a Value".to_string(), "de|Convert".to_string()),
                ("Value".to_string(), String::new()),
                ("Thing".to_string(), "crate|Other".to_string()),
            ]
        );
    }
}

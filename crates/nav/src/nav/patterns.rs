//! What a Rust pattern binds: `Entry::Vacant(e) => e.key()`, `if let Value::Number(n) = v`,
//! `let (pre, text) = parse(text)?` — the type of the field (of the variant or tuple struct) or
//! of the tuple element at the name's position.
//!
//! The binding's fact holds the path or callee and the position, `Entry::Vacant#0` (kinds
//! `variant`, `tuple`, `tuple_unwrap`); the type is read from the variant's or struct's
//! declaration line, or from the tuple the called function is declared to return. A field or
//! element whose type is generic, a tuple of its own or written over several lines leaves the
//! name untyped, so its members stay candidates.

use super::index::{DefId, Index};
use super::lang::Lang;
use super::types::{split_path, type_path};

/// Returns the path (or callee) and the position of a pattern fact's `ty` (`Entry::Vacant#1`).
pub(crate) fn split_indexed(ty: &str) -> Option<(&str, usize)> {
    let (path, index) = ty.rsplit_once('#')?;
    Some((path, index.parse().ok()?))
}

/// Returns the parts of `list` separated by commas outside brackets, trimmed.
fn top_level_parts(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(list[start..].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// Returns the type of field `index` of a tuple variant or tuple struct declared on the line
/// `signature` (`Vacant(VacantEntry<'a>),`, `pub struct Wrapper(pub Inner);`).
fn tuple_field(signature: &str, index: usize) -> Option<&str> {
    let open = signature.find('(')?;
    let close = signature.rfind(')')?;
    let fields = top_level_parts(signature.get(open + 1..close)?);
    let field = fields.get(index)?;
    Some(
        field
            .strip_prefix("pub(crate) ")
            .or_else(|| field.strip_prefix("pub "))
            .unwrap_or(field),
    )
}

/// Returns element `index` of the tuple type `text` (`(Prerelease, &str)`), the success value
/// of `Result<(…), E>` or `Option<(…)>` first when `unwrap`.
fn tuple_element(text: &str, unwrap: bool, index: usize) -> Option<&str> {
    let mut t = text.trim();
    if unwrap {
        let (head, args) = t.split_once('<')?;
        let last = head.rsplit("::").next().unwrap_or(head).trim();
        if !matches!(last, "Result" | "Option") {
            return None;
        }
        t = top_level_parts(args.strip_suffix('>')?)
            .into_iter()
            .next()?;
    }
    let inner = t.strip_prefix('(')?.strip_suffix(')')?;
    top_level_parts(inner).get(index).copied()
}

impl Index {
    /// Returns the type a pattern fact of `file` gives its name: the field of the variant or
    /// tuple struct (`variant`), or the element of the tuple a call returns (`tuple`, its
    /// success value first for `tuple_unwrap`).
    pub(crate) fn pattern_type(
        &self,
        file: u32,
        kind: &str,
        ty: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let (declared, text) = self.pattern_type_text(file, kind, ty, at, scope, depth)?;
        let path = type_path(Lang::Rust, &text, false)?;
        self.single_type(declared.file, &path, declared.at, declared.scope, depth + 1)
    }

    /// Returns the type a pattern fact of `file` gives its name as written where it is
    /// declared (see [`Index::pattern_type`]): the place of that declaration and the text.
    pub(crate) fn pattern_type_text(
        &self,
        file: u32,
        kind: &str,
        ty: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<(Declared, String)> {
        let (path, index) = split_indexed(ty)?;
        let (q, name) = split_path(path);
        let o = if q.is_empty() {
            self.resolve_unqualified(file, name, at, scope, depth + 1)
        } else {
            self.resolve_qualified(file, q, name, at, scope, depth + 1)
        }?;
        let [found] = o.defs.as_slice() else {
            return None;
        };
        if !o.bound {
            return None;
        }
        let d = self.def(*found);
        let (text, at, scope) = match kind {
            "variant" if matches!(d.kind.as_str(), "variant" | "struct") => {
                let field = tuple_field(&d.signature, index)?;
                (field, d.span.start_byte, d.parent)
            }
            "tuple" | "tuple_unwrap" if matches!(d.kind.as_str(), "function" | "method") => {
                let f = &self.files[found.file as usize];
                let ret = f
                    .facts
                    .types
                    .iter()
                    .find(|t| t.var.is_empty() && t.scope == Some(found.def))?;
                let element = tuple_element(&ret.ty, kind == "tuple_unwrap", index)?;
                (element, ret.span.start_byte, Some(found.def))
            }
            _ => return None,
        };
        let declared = Declared {
            file: found.file,
            at,
            scope,
        };
        Some((declared, text.to_string()))
    }
}

/// Where a type is written: the file, the byte and the scope to resolve its names in.
pub(crate) struct Declared {
    pub file: u32,
    pub at: u32,
    pub scope: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_elements_are_read_at_their_position() {
        assert_eq!(split_indexed("Entry::Vacant#1"), Some(("Entry::Vacant", 1)));
        assert_eq!(split_indexed("Entry::Vacant"), None);
        assert_eq!(
            tuple_field("Vacant(VacantEntry<'a>),", 0),
            Some("VacantEntry<'a>")
        );
        assert_eq!(
            tuple_field("Occupied(u8, Map<K, V>, Other)", 2),
            Some("Other")
        );
        assert_eq!(tuple_field("pub struct W(pub Inner);", 0), Some("Inner"));
        assert_eq!(tuple_field("Unit,", 0), None);
        let ret = "Result<(Prerelease, &'a str), Error>";
        assert_eq!(tuple_element(ret, true, 0), Some("Prerelease"));
        assert_eq!(tuple_element(ret, true, 1), Some("&'a str"));
        assert_eq!(tuple_element(ret, false, 0), None);
        assert_eq!(tuple_element("(A, B)", false, 1), Some("B"));
        assert_eq!(tuple_element("Vec<(A, B)>", true, 0), None);
    }
}

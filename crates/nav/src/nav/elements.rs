//! What a loop or a collection's callback binds: `for item in self.items`, `for (const o of
//! this.#observers)`, `observers.forEach((o) => …)`, `for m in &self.matchers` — an element of
//! the collection, typed by the element type of the collection's declared type (`list[Item]`,
//! `Observer[]`, `Array<Observer>`, `Vec<Matcher>`, `&[Matcher]`).
//!
//! Only a collection whose type is declared (an annotated parameter, variable or field) is
//! followed, and only collections of one named type: a map, a tuple or an untyped value leave
//! the element untyped, so its members stay candidates.

use super::facts::TypeFact;
use super::index::{DefId, Index};
use super::lang::Lang;
use super::types::{MAX_DEPTH, type_path, without_line_breaks};

/// Collections whose first type argument is the type of their elements.
const COLLECTIONS: &[&str] = &[
    // Python (`typing` and the built-in generics).
    "list",
    "List",
    "set",
    "Set",
    "frozenset",
    "FrozenSet",
    "Sequence",
    "MutableSequence",
    "Iterable",
    "Iterator",
    "Collection",
    "AbstractSet",
    "MutableSet",
    "deque",
    "Deque",
    // TypeScript and JavaScript.
    "Array",
    "ReadonlyArray",
    "ReadonlySet",
    "IterableIterator",
    // Rust.
    "Vec",
    "VecDeque",
    "HashSet",
    "BTreeSet",
    "IndexSet",
    "SmallVec",
];

/// Maps whose second type argument is the type of their values.
const MAPS: &[&str] = &[
    "dict",
    "Dict",
    "Mapping",
    "MutableMapping",
    "OrderedDict",
    "defaultdict",
    "Map",
    "ReadonlyMap",
    "WeakMap",
    "HashMap",
    "BTreeMap",
    "IndexMap",
];

/// Returns the type `text` without references, `mut`, `readonly`, lifetimes, and the `null`
/// and `undefined` of a union (`undefined | Map<K, V>`).
fn bare(text: &str) -> &str {
    let mut t = text.trim();
    let mut parts = t
        .split('|')
        .map(str::trim)
        .filter(|p| !p.is_empty() && !matches!(*p, "null" | "undefined"));
    if let (Some(one), None) = (parts.next(), parts.next()) {
        t = one;
    }
    loop {
        let before = t.len();
        for p in ["&", "mut ", "readonly "] {
            t = t.strip_prefix(p).unwrap_or(t).trim_start();
        }
        if t.starts_with('\'')
            && let Some((_, rest)) = t.split_once(' ')
        {
            t = rest.trim_start();
        }
        if t.len() == before {
            return t;
        }
    }
}

/// Splits a generic type (`list[Item]`, `Map<K, V>`) into the last segment of its name and
/// its type arguments.
fn generic(lang: Lang, t: &str) -> Option<(&str, &str)> {
    let (open, close) = if lang == Lang::Python {
        ('[', ']')
    } else {
        ('<', '>')
    };
    let (head, rest) = t.split_once(open)?;
    let args = rest.strip_suffix(close)?;
    let last = head.trim().rsplit(['.', ':']).next().unwrap_or(head);
    Some((last, args))
}

/// Returns the element type written in the collection type `text` (`Item` of `list[Item]`,
/// `Observer[]`, `Vec<Matcher>`, `&[Matcher]`), or `None` when it is no collection of one type.
pub(crate) fn element_text(lang: Lang, text: &str) -> Option<&str> {
    let t = bare(text);
    if lang != Lang::Python
        && let Some(el) = t.strip_suffix("[]")
    {
        return Some(el.trim());
    }
    if lang == Lang::Rust
        && let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
    {
        return Some(inner.split(';').next().unwrap_or(inner).trim());
    }
    let (last, args) = generic(lang, t)?;
    COLLECTIONS
        .contains(&last)
        .then(|| type_arguments(args).next())
        .flatten()
}

/// Returns the value type written in the map type `text` (`V` of `dict[str, V]`, `Map<K, V>`,
/// `HashMap<K, V>`), or `None` when it is no map.
fn value_text(lang: Lang, text: &str) -> Option<&str> {
    let (last, args) = generic(lang, bare(text))?;
    MAPS.contains(&last)
        .then(|| type_arguments(args).nth(1))
        .flatten()
}

/// Returns the comma-separated type arguments `args`, nested brackets kept whole.
pub(crate) fn type_arguments(args: &str) -> impl Iterator<Item = &str> {
    split_top_level(args, ',')
        .into_iter()
        .filter(|a| !a.is_empty())
}

/// Returns `text` split at each `sep` outside brackets (`<>`, `()`, `[]`), each part trimmed.
pub(crate) fn split_top_level(text: &str, sep: char) -> Vec<&str> {
    let mut depth = 0usize;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth = depth.saturating_sub(1),
            c if c == sep && depth == 0 => {
                out.push(text[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out
}

/// Returns the collection an iterated expression reads (`self.items` of `&mut self.items`,
/// `items.iter()`, `this.#observers!`).
fn collection(expr: &str) -> &str {
    let mut t = expr.trim();
    loop {
        let before = t.len();
        t = t.trim_start_matches('&').trim_start();
        t = t.strip_prefix("mut ").unwrap_or(t).trim_start();
        for s in [".iter()", ".iter_mut()", ".into_iter()", "!"] {
            t = t.strip_suffix(s).unwrap_or(t).trim_end();
        }
        if t.len() == before {
            return t;
        }
    }
}

impl Index {
    /// Returns the type of the elements of the collection `expr` iterated at byte `at` of
    /// `file`, when the collection's declared type is a collection of one type here.
    pub(crate) fn element_type(
        &self,
        file: u32,
        expr: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let expr = without_line_breaks(expr);
        let Some((fact_file, fact)) = self.declared(file, collection(&expr), at, scope, depth)
        else {
            return self.inferred_element_type(file, collection(&expr), at, scope, depth + 1);
        };
        let lang = self.files[fact_file as usize].lang;
        let path = type_path(lang, element_text(lang, &fact.ty)?, false)?;
        self.single_type(
            fact_file,
            &path,
            fact.span.start_byte,
            fact.scope,
            depth + 1,
        )
    }

    /// Returns the type of the value a map's `get` gives (`entry` of `const entry =
    /// this.values_.get(key)` with `values_: Map<string, Entry>`; in Rust only unwrapped,
    /// `map.get(k)?`), when `callee` is such a `get` on a map whose type is declared.
    pub(crate) fn map_value_type(
        &self,
        file: u32,
        callee: &str,
        unwrap: bool,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<DefId> {
        let (expr, method) = callee.rsplit_once('.')?;
        let getter = match self.files[file as usize].lang {
            Lang::Rust => unwrap && matches!(method, "get" | "get_mut"),
            _ => method == "get",
        };
        if !getter {
            return None;
        }
        let (fact_file, fact) = self.declared(file, collection(expr), at, scope, depth)?;
        let lang = self.files[fact_file as usize].lang;
        let path = type_path(lang, value_text(lang, &fact.ty)?, false)?;
        self.single_type(
            fact_file,
            &path,
            fact.span.start_byte,
            fact.scope,
            depth + 1,
        )
    }

    /// Returns where the value type of the declared map `callee` reads is written (`A | B` of
    /// `this.values_.get` with `values_: Map<K, A | B>`), with the byte and scope it is read
    /// at; `None` when `callee` is no `get` of a declared map.
    pub(crate) fn map_value_written(
        &self,
        file: u32,
        callee: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<(u32, String, u32, Option<u32>)> {
        let (expr, method) = callee.rsplit_once('.')?;
        if method != "get" {
            return None;
        }
        let (fact_file, fact) = self.declared(file, collection(expr), at, scope, depth)?;
        let lang = self.files[fact_file as usize].lang;
        let value = value_text(lang, &fact.ty)?;
        Some((
            fact_file,
            value.to_string(),
            fact.span.start_byte,
            fact.scope,
        ))
    }

    /// Returns the annotation that declares `expr` — a local or parameter, or `self.x` /
    /// `this.x` of the enclosing class — with the file it stands in.
    pub(crate) fn declared(
        &self,
        file: u32,
        expr: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<(u32, &TypeFact)> {
        let is_name = |s: &str| {
            !s.is_empty()
                && s.trim_start_matches('#')
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        };
        if is_name(expr) {
            let fact = self.binding_fact(file, scope, expr, at)?;
            // `const prev = this.#observers`: what the other name is declared as.
            if fact.kind == "alias" && depth <= MAX_DEPTH {
                let (other, at, scope) = (fact.ty.as_str(), fact.span.start_byte, fact.scope);
                return self.declared(file, collection(other), at, scope, depth + 1);
            }
            return (fact.kind == "annotation").then_some((file, fact));
        }
        // `this.observers_`, or `observable.observers_` of a typed receiver.
        let (this, attr) = expr.rsplit_once('.')?;
        if !is_name(attr) {
            return None;
        }
        let class = if matches!(this, "self" | "this") {
            self.enclosing_class(file, scope, depth + 1)?
        } else {
            self.receiver_type(file, this, at, scope, depth + 1)?
        };
        let this = match self.files[file as usize].lang {
            Lang::Python | Lang::Rust => "self",
            _ => "this",
        };
        let dotted = format!("{this}.{attr}");
        let facts = &self.files[class.file as usize].facts;
        let fact = facts.types.iter().find(|t| {
            t.kind == "annotation"
                && ((t.var == attr && t.scope == Some(class.def))
                    || (t.var == dotted
                        && self.enclosing_class(class.file, t.scope, depth + 1) == Some(class)))
        })?;
        Some((class.file, fact))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_types_are_read_from_collections_of_one_type() {
        let py = |t| element_text(Lang::Python, t);
        assert_eq!(py("list[Item]"), Some("Item"));
        assert_eq!(py("t.Sequence[\"Item\"]"), Some("\"Item\""));
        assert_eq!(py("dict[str, Item]"), None);
        assert_eq!(py("Item"), None);
        let ts = |t| element_text(Lang::TypeScript, t);
        assert_eq!(ts("QueryObserver[]"), Some("QueryObserver"));
        assert_eq!(ts("readonly Observer[]"), Some("Observer"));
        assert_eq!(ts("Array<Observer<T, U>>"), Some("Observer<T, U>"));
        assert_eq!(ts("Map<string, Observer>"), None);
        assert_eq!(ts("undefined | Observer[]"), Some("Observer"));
        let rs = |t| element_text(Lang::Rust, t);
        assert_eq!(rs("Vec<Box<dyn Matcher>>"), Some("Box<dyn Matcher>"));
        assert_eq!(rs("&'a [Matcher]"), Some("Matcher"));
        assert_eq!(rs("[Matcher; 4]"), Some("Matcher"));
        assert_eq!(rs("HashMap<K, V>"), None);
        assert_eq!(
            value_text(Lang::Rust, "HashMap<String, Vec<u8>>"),
            Some("Vec<u8>")
        );
        assert_eq!(
            value_text(Lang::TypeScript, "Map<K, Entry<V>>"),
            Some("Entry<V>")
        );
        assert_eq!(value_text(Lang::Python, "dict[str, Item]"), Some("Item"));
        assert_eq!(value_text(Lang::Python, "list[Item]"), None);
        assert_eq!(collection("&mut self.items"), "self.items");
        assert_eq!(collection("items.iter()"), "items");
        assert_eq!(collection("this.#observers!"), "this.#observers");
    }
}

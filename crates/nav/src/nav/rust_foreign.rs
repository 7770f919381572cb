//! Rust receivers whose type lies outside the repository (`dst: &mut [u8]`, `v: Vec<u8>`,
//! `self` in `impl Buf for &[u8]`, a field declared `indices: Vec<usize>`): a method called on
//! one is that type's own, or a trait's the repository implements for it (an extension trait
//! such as `Itertools` or `Buf`), never an inherent method or a field of a type here.
//!
//! Without this rule such calls (`dst.len()`) are ranked candidates of every `len` of the
//! repository, and a references query at `UninitSlice::len` lists them all.

use super::extract::is_function;
use super::facts::TypeFact;
use super::index::{DefId, Index};
use super::inferred::split_arguments;
use super::lang::Lang;
use super::types::{split_path, type_path};

/// Rust's primitive types: values of them have no inherent methods declared here.
const PRIMITIVES: &[&str] = &[
    "str", "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f32", "f64",
];

/// How many bindings deep a receiver's value is followed (`let a = b.trim(); let b = …`).
const MAX_CHAIN: usize = 8;

/// Methods of the standard library's strings and slices whose value is again a string or a
/// slice (or a vector, a `String`): called on a foreign value, they give a foreign value.
const STD_KEEPS_FOREIGN: &[&str] = &[
    "trim",
    "trim_start",
    "trim_end",
    "trim_matches",
    "trim_start_matches",
    "trim_end_matches",
    "to_vec",
    "to_owned",
    "to_le_bytes",
    "to_be_bytes",
    "to_ne_bytes",
    "to_string",
    "as_bytes",
    "as_str",
    "as_slice",
    "clone",
];

/// Collections of the standard library: what their associated functions make is theirs.
const STD_COLLECTIONS: &[&str] = &[
    "Vec",
    "String",
    "VecDeque",
    "HashMap",
    "HashSet",
    "BTreeMap",
    "BTreeSet",
    "BinaryHeap",
];

/// Types of the standard library's prelude, named without an import.
const PRELUDE: &[&str] = &["Vec", "String", "Option", "Result", "Box"];

/// Inherent methods of the standard library's slices, arrays, vectors, strings, options,
/// results and integers that code calls most. An inherent method wins over any trait's of
/// the same name (the Rust reference, "method call expressions"), so on a receiver of a type
/// from outside the repository such a call is never a trait method declared here either
/// (`v.len()` on a `Vec<usize>` beside a trait `PoolIndex::len` implemented for `Vec`).
const STD_INHERENT: &[&str] = &[
    "len",
    "is_empty",
    "iter",
    "iter_mut",
    "get",
    "get_mut",
    "first",
    "last",
    "push",
    "pop",
    "insert",
    "remove",
    "clear",
    "truncate",
    "reserve",
    "capacity",
    "as_ptr",
    "as_mut_ptr",
    "as_slice",
    "as_mut_slice",
    "split_at",
    "split_off",
    "contains",
    "starts_with",
    "ends_with",
    "swap",
    "sort",
    "sort_by",
    "sort_by_key",
    "sort_unstable",
    "binary_search",
    "chunks",
    "windows",
    "to_vec",
    "copy_from_slice",
    "extend_from_slice",
    "fill",
    "resize",
    "drain",
    "retain",
    "dedup",
    "append",
    "reverse",
    "chars",
    "bytes",
    "as_bytes",
    "as_str",
    "push_str",
    "trim",
    "split",
    "lines",
    "find",
    "replace",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
    "map",
    "and_then",
    "unwrap",
    "expect",
    "unwrap_or",
    "unwrap_or_else",
    "ok",
    "err",
    "as_ref",
    "as_mut",
    "take",
    "checked_add",
    "checked_sub",
    "checked_mul",
    "saturating_add",
    "saturating_sub",
    "wrapping_add",
    "wrapping_sub",
    "pow",
    "abs",
];

impl Index {
    /// Keeps of the candidates `defs` of a Rust method call (or field read) on `qualifier` at
    /// byte `at` of `file` those a value of the receiver's type can reach: when the receiver
    /// holds a type from outside the repository, only trait members (a trait's declaration, or
    /// a method of `impl Trait for X` where `X` is no struct, enum or union of the
    /// repository); otherwise every candidate.
    pub(crate) fn foreign_receiver_candidates(
        &self,
        file: u32,
        qualifier: &str,
        at: u32,
        scope: Option<u32>,
        mut defs: Vec<DefId>,
    ) -> Vec<DefId> {
        if !defs.is_empty() && self.rust_receiver_is_foreign(file, qualifier, at, scope, 0) {
            let name = defs
                .first()
                .map(|d| self.def(*d).name.clone())
                .unwrap_or_default();
            if STD_INHERENT.contains(&name.as_str()) {
                defs.clear();
            } else {
                defs.retain(|d| self.reachable_from_foreign(*d));
            }
        }
        defs
    }

    /// Returns true if and only if the Rust receiver expression `qualifier` (`self`, a local or
    /// parameter, `self.field`) at byte `at` of `file` holds a value of a type declared
    /// outside the repository, as its declaration says.
    fn rust_receiver_is_foreign(
        &self,
        file: u32,
        qualifier: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> bool {
        if depth > MAX_CHAIN {
            return false;
        }
        let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        // `" at line ".len()`, `b"abc".to_vec()`: a string literal.
        if qualifier.starts_with(['"', '\'']) || qualifier.starts_with("b\"") {
            return true;
        }
        let segs: Vec<&str> = qualifier.split('.').map(str::trim).collect();
        match segs.as_slice() {
            ["self"] => self.enclosing_impl(file, scope).is_some_and(|imp| {
                let d = &self.files[file as usize].facts.defs[imp as usize];
                self.names_foreign_type(file, &d.name, d.name_span.start_byte, d.parent)
            }),
            ["self", field] if ident(field) => {
                let Some(class) = self.enclosing_class(file, scope, 0) else {
                    return false;
                };
                let facts = &self.files[class.file as usize].facts;
                let declared = facts.types.iter().find(|t| {
                    t.kind == "annotation" && t.scope == Some(class.def) && t.var == *field
                });
                declared.is_some_and(|t| {
                    self.names_foreign_type(class.file, &t.ty, t.span.start_byte, t.scope)
                })
            }
            [var] if ident(var) && *var != "self" => {
                let Some(fact) = self.binding_fact(file, scope, var, at) else {
                    return false;
                };
                fact.span.end_byte <= at
                    && (is_std_value(&fact.ty) || self.binds_foreign_value(file, fact, depth))
            }
            _ => false,
        }
    }

    /// Returns true if and only if the binding `fact` of the Rust file `file` gives its name a
    /// value of a type from outside the repository, as declared: by its annotation, by the
    /// return type of the function called (`let (patch, text) = numeric_identifier(text)?`
    /// with `-> Result<(u64, &str), Error>`), or by a method of the standard library that
    /// keeps a foreign value foreign (`let rest = text.trim_start_matches(' ')`).
    fn binds_foreign_value(&self, file: u32, fact: &TypeFact, depth: usize) -> bool {
        let at = fact.span.start_byte;
        match fact.kind.as_str() {
            "annotation" => self.names_foreign_type(file, &fact.ty, at, fact.scope),
            "variant" | "tuple" | "tuple_unwrap" => self
                .pattern_type_text(file, &fact.kind, &fact.ty, at, fact.scope, 0)
                .is_some_and(|(d, text)| self.names_foreign_type(d.file, &text, d.at, d.scope)),
            "call" | "unwrap" => {
                let callee = split_arguments(&fact.ty).map_or(fact.ty.as_str(), |(c, _)| c);
                if let Some((receiver, method)) = callee.rsplit_once('.') {
                    // The receiver's binding before this one (`let text = text.trim()`).
                    return STD_KEEPS_FOREIGN.contains(&method)
                        && self.rust_receiver_is_foreign(
                            file,
                            receiver,
                            at.saturating_sub(1),
                            fact.scope,
                            depth + 1,
                        );
                }
                self.constructs_foreign_value(file, fact) || self.returns_foreign_type(file, fact)
            }
            _ => false,
        }
    }

    /// Returns true if and only if the call fact `fact` of the Rust file `file` makes a value
    /// of a standard library collection by one of its associated functions
    /// (`Vec::with_capacity(n)`, `String::from(s)`).
    fn constructs_foreign_value(&self, file: u32, fact: &TypeFact) -> bool {
        let callee = split_arguments(&fact.ty).map_or(fact.ty.as_str(), |(c, _)| c);
        let Some((ty, _)) = callee.rsplit_once("::") else {
            return false;
        };
        let ty = ty.rsplit("::").next().unwrap_or(ty);
        STD_COLLECTIONS.contains(&ty)
            && self.names_foreign_type(file, ty, fact.span.start_byte, fact.scope)
    }

    /// Returns true if and only if the call fact `fact` (`call` or `unwrap`) of the Rust file
    /// `file` calls one function of the repository whose declared return type (its success
    /// type for `unwrap`) is from outside the repository.
    fn returns_foreign_type(&self, file: u32, fact: &TypeFact) -> bool {
        let at = fact.span.start_byte;
        let callee = split_arguments(&fact.ty).map_or(fact.ty.as_str(), |(c, _)| c);
        let (q, name) = split_path(callee);
        let o = if q.is_empty() {
            self.resolve_unqualified(file, name, at, fact.scope, 0)
        } else {
            self.resolve_qualified(file, q, name, at, fact.scope, 0)
        };
        let Some(o) = o.filter(|o| o.bound) else {
            return false;
        };
        let [func] = o.defs.as_slice() else {
            return false;
        };
        if !is_function(&self.def(*func).kind) {
            return false;
        }
        let Some(ret) = self.declared_return(*func) else {
            return false;
        };
        let text = if fact.kind == "unwrap" {
            success_type(&ret.ty)
        } else {
            Some(ret.ty.as_str())
        };
        text.is_some_and(|t| {
            self.names_foreign_type(func.file, t, ret.span.start_byte, Some(func.def))
        })
    }

    /// Returns the `impl` block of the Rust file `file` enclosing `scope`, unless a trait's
    /// body is nearer (a default method's `self` is any implementor).
    fn enclosing_impl(&self, file: u32, scope: Option<u32>) -> Option<u32> {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        while let Some(c) = cur {
            match facts.defs[c as usize].kind.as_str() {
                "impl" => return Some(c),
                "trait" => return None,
                _ => cur = facts.defs[c as usize].parent,
            }
        }
        None
    }

    /// Returns true if and only if the Rust type expression `text`, written at byte `at` of
    /// `file`, names a type from outside the repository: a slice, array, tuple, pointer or
    /// function type, a primitive, a prelude type nothing here shadows, or a path the file
    /// imports from another crate. Trait objects, `Self` and generic parameters are not.
    fn names_foreign_type(&self, file: u32, text: &str, at: u32, scope: Option<u32>) -> bool {
        let mut t = text.trim();
        loop {
            let before = t.len();
            t = t.trim_start_matches('&').trim_start();
            if t.starts_with('\'') {
                t = t.split_once(' ').map_or("", |(_, rest)| rest).trim_start();
            }
            t = t.strip_prefix("mut ").unwrap_or(t).trim_start();
            if t.len() == before {
                break;
            }
        }
        if t.starts_with(['[', '(', '*']) || t.starts_with("fn(") {
            return true;
        }
        if t.starts_with("dyn ") || t.starts_with("impl ") {
            return false;
        }
        let Some(path) = type_path(Lang::Rust, t, false) else {
            return false;
        };
        let mut segs = path.split("::");
        let head = segs.next().unwrap_or_default();
        let single = !path.contains("::");
        if single && PRIMITIVES.contains(&head) {
            return true;
        }
        if matches!(head, "std" | "core" | "alloc") {
            return true;
        }
        if matches!(head, "Self" | "crate" | "super" | "self") {
            return false;
        }
        match self.resolve_unqualified(file, head, at, scope, 0) {
            None => single && PRELUDE.contains(&head),
            Some(o) => o.defs.is_empty() && o.modules.is_empty() && o.external.is_some(),
        }
    }

    /// Returns true if and only if a value of a type from outside the repository can reach
    /// definition `d` by a method call: `d` is declared in a trait, or in an `impl Trait for
    /// X` block whose `X` is no struct, enum or union of the repository.
    fn reachable_from_foreign(&self, d: DefId) -> bool {
        let facts = &self.files[d.file as usize].facts;
        let Some(parent) = facts.defs[d.def as usize].parent else {
            return false;
        };
        let p = &facts.defs[parent as usize];
        match p.kind.as_str() {
            "trait" => true,
            "impl" => {
                let has_trait = facts.relations.iter().any(|r| {
                    r.kind == "implements"
                        && p.span.start_byte <= r.span.start_byte
                        && r.span.start_byte < p.body_start
                });
                let for_repo_type = self
                    .resolve_unqualified(d.file, &p.name, p.name_span.start_byte, p.parent, 0)
                    .is_some_and(|o| {
                        o.defs.iter().any(|t| {
                            matches!(self.def(*t).kind.as_str(), "struct" | "enum" | "union")
                        })
                    });
                has_trait && !for_repo_type
            }
            _ => false,
        }
    }
}

/// Returns the success type of `Result<T, E>` or `Option<T>` as written (`T`), `None` for
/// any other type.
fn success_type(text: &str) -> Option<&str> {
    let (head, args) = text.trim().split_once('<')?;
    let last = head.rsplit("::").next().unwrap_or(head).trim();
    if !matches!(last, "Result" | "Option") {
        return None;
    }
    let args = args.strip_suffix('>')?;
    let mut depth = 0i32;
    for (i, c) in args.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => return Some(args[..i].trim()),
            _ => {}
        }
    }
    Some(args.trim())
}

/// Returns true if and only if the Rust expression `value` (what a `let` binds) is a literal or
/// a macro of the standard library that makes a value of its type: a string or byte string,
/// an array, `vec![…]`, `format!(…)`.
fn is_std_value(value: &str) -> bool {
    let v = value.trim_start_matches('&').trim_start();
    v.starts_with(['"', '['])
        || ["b\"", "r\"", "r#\"", "vec!", "format!"]
            .iter()
            .any(|p| v.starts_with(p))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::at_uses::{Repo, repo};

    /// Returns the lines of every reference (candidates included) of the token `name` on
    /// `line` of `path`, as a references query at that use lists them.
    fn all_refs(r: &Repo, path: &str, line: u32, name: &str) -> Vec<u32> {
        let at = r.at(path, line, name, 0);
        let mut lines: Vec<u32> = r
            .index
            .references_at(Some(name), Some(&at))
            .unwrap()
            .iter()
            .map(|l| l.line)
            .collect();
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    const SLICE: &str = concat!(
        "pub struct UninitSlice([u8]);\n",        // 1
        "impl UninitSlice {\n",                   // 2
        "    pub fn len(&self) -> usize { 0 }\n", // 3
        "    pub fn check(&self, i: usize) { assert!(i < self.len()); }\n", // 4
        "}\n",                                    // 5
        "pub trait Buf { fn remaining(&self) -> usize; }\n", // 6
        "impl Buf for &[u8] {\n",                 // 7
        "    fn remaining(&self) -> usize { self.len() }\n", // 8
        "}\n",                                    // 9
        "pub fn copy(dst: &mut [u8], src: &[u8], v: Vec<u8>, s: &UninitSlice) -> usize {\n", // 10
        "    let a = dst.len() + src.len();\n",   // 11
        "    let b = v.len() + src.remaining();\n", // 12
        "    a + b + s.len()\n",                  // 13
        "}\n",                                    // 14
        "pub struct Comb { indices: Vec<usize>, name: &'static str }\n", // 15
        "impl Comb {\n",                          // 16
        "    pub fn n(&self) -> usize { self.indices.len() + self.name.len() }\n", // 17
        "}\n",                                    // 18
    );

    #[test]
    fn calls_on_receivers_of_outside_types_are_no_references_of_a_method_here() {
        let r = repo(&[("src/lib.rs", SLICE)]);
        // `self.len()` in `impl Buf for &[u8]`, `dst.len()`, `v.len()` and
        // `self.indices.len()` are the slice's, `Vec`'s and `str`'s `len`.
        assert_eq!(all_refs(&r, "src/lib.rs", 4, "len"), [4, 13]);
    }

    #[test]
    fn a_trait_the_repository_implements_for_an_outside_type_keeps_its_calls() {
        let r = repo(&[("src/lib.rs", SLICE)]);
        // `src.remaining()` on a `&[u8]` is `Buf::remaining`, implemented for `&[u8]` here.
        assert!(
            all_refs(&r, "src/lib.rs", 6, "remaining").contains(&12),
            "{:?}",
            all_refs(&r, "src/lib.rs", 6, "remaining")
        );
    }

    const VALUES: &str = concat!(
        "pub struct Pool { len: usize }\n",                  // 1
        "impl Pool {\n",                                     // 2
        "    pub fn len(&self) -> usize { self.len }\n",     // 3
        "    pub fn grow(&mut self) { self.len += 1; }\n",   // 4
        "}\n",                                               // 5
        "pub trait PoolIndex { fn len(&self) -> usize; }\n", // 6
        "impl PoolIndex for Vec<usize> { fn len(&self) -> usize { 0 } }\n", // 7
        "const LONG: &[u8] = b\"long\";\n",                  // 8
        "pub fn f(p: &Pool, idx: Vec<usize>) -> usize {\n",  // 9
        "    let s = \"text\";\n",                           // 10
        "    let v = vec![1, 2];\n",                         // 11
        "    let a = s.len() + v.len();\n",                  // 12
        "    let b = LONG.len() + \" at \".len();\n",        // 13
        "    a + b + idx.len() + p.len()\n",                 // 14
        "}\n",                                               // 15
    );

    #[test]
    fn literals_constants_and_std_collections_call_their_own_methods() {
        let r = repo(&[("src/lib.rs", VALUES)]);
        // `s.len()`, `v.len()`, `LONG.len()`, `" at ".len()` and `idx.len()` (a `Vec`'s own
        // `len` wins over `PoolIndex::len`) are the standard library's.
        assert_eq!(all_refs(&r, "src/lib.rs", 3, "len"), [14]);
        assert_eq!(all_refs(&r, "src/lib.rs", 6, "len"), Vec::<u32>::new());
    }

    #[test]
    fn a_rust_member_read_is_the_field_not_the_method_of_its_name() {
        let r = repo(&[("src/lib.rs", VALUES)]);
        assert_eq!(r.def("src/lib.rs", 3, "len"), ["src/lib.rs:3"]);
        let at = r.at("src/lib.rs", 4, "len", 0);
        let defs = r.index.definition_at(Some("len"), Some(&at)).unwrap();
        let lines: Vec<u32> = defs.iter().map(|l| l.line).collect();
        assert_eq!(lines, [1]);
        // The method's references (asked at `p.len()`) are its calls, not the field's reads.
        let at = r.at("src/lib.rs", 14, "len", 1);
        let refs = r.index.references_at(Some("len"), Some(&at)).unwrap();
        let lines: Vec<u32> = refs.iter().map(|l| l.line).collect();
        assert_eq!(lines, [14]);
    }

    #[test]
    fn values_functions_here_declare_of_outside_types_call_their_own_methods() {
        let r = repo(&[(
            "src/lib.rs",
            concat!(
                "pub struct Ident {}\n",                                               // 1
                "impl Ident { pub fn is_empty(&self) -> bool { true } }\n",            // 2
                "fn split(text: &str) -> Result<(u64, &str), ()> { Ok((0, text)) }\n", // 3
                "fn dot(text: &str) -> Result<&str, ()> { Ok(text) }\n",               // 4
                "pub fn parse(input: &str, id: &Ident) -> Result<bool, ()> {\n",       // 5
                "    let (_n, text) = split(input)?;\n",                               // 6
                "    let rest = dot(text)?;\n",                                        // 7
                "    let rest = rest.trim_start_matches(' ');\n",                      // 8
                "    let a = text.is_empty();\n",                                      // 9
                "    let b = rest.is_empty();\n",                                      // 10
                "    Ok(a || b || id.is_empty())\n",                                   // 11
                "}\n",                                                                 // 12
            ),
        )]);
        assert_eq!(all_refs(&r, "src/lib.rs", 2, "is_empty"), [11]);
    }

    #[test]
    fn std_collections_made_by_their_constructors_are_outside_values() {
        let r = repo(&[(
            "src/lib.rs",
            concat!(
                "use std::collections::VecDeque;\n",                       // 1
                "pub struct Shared {}\n",                                  // 2
                "impl Shared { pub fn capacity(&self) -> usize { 0 } }\n", // 3
                "pub fn from(n: u64, s: &Shared) -> usize {\n",            // 4
                "    let v = VecDeque::new();\n",                          // 5
                "    let w = Vec::with_capacity(8);\n",                    // 6
                "    let b = n.to_le_bytes();\n",                          // 7
                "    let x = v.capacity() + w.capacity();\n",              // 8
                "    let y = b.capacity();\n",                             // 9
                "    x + y + s.capacity()\n",                              // 10
                "}\n",                                                     // 11
            ),
        )]);
        assert_eq!(all_refs(&r, "src/lib.rs", 3, "capacity"), [10]);
    }
}

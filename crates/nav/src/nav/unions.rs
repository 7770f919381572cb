//! Receivers typed by a union of named types (TypeScript and JavaScript): a parameter or local
//! declared `A | B`, the values of a `Map<K, A | B>`, a field so declared, or an alias
//! `type Entry = A | B`. A member used on such a receiver is each type's member of that name,
//! all bound, in the order the union names them, as the TypeScript language service answers.
//!
//! Nullish parts (`| undefined`, `| null`) and primitives drop out as they do for one type; a
//! part no rule resolves to a type here (an outside type, a function type, a conditional type)
//! leaves the whole receiver untyped, so nothing is labelled resolved on a guess.

use super::index::{DefId, Index};
use super::inferred::split_arguments;
use super::lang::Lang;
use super::resolve::is_type_parameter;
use super::types::{MAX_DEPTH, PRIMITIVES, type_path, without_line_breaks};

/// Where a union is written: the file, its text, the byte and scope it is read at.
type Written = (u32, String, u32, Option<u32>);

/// Returns the named parts of the union type written in `text` (`A | B<C> | undefined` →
/// `A`, `B<C>`), nullish parts and primitives left out; empty when `text` holds a function or
/// object type, whose `|` may belong to something nested.
pub(crate) fn union_parts(text: &str) -> Vec<&str> {
    let t = text.trim();
    let t = t
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(t);
    if t.contains("=>") || t.contains('{') {
        return Vec::new();
    }
    let mut parts = super::elements::split_top_level(t, '|');
    parts.retain(|p| {
        !p.is_empty() && !matches!(*p, "null" | "undefined" | "void") && !PRIMITIVES.contains(p)
    });
    parts
}

/// Returns true if and only if `s` is a plain name (`found`, `#cache`).
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.trim_start_matches('#')
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

impl Index {
    /// Returns true if and only if `def` is a type alias of an object type that declares
    /// members (`type Annotation = { make_(…): void }`): a value so typed has those members.
    pub(crate) fn is_object_type(&self, def: DefId) -> bool {
        if self.def(def).kind != "type" {
            return false;
        }
        self.files[def.file as usize]
            .facts
            .defs
            .iter()
            .any(|d| d.parent == Some(def.def) && !is_type_parameter(&d.kind))
    }

    /// Returns the members named `name` of each type of the union the receiver `qualifier`
    /// is declared as (see [`Index::union_receiver`]), in the union's order.
    pub(crate) fn union_members(
        &self,
        file: u32,
        qualifier: &str,
        name: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Vec<DefId> {
        let mut out = Vec::new();
        for ty in self.union_receiver(file, qualifier, at, scope, depth) {
            for m in self.class_members(ty, name, depth) {
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
        out
    }

    /// Returns the types of the receiver expression `qualifier` at byte `at` of `file` when its
    /// declared type is a union of two or more named types here; empty otherwise (no union, a
    /// part that is no type of the repository, another language).
    pub(crate) fn union_receiver(
        &self,
        file: u32,
        qualifier: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Vec<DefId> {
        let lang = self.files[file as usize].lang;
        if depth > MAX_DEPTH || !matches!(lang, Lang::TypeScript | Lang::Tsx | Lang::JavaScript) {
            return Vec::new();
        }
        // Non-null assertions (`found!.get()`, `map.get(k)!.get()`) leave the type as it is.
        let plain = without_line_breaks(qualifier).replace("!.", ".");
        let plain = plain.trim_end_matches('!');
        match self.union_text(file, plain, at, scope, depth + 1) {
            Some((f, text, at, scope)) => self.union_types(f, &text, at, scope, depth + 1),
            None => Vec::new(),
        }
    }

    /// Returns where the type of the expression `expr` is written: a declared map's values for
    /// `m.get(k)`, a local's or parameter's annotation (through aliases and `m.get(k)` values
    /// assigned to it), a declared field.
    fn union_text(
        &self,
        file: u32,
        expr: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<Written> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some((callee, _)) = split_arguments(expr) {
            return self.map_value_written(file, callee, at, scope, depth + 1);
        }
        if is_name(expr) {
            let fact = self.binding_fact(file, scope, expr, at)?;
            let (at, scope) = (fact.span.start_byte, fact.scope);
            return match fact.kind.as_str() {
                "annotation" => Some((file, fact.ty.clone(), at, scope)),
                "alias" => self.union_text(file, &fact.ty, at, scope, depth + 1),
                "call" => {
                    let (callee, _) = split_arguments(&fact.ty)?;
                    self.map_value_written(file, callee, at, scope, depth + 1)
                }
                _ => None,
            };
        }
        let (f, fact) = self.declared(file, expr, at, scope, depth + 1)?;
        Some((f, fact.ty.clone(), fact.span.start_byte, fact.scope))
    }

    /// Returns the types a union written as `text` at byte `at` of `file` names, each part
    /// resolved to one type or, when it names an alias of a union, to that union's types.
    fn union_types(
        &self,
        file: u32,
        text: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Vec<DefId> {
        let lang = self.files[file as usize].lang;
        let parts = union_parts(text);
        let mut out: Vec<DefId> = Vec::new();
        for part in &parts {
            let Some(path) = type_path(lang, part, false) else {
                return Vec::new();
            };
            let found = match self.single_type(file, &path, at, scope, depth + 1) {
                Some(t) => vec![t],
                None => self.alias_union(file, &path, at, scope, depth + 1),
            };
            if found.is_empty() {
                return Vec::new();
            }
            for t in found {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        if out.len() < 2 {
            return Vec::new();
        }
        out
    }

    /// Returns the types of the union the type alias `path` stands for (`type Entry = A | B`),
    /// or nothing when it names no such alias.
    fn alias_union(
        &self,
        file: u32,
        path: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Vec<DefId> {
        if depth > MAX_DEPTH || path.contains('.') {
            return Vec::new();
        }
        let Some(o) = self.resolve_unqualified(file, path, at, scope, depth + 1) else {
            return Vec::new();
        };
        let ([alias], true) = (o.defs.as_slice(), o.bound) else {
            return Vec::new();
        };
        let d = self.def(*alias);
        if d.kind != "type" {
            return Vec::new();
        }
        let facts = &self.files[alias.file as usize].facts;
        let Some(fact) = facts
            .types
            .iter()
            .find(|t| t.kind == "type_alias" && t.var == d.name && d.span.contains(&t.span))
        else {
            return Vec::new();
        };
        self.union_types(
            alias.file,
            &fact.ty,
            fact.span.start_byte,
            fact.scope,
            depth + 1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_split_at_their_top_level_bars() {
        assert_eq!(
            union_parts("ObservableValue<any> | ComputedValue<any>"),
            ["ObservableValue<any>", "ComputedValue<any>"]
        );
        assert_eq!(
            union_parts("| A | Map<K, B | C> | undefined | null"),
            ["A", "Map<K, B | C>"]
        );
        assert_eq!(union_parts("A | boolean"), ["A"]);
        assert_eq!(union_parts("(a: A) => B | C"), Vec::<&str>::new());
    }
}

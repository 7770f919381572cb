//! Resolution: binds a reference to definitions through scopes, imports, re-exports, module
//! paths, receivers and inheritance, and falls back to ranked name matches (candidates).
//!
//! Resolution runs on demand over the in-memory view, so a refresh never pays for it; a
//! query resolves only the references whose name it asks about.

use std::collections::HashSet;

use serde::Serialize;

use super::extract::{is_function, is_type_container};
use super::facts::{ImportKind, Ref};
use super::index::{DefId, Index};
use super::lang::Lang;
use super::modules::dir_of;

/// How an answer was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    /// Bound by the language's scope and import rules.
    Resolved,
    /// A name match, ranked; the rules could not decide.
    Candidate,
}

/// What a name or reference resolves to.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub defs: Vec<DefId>,
    /// Modules (files) the name denotes, for imports of whole modules.
    pub modules: Vec<u32>,
    /// True when bound by the rules; false for ranked candidates.
    pub bound: bool,
    /// The module named by an import that lies outside the repository.
    pub external: Option<String>,
}

impl Outcome {
    fn bound(defs: Vec<DefId>, modules: Vec<u32>) -> Outcome {
        Outcome {
            defs,
            modules,
            bound: true,
            external: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.defs.is_empty() && self.modules.is_empty() && self.external.is_none()
    }

    /// Returns the label of this outcome.
    pub fn resolution(&self) -> Resolution {
        if self.bound {
            Resolution::Resolved
        } else {
            Resolution::Candidate
        }
    }
}

const MAX_DEPTH: usize = 24;

thread_local! {
    /// The (file, name, private) questions [`Index::exports`] is answering on this thread.
    static EXPORTS_VISITING: std::cell::RefCell<Vec<(u32, String, bool)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn is_self(q: &str) -> bool {
    matches!(q, "self" | "this" | "cls" | "Self")
}

/// Returns true if and only if definitions of `kind` are generic parameters of an item, which
/// are never reached from outside it (not exported, not members, not candidates elsewhere).
pub(crate) fn is_type_parameter(kind: &str) -> bool {
    kind == "type_parameter"
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

impl Index {
    /// Resolves reference `r` of file `file`.
    pub(crate) fn resolve_ref(&self, file: u32, r: &Ref) -> Outcome {
        let at = r.span.start_byte;
        let out = if r.qualifier.is_empty() {
            self.resolve_unqualified(file, &r.name, at, r.scope, 0)
        } else {
            self.resolve_qualified(file, &r.qualifier, &r.name, at, r.scope, 0)
        };
        let mut o = match out {
            Some(o) if !o.is_empty() => o,
            _ => {
                let mut defs = self.qualified_candidates(file, &r.qualifier, &r.name);
                if r.qualifier.is_empty() {
                    defs.retain(|d| self.reachable_by_bare_name(file, r.scope, *d));
                }
                let defs = self.rust_candidates(file, r, defs);
                Outcome {
                    defs,
                    ..Outcome::default()
                }
            }
        };
        self.rank_by_use(file, r, &mut o.defs);
        o
    }

    /// Orders `defs` by how reference `r` of `file` uses its name: a call ranks methods and
    /// functions before fields of the same name, a member read ranks fields first
    /// (`m.keys()` is the method `keys`, `m.keys` the field). Rust never reaches a field by a
    /// call (that needs `(m.keys)()`) nor by a path (`Map::keys`), so there the fields drop
    /// when something else remains, and a member read never reaches a method, so there the
    /// methods drop when a field remains.
    pub(crate) fn rank_by_use(&self, file: u32, r: &Ref, defs: &mut Vec<DefId>) {
        if defs.len() < 2 {
            return;
        }
        let is_field = |d: &DefId| self.def(*d).kind == "field";
        let rust = self.files[file as usize].lang == Lang::Rust;
        match r.kind.as_str() {
            "field" => {
                defs.sort_by_key(|d| !is_field(d));
                // Rust names a method without calling it only by a path: `self.len` is the
                // field, whatever else is called `len`.
                if rust && defs.iter().any(is_field) {
                    defs.retain(is_field);
                }
            }
            "read" if !rust => defs.sort_by_key(|d| !is_field(d)),
            _ => {
                defs.sort_by_key(is_field);
                let path_or_call = r.kind == "call" || r.kind == "read";
                if rust && path_or_call && !defs.iter().all(is_field) {
                    defs.retain(|d| !is_field(d));
                }
            }
        }
    }

    /// Adjusts the candidates `defs` of the unbound reference `r` of `file` by what Rust's
    /// rules still say: a bare name that nothing in scope binds is no item of the repository
    /// (see [`Index::rust_scope_is_known`]), and a method called on a receiver of unknown type
    /// inside `impl Trait for T` (`self.inner.advance(n)` in a wrapper) is most likely the
    /// trait's own, as a wrapper delegates to what it wraps. A method called on a receiver of
    /// a type from outside the repository is no inherent method of a type here (see
    /// [`Index::foreign_receiver_candidates`]).
    pub(crate) fn rust_candidates(&self, file: u32, r: &Ref, mut defs: Vec<DefId>) -> Vec<DefId> {
        if self.files[file as usize].lang != Lang::Rust {
            return defs;
        }
        let root = r.qualifier.split("::").next().unwrap_or_default();
        if r.qualifier.contains("::") && matches!(root, "std" | "core" | "alloc") {
            // `core::result::Result`: the standard library's, never an item here.
            defs.clear();
        } else if r.qualifier.is_empty() {
            if self.rust_scope_is_known(file, r) {
                // `Result` beside a crate's own `type Result` is the prelude's; macros are
                // scoped by text order, not by imports.
                defs.retain(|d| self.def(*d).kind == "macro");
            }
        } else if !is_self(&r.qualifier) && !r.qualifier.contains("::") {
            let declared = self.enclosing_trait_members(file, r.scope, &r.name, 0);
            defs.retain(|d| !declared.contains(d));
            defs.splice(0..0, declared);
        }
        if !r.qualifier.is_empty() && !r.qualifier.contains("::") {
            // `dst.len()` on a `&mut [u8]`: the slice's, not a namesake's here.
            let at = r.span.start_byte;
            defs = self.foreign_receiver_candidates(file, &r.qualifier, at, r.scope, defs);
        }
        defs
    }

    /// Returns the members named `name` of the trait that the `impl` block enclosing `scope`
    /// of the Rust file `file` implements, when that trait is in the repository.
    fn enclosing_trait_members(
        &self,
        file: u32,
        scope: Option<u32>,
        name: &str,
        depth: usize,
    ) -> Vec<DefId> {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        let imp = loop {
            let Some(c) = cur else { return Vec::new() };
            let d = &facts.defs[c as usize];
            if d.kind == "impl" {
                break d;
            }
            cur = d.parent;
        };
        let Some(rel) = facts.relations.iter().find(|r| {
            r.kind == "implements"
                && imp.span.start_byte <= r.span.start_byte
                && r.span.start_byte < imp.body_start
        }) else {
            return Vec::new();
        };
        let at = rel.span.start_byte;
        let trait_of = if rel.qualifier.is_empty() {
            self.resolve_unqualified(file, &rel.target, at, imp.parent, depth + 1)
        } else {
            self.resolve_qualified(file, &rel.qualifier, &rel.target, at, imp.parent, depth + 1)
        };
        trait_of
            .map(|o| o.defs)
            .unwrap_or_default()
            .into_iter()
            .filter(|t| self.def(*t).kind == "trait")
            .flat_map(|t| self.class_members(t, name, depth + 1))
            .collect()
    }

    /// Returns true when a bare name of reference `r` in the Rust file `file` can be bound
    /// only by what the rules see: the file's items, its imports and glob imports, every glob
    /// resolved (or from `std`, `core` or `alloc`, which bring nothing of the repository), and
    /// the reference not inside a `macro_rules!` definition (whose names are bound where it
    /// expands).
    fn rust_scope_is_known(&self, file: u32, r: &Ref) -> bool {
        let entry = &self.files[file as usize];
        if entry.lang != Lang::Rust || matches!(r.kind.as_str(), "macro" | "doc") {
            return false;
        }
        let facts = &entry.facts;
        let mut cur = r.scope;
        while let Some(c) = cur {
            if facts.defs[c as usize].kind == "macro" {
                return false;
            }
            cur = facts.defs[c as usize].parent;
        }
        facts
            .imports
            .iter()
            .filter(|i| i.kind == ImportKind::Glob)
            .all(|i| {
                let root = i.module.split("::").next().unwrap_or_default();
                matches!(root, "std" | "core" | "alloc")
                    || !self
                        .modules()
                        .resolve(&self.files, file, &i.module)
                        .is_empty()
                    || self
                        .rust_path(file, &i.module, 1)
                        .is_some_and(|o| !o.is_empty())
            })
    }

    /// Of generic parameters of sibling signatures of one item (an interface's call
    /// signatures `<S>(…): S; <S, A>(…): S`), keeps the nearest declared before byte `at`: the
    /// enclosing signature's. Other definitions are returned as they are.
    fn nearest_type_parameter(&self, defs: Vec<DefId>, at: u32) -> Vec<DefId> {
        let generic = |d: &DefId| is_type_parameter(&self.def(*d).kind);
        if defs.len() < 2 || !defs.iter().all(generic) {
            return defs;
        }
        let start = |d: &DefId| self.def(*d).span.start_byte;
        match defs
            .iter()
            .filter(|d| start(d) <= at)
            .max_by_key(|d| start(d))
        {
            Some(near) => vec![*near],
            None => defs,
        }
    }

    /// Returns false for a method (a function declared in a type's body or `impl` block, or a
    /// Go method) that a bare name used in `scope` of `file` cannot denote: methods are reached
    /// through a receiver or a type, except from the class body itself (outside its methods).
    fn reachable_by_bare_name(&self, file: u32, scope: Option<u32>, d: DefId) -> bool {
        let def = self.def(d);
        if !is_function(&def.kind) {
            return true;
        }
        let facts = &self.files[d.file as usize].facts;
        let in_type = !def.owner.is_empty()
            || def
                .parent
                .is_some_and(|p| is_type_container(&facts.defs[p as usize].kind));
        if !in_type {
            return true;
        }
        if d.file != file {
            return false;
        }
        let mut cur = scope;
        while let Some(c) = cur {
            if Some(c) == def.parent {
                return true;
            }
            if is_function(&facts.defs[c as usize].kind) {
                return false;
            }
            cur = facts.defs[c as usize].parent;
        }
        false
    }

    /// Returns the module outside the repository that a base of `class` (or of its bases in
    /// the repository) comes from, if any: members not found on the class are then most
    /// likely inherited from there (`class Session(MutableMapping)` … `self.get(k)`).
    pub(crate) fn external_base(&self, class: DefId, depth: usize) -> Option<String> {
        if depth > MAX_DEPTH {
            return None;
        }
        let lang = self.files[class.file as usize].lang;
        if !matches!(
            lang,
            Lang::Python | Lang::TypeScript | Lang::Tsx | Lang::JavaScript
        ) {
            return None;
        }
        let cd = self.def(class);
        let facts = &self.files[class.file as usize].facts;
        for r in facts.relations.iter().filter(|r| {
            r.subject == cd.name
                // Markers that bring no methods a class would call on itself.
                && !matches!(r.target.as_str(), "ABC" | "Generic" | "Protocol" | "object")
                && cd.span.start_byte <= r.span.start_byte
                && r.span.start_byte <= cd.body_start
        }) {
            let scope = super::extract::enclosing_def(facts, r.span.start_byte as usize);
            let head = if r.qualifier.is_empty() {
                r.target.as_str()
            } else {
                r.qualifier.split('.').next().unwrap_or_default()
            };
            let o = self.resolve_unqualified(class.file, head, r.span.start_byte, scope, depth + 1);
            if let Some(o) = o
                && o.defs.is_empty()
                && o.modules.is_empty()
                && o.external.is_some()
            {
                return o.external;
            }
        }
        self.class_bases(class, depth + 1)
            .into_iter()
            .find_map(|b| self.external_base(b, depth + 1))
    }

    /// An outcome naming a module outside the repository only: no definition here.
    fn external(module: String) -> Outcome {
        Outcome {
            external: Some(module),
            ..Outcome::bound(Vec::new(), Vec::new())
        }
    }

    /// Returns the candidates for `qualifier::name` (or `qualifier.name`) that the rules could
    /// not bind: members of a type named like the qualifier's last segment first, so
    /// `Glob::new` ranks `Glob`'s `new` above every other `new` while staying a candidate.
    pub(crate) fn qualified_candidates(
        &self,
        file: u32,
        qualifier: &str,
        name: &str,
    ) -> Vec<DefId> {
        let all = self.candidates(file, name, !qualifier.is_empty());
        let owner = qualifier_owner(qualifier);
        if owner.is_empty() {
            return all;
        }
        let (mut first, rest): (Vec<DefId>, Vec<DefId>) = all
            .into_iter()
            .partition(|id| self.files[id.file as usize].facts.container(id.def) == Some(owner));
        first.extend(rest);
        first
    }

    /// Resolves `name` used unqualified at byte `at` of `file`; `None` when nothing binds it.
    pub(crate) fn resolve_unqualified(
        &self,
        file: u32,
        name: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<Outcome> {
        let entry = &self.files[file as usize];
        let facts = &entry.facts;
        // 1. Definitions of this file visible from the scope; the innermost wins.
        let mut ancestors: Vec<u32> = Vec::new();
        let mut cur = scope;
        while let Some(c) = cur {
            ancestors.push(c);
            cur = facts.defs[c as usize].parent;
        }
        let mut best: Vec<(usize, DefId)> = Vec::new();
        for id in self.names.ids(name).iter() {
            if id.file != file {
                continue;
            }
            let d = &facts.defs[id.def as usize];
            if d.kind == "impl" {
                continue;
            }
            let level = match d.parent {
                // A generic parameter outside every item binds nothing.
                None if is_type_parameter(&d.kind) => None,
                None => Some(0),
                // A generic parameter is visible anywhere inside its item, header included.
                Some(p) if is_type_parameter(&d.kind) => ancestors
                    .iter()
                    .position(|a| *a == p)
                    .map(|pos| ancestors.len() - pos),
                Some(p) => {
                    let pd = &facts.defs[p as usize];
                    let encloses = ancestors.iter().position(|a| *a == p);
                    let in_header = d.span.start_byte <= at && at < d.body_start;
                    match encloses {
                        Some(pos)
                            if (is_function(&pd.kind) || pd.kind == "module") && !in_header =>
                        {
                            Some(ancestors.len() - pos)
                        }
                        // Python's class body is a scope of its own for the code directly in
                        // it (`__radd__ = _fail`), not for its methods' bodies; it runs in
                        // order, so only names bound before the use count (`@x.setter` is
                        // the getter `x`).
                        Some(pos)
                            if entry.lang == Lang::Python
                                && is_type_container(&pd.kind)
                                && d.name_span.start_byte < at
                                && ancestors[..pos]
                                    .iter()
                                    .all(|a| !is_function(&facts.defs[*a as usize].kind)) =>
                        {
                            Some(ancestors.len() - pos)
                        }
                        _ => None,
                    }
                }
            };
            if let Some(l) = level {
                best.push((l, *id));
            }
        }
        if let Some(max) = best.iter().map(|(l, _)| *l).max() {
            let defs: Vec<DefId> = best
                .into_iter()
                .filter(|(l, _)| *l == max)
                .map(|(_, d)| d)
                .collect();
            let defs = self.nearest_type_parameter(defs, at);
            return Some(Outcome::bound(self.last_binding(defs), Vec::new()));
        }
        // 2. Imports binding the name.
        let mut out = Outcome::bound(Vec::new(), Vec::new());
        for imp in facts.imports.iter().filter(|i| i.alias == name) {
            self.follow_import(file, imp, &mut out, depth);
        }
        if !out.is_empty() {
            // Several imports of one name (`from .a import X` at module level and again in a
            // function) bind the same definition once.
            dedup_stable(&mut out.defs);
            dedup_stable(&mut out.modules);
            return Some(out);
        }
        // 3. Go: the rest of the package.
        if entry.lang == Lang::Go {
            let defs = self.package_level(file, name);
            if !defs.is_empty() {
                return Some(Outcome::bound(defs, Vec::new()));
            }
        }
        // 4. Glob imports.
        for imp in facts.imports.iter().filter(|i| i.kind == ImportKind::Glob) {
            for m in self.modules().resolve(&self.files, file, &imp.module) {
                let o = self.exports(m, name, depth + 1, false);
                out.defs.extend(o.defs);
                out.modules.extend(o.modules);
            }
        }
        if !out.is_empty() {
            return Some(out);
        }
        // 5. Rust: a module of that name (`util::f()` after `mod util;`).
        if entry.lang == Lang::Rust
            && let Some(m) = self.modules().rust_module(file, name)
        {
            return Some(Outcome::bound(Vec::new(), vec![m]));
        }
        None
    }

    pub(crate) fn follow_import(
        &self,
        file: u32,
        imp: &super::facts::Import,
        out: &mut Outcome,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let lang = self.files[file as usize].lang;
        let module = if lang == Lang::Python
            && imp.kind == ImportKind::Module
            && imp.module.split('.').next() == Some(imp.alias.as_str())
        {
            // `import a.b` binds `a`.
            imp.alias.clone()
        } else {
            imp.module.clone()
        };
        if lang == Lang::Rust && imp.module.is_empty() && imp.kind == ImportKind::Name {
            // `use wire;`, `pub use wire as proto;`: a crate (or module) by name.
            if let Some(m) = self.modules().rust_module(file, &imp.name) {
                out.modules.push(m);
                return;
            }
        }
        let targets = self.modules().resolve(&self.files, file, &module);
        if targets.is_empty() {
            // Rust: a path through inline modules and re-exports (`use facade::sub::Thing`).
            if lang == Lang::Rust
                && let Some(path) = self.rust_path(file, &module, depth + 1)
            {
                let o = match imp.kind {
                    ImportKind::Name => self.member_of(&path, &imp.name, depth + 1),
                    _ => path,
                };
                if !o.defs.is_empty() || !o.modules.is_empty() {
                    out.defs.extend(o.defs);
                    out.modules.extend(o.modules);
                    return;
                }
            }
            out.external = Some(module);
            return;
        }
        match imp.kind {
            ImportKind::Module => out.modules.extend(targets),
            ImportKind::Name => {
                for m in targets {
                    // `export { x as y }` without a source names a local of the same file.
                    let private = m == file;
                    let o = self.exports(m, &imp.name, depth + 1, private);
                    out.defs.extend(o.defs);
                    out.modules.extend(o.modules);
                    if o.external.is_some() && out.external.is_none() {
                        out.external = o.external;
                    }
                }
            }
            ImportKind::Glob => {}
        }
    }

    /// Returns what module file `file` exports under `name`, following re-export chains.
    pub(crate) fn exports(&self, file: u32, name: &str, depth: usize, private: bool) -> Outcome {
        if depth > MAX_DEPTH {
            return Outcome::bound(Vec::new(), Vec::new());
        }
        // A module asked again for the same name while its answer is being worked out (glob
        // imports in a cycle, `from a import *` in `b` and back) adds nothing: without this the
        // walk went round the cycle to the depth limit, exponentially in files with many
        // globs (`nav refs __init__` on the Python standard library took over a minute).
        let key = (file, name.to_string(), private);
        let fresh = EXPORTS_VISITING.with(|v| {
            let mut v = v.borrow_mut();
            if v.contains(&key) {
                false
            } else {
                v.push(key.clone());
                true
            }
        });
        if !fresh {
            return Outcome::bound(Vec::new(), Vec::new());
        }
        let out = self.exports_uncycled(file, name, depth, private);
        EXPORTS_VISITING.with(|v| v.borrow_mut().pop());
        out
    }

    /// [`Index::exports`], once the cycle guard let the question through.
    fn exports_uncycled(&self, file: u32, name: &str, depth: usize, private: bool) -> Outcome {
        let mut out = Outcome::bound(Vec::new(), Vec::new());
        let entry = &self.files[file as usize];
        let facts = &entry.facts;
        for id in self.names.ids(name).iter() {
            let d = &facts.defs.get(id.def as usize);
            if id.file == file
                && d.is_some_and(|d| {
                    d.parent.is_none() && d.kind != "impl" && !is_type_parameter(&d.kind)
                })
            {
                out.defs.push(*id);
            }
        }
        if entry.lang == Lang::Go {
            out.defs = self.package_level(file, name);
        }
        if !out.defs.is_empty() {
            out.defs = self.last_binding(std::mem::take(&mut out.defs));
            return out;
        }
        let visible = |r: bool| r || private || entry.lang == Lang::Python;
        for imp in facts
            .imports
            .iter()
            .filter(|i| i.alias == name && visible(i.reexport))
        {
            self.follow_import(file, imp, &mut out, depth + 1);
        }
        if !out.is_empty() {
            return out;
        }
        for imp in facts
            .imports
            .iter()
            .filter(|i| i.kind == ImportKind::Glob && visible(i.reexport))
        {
            for m in self.modules().resolve(&self.files, file, &imp.module) {
                if m != file {
                    let o = self.exports(m, name, depth + 1, false);
                    out.defs.extend(o.defs);
                    out.modules.extend(o.modules);
                }
            }
        }
        if !out.is_empty() {
            return out;
        }
        match entry.lang {
            Lang::Python => {
                if let Some(m) = self.modules().python_submodule(&self.files, file, name) {
                    out.modules.push(m);
                }
            }
            Lang::Rust => {
                if let Some((root, segs)) = self.modules().rust_module_of(file) {
                    let mut child = segs.clone();
                    child.push(name.to_string());
                    if let Some(m) = self.modules().rust_file(root, &child) {
                        out.modules.push(m);
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// Returns, of Python definitions of one name in one scope, the one the name is bound to
    /// once the scope has run: the last (`@overload` signatures before the implementation, a
    /// property's getter before its setter). Other languages keep every definition.
    pub(crate) fn last_binding(&self, mut defs: Vec<DefId>) -> Vec<DefId> {
        if defs.len() < 2 {
            return defs;
        }
        defs.sort();
        let mut out: Vec<DefId> = Vec::new();
        for d in defs {
            let python = self.files[d.file as usize].lang == Lang::Python;
            match out.last_mut() {
                Some(prev)
                    if python
                        && prev.file == d.file
                        && self.def(*prev).parent == self.def(d).parent =>
                {
                    // Definitions are in source order: the later one wins.
                    *prev = d;
                }
                _ => out.push(d),
            }
        }
        out
    }

    /// Returns the top-level definitions named `name` in the Go package of `file`.
    fn package_level(&self, file: u32, name: &str) -> Vec<DefId> {
        let pkg: HashSet<u32> = self
            .modules()
            .package_files(&self.files, file)
            .iter()
            .copied()
            .collect();
        self.names
            .ids(name)
            .iter()
            .filter(|id| pkg.contains(&id.file))
            .filter(|id| {
                let d = self.def(**id);
                d.parent.is_none() && d.owner.is_empty()
            })
            .copied()
            .collect()
    }

    /// Resolves `qualifier.name` (or `qualifier::name`) at byte `at` of `file`.
    pub(crate) fn resolve_qualified(
        &self,
        file: u32,
        qualifier: &str,
        name: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<Outcome> {
        if depth > MAX_DEPTH {
            return None;
        }
        let entry = &self.files[file as usize];
        // A typed receiver: `client.send()`, `self.session.send()`, `this.http.get()`.
        if let Some(ty) = self.receiver_type(file, qualifier, at, scope, depth) {
            let defs = self.class_members(ty, name, depth);
            // `self.remaining()` in a trait's `&mut self` method: the impl for `&mut T`'s.
            if entry.lang == Lang::Rust
                && qualifier == "self"
                && let Some(d) = self.autoref_mut_impl(file, scope, &defs)
            {
                return Some(Outcome::bound(vec![d], Vec::new()));
            }
            if !defs.is_empty() {
                return Some(Outcome::bound(defs, Vec::new()));
            }
            // Not declared on the type or its bases here: inherited from a base outside.
            if let Some(m) = self.external_base(ty, depth + 1) {
                return Some(Self::external(m));
            }
            if !is_self(qualifier) {
                // The type is known but the member is not declared on it: a candidate.
                return None;
            }
        }
        // A receiver declared as a union of named types (`v: A | B`, `Map<K, A | B>`'s values).
        let union = self.union_members(file, qualifier, name, at, scope, depth);
        if !union.is_empty() {
            return Some(Outcome::bound(union, Vec::new()));
        }
        if let Some(m) = self.foreign_receiver(file, qualifier, at, scope) {
            return Some(Self::external(m));
        }
        if is_self(qualifier) || self.is_receiver_var(file, scope, qualifier) {
            let mut defs = self
                .enclosing_type(file, scope)
                .map(|ty| self.members_by_name(file, &ty, name, depth))
                .unwrap_or_default();
            // Rust: `Self::Item` in `impl Trait for T` is the trait's associated type, which the
            // impl only sets.
            if entry.lang == Lang::Rust
                && qualifier == "Self"
                && !defs.is_empty()
                && defs.iter().all(|d| self.def(*d).kind == "type")
            {
                let declared = self.enclosing_trait_members(file, scope, name, depth);
                if !declared.is_empty() {
                    defs = declared;
                }
            }
            if !defs.is_empty() {
                return Some(Outcome::bound(defs, Vec::new()));
            }
            // Rust's `self::f()` names the current module, not a receiver.
            if !(entry.lang == Lang::Rust && qualifier == "self") {
                return None;
            }
        }
        // Rust's `super::f()` is a module path, resolved below; elsewhere `super` is the parent
        // class.
        if entry.lang != Lang::Rust && (qualifier == "super" || qualifier.starts_with("super(")) {
            return self.resolve_super(file, name, scope, depth);
        }
        self.resolve_path_qualified(file, qualifier, name, at, scope, depth)
    }

    /// Resolves `qualifier.name` (or `qualifier::name`) where `qualifier` is a path of names
    /// (`os.path`, `crate::a::Type`, `Self`), not a typed receiver.
    fn resolve_path_qualified(
        &self,
        file: u32,
        qualifier: &str,
        name: &str,
        at: u32,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<Outcome> {
        let entry = &self.files[file as usize];
        let sep = if entry.lang == Lang::Rust { "::" } else { "." };
        let segs: Vec<&str> = qualifier.split(sep).map(str::trim).collect();
        // Generic arguments (`Vec::<T>`) and calls (`a().b`) are expressions we cannot type.
        let segs: Vec<&str> = segs
            .iter()
            .map(|s| s.split('<').next().unwrap_or(s))
            .collect();
        if !segs.iter().all(|s| is_ident(s)) {
            return None;
        }
        let mut rest = 1;
        let mut cur = match segs[0] {
            "crate" | "super" | "self" if entry.lang == Lang::Rust => {
                // The longest module prefix (`crate::a::b` of `crate::a::b::Type`); the
                // remaining segments are items inside it.
                let (k, m) = (1..=segs.len()).rev().find_map(|k| {
                    self.modules()
                        .rust_module(file, &segs[..k].join("::"))
                        .map(|m| (k, m))
                })?;
                rest = k;
                Outcome::bound(Vec::new(), vec![m])
            }
            "Self" => {
                let ty = self.enclosing_type(file, scope)?;
                let defs = self.members_by_name(file, &ty, name, depth);
                return (!defs.is_empty()).then(|| Outcome::bound(defs, Vec::new()));
            }
            first => {
                let o = self.resolve_unqualified(file, first, at, scope, depth)?;
                // `re.compile`, `os.path.join`, `React.useState`: a member of a module outside
                // the repository is defined there, not by a namesake here.
                if o.defs.is_empty()
                    && o.modules.is_empty()
                    && let Some(m) = &o.external
                    && (entry.lang != Lang::Rust
                        || matches!(m.split("::").next(), Some("std" | "core" | "alloc")))
                {
                    return Some(Self::external(m.clone()));
                }
                o
            }
        };
        for seg in &segs[rest..] {
            cur = self.member_of(&cur, seg, depth);
            if cur.is_empty() {
                return None;
            }
        }
        let out = self.member_of(&cur, name, depth);
        (!out.is_empty()).then_some(out)
    }

    /// Resolves `super().name` / `super.name` used in `scope` of `file`.
    fn resolve_super(
        &self,
        file: u32,
        name: &str,
        scope: Option<u32>,
        depth: usize,
    ) -> Option<Outcome> {
        // `super().m()` / `super.m()`: the member as inherited by the enclosing class, from
        // the first base along the lookup order that has it.
        if let Some(class) = self.enclosing_class(file, scope, depth + 1) {
            for base in self.class_bases(class, depth + 1) {
                let defs = self.class_members(base, name, depth + 1);
                if !defs.is_empty() {
                    return Some(Outcome::bound(defs, Vec::new()));
                }
            }
        }
        let ty = self.enclosing_type(file, scope)?;
        let mut defs = Vec::new();
        for base in self.bases(file, &ty, depth + 1) {
            let b = self.def(base).name.clone();
            defs.extend(self.members_by_name(base.file, &b, name, depth + 1));
        }
        if defs.is_empty()
            && let Some(m) = self
                .enclosing_class(file, scope, depth + 1)
                .and_then(|c| self.external_base(c, depth + 1))
        {
            return Some(Self::external(m));
        }
        (!defs.is_empty()).then(|| Outcome::bound(defs, Vec::new()))
    }

    /// Resolves a Rust path that is not a module file (`facade::sub`, `proto::frame` after
    /// `pub use wire as proto`): its longest module-file prefix, else its first segment as a
    /// name in scope, then each further segment as a member.
    fn rust_path(&self, file: u32, path: &str, depth: usize) -> Option<Outcome> {
        if depth > MAX_DEPTH {
            return None;
        }
        let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let first = segs.first()?;
        let (k, mut cur) = (1..=segs.len())
            .rev()
            .find_map(|k| {
                self.modules()
                    .rust_module(file, &segs[..k].join("::"))
                    .map(|m| (k, Outcome::bound(Vec::new(), vec![m])))
            })
            .or_else(|| {
                self.resolve_unqualified(file, first, 0, None, depth + 1)
                    .filter(|o| !o.defs.is_empty() || !o.modules.is_empty())
                    .map(|o| (1, o))
            })?;
        for seg in &segs[k..] {
            cur = self.member_of(&cur, seg, depth + 1);
            if cur.defs.is_empty() && cur.modules.is_empty() {
                return None;
            }
        }
        Some(cur)
    }

    /// Returns the members named `name` of what `of` denotes (modules or types).
    pub(crate) fn member_of(&self, of: &Outcome, name: &str, depth: usize) -> Outcome {
        let mut out = Outcome::bound(Vec::new(), Vec::new());
        for m in &of.modules {
            let o = self.exports(*m, name, depth + 1, false);
            out.defs.extend(o.defs);
            out.modules.extend(o.modules);
            if o.external.is_some() {
                out.external = o.external;
            }
        }
        for d in &of.defs {
            let def = self.def(*d);
            if is_type_container(&def.kind) || def.kind == "module" || def.kind == "type" {
                let own = if def.kind == "module" || def.kind == "type" {
                    Vec::new()
                } else {
                    self.class_members(*d, name, depth + 1)
                };
                if own.is_empty() {
                    out.defs
                        .extend(self.members_by_name(d.file, &def.name, name, depth + 1));
                } else {
                    out.defs.extend(own);
                }
            }
            // An inline Rust module's `pub use` items.
            if def.kind == "module" && !def.signature.ends_with(';') {
                let facts = &self.files[d.file as usize].facts;
                for imp in facts
                    .imports
                    .iter()
                    .filter(|i| i.alias == name && def.span.contains(&i.span))
                {
                    self.follow_import(d.file, imp, &mut out, depth + 1);
                }
            }
            // Rust `mod util;` declares a module whose items live in its own file.
            if def.kind == "module"
                && def.signature.ends_with(';')
                && let Some(m) = self.rust_child_module(*d)
            {
                let o = self.exports(m, name, depth + 1, false);
                out.defs.extend(o.defs);
                out.modules.extend(o.modules);
            }
        }
        out.defs.sort();
        out.defs.dedup();
        out
    }

    /// Returns the file of the Rust module that declaration `decl` (`mod name;`) declares, if
    /// indexed: a child of its file's module, through the inline modules around it (`mod a {
    /// mod name; }`).
    fn rust_child_module(&self, decl: DefId) -> Option<u32> {
        let (root, segs) = self.modules().rust_module_of(decl.file)?;
        let facts = &self.files[decl.file as usize].facts;
        let mut inline = Vec::new();
        let mut up = facts.defs[decl.def as usize].parent;
        while let Some(p) = up {
            let d = &facts.defs[p as usize];
            if d.kind == "module" {
                inline.push(d.name.clone());
            }
            up = d.parent;
        }
        let mut child = segs.clone();
        child.extend(inline.into_iter().rev());
        child.push(facts.defs[decl.def as usize].name.clone());
        self.modules()
            .rust_file(root, &child)
            .filter(|m| *m != decl.file)
    }

    /// Returns true if and only if `name` is the receiver of the Go method enclosing `scope`.
    fn is_receiver_var(&self, file: u32, scope: Option<u32>, name: &str) -> bool {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        while let Some(c) = cur {
            let d = &facts.defs[c as usize];
            if !d.receiver_var.is_empty() {
                return d.receiver_var == name;
            }
            cur = d.parent;
        }
        false
    }

    /// Returns the name of the type whose body encloses `scope` (class, impl, Go receiver).
    fn enclosing_type(&self, file: u32, scope: Option<u32>) -> Option<String> {
        let facts = &self.files[file as usize].facts;
        let mut cur = scope;
        while let Some(c) = cur {
            let d = &facts.defs[c as usize];
            if !d.owner.is_empty() {
                return Some(d.owner.clone());
            }
            if is_type_container(&d.kind) {
                return Some(d.name.clone());
            }
            cur = d.parent;
        }
        None
    }

    /// Returns members named `name` of type `ty`, preferring `file`, then base types.
    pub(crate) fn members_by_name(
        &self,
        file: u32,
        ty: &str,
        name: &str,
        depth: usize,
    ) -> Vec<DefId> {
        let lang = self.files[file as usize].lang;
        let all: Vec<DefId> = self
            .names
            .ids(name)
            .iter()
            .filter(|id| self.files[id.file as usize].lang.same_family(lang))
            .filter(|id| {
                let f = &self.files[id.file as usize].facts;
                f.container(id.def) == Some(ty) && !is_type_parameter(&f.defs[id.def as usize].kind)
            })
            .copied()
            .collect();
        let local: Vec<DefId> = all.iter().filter(|d| d.file == file).copied().collect();
        if !local.is_empty() {
            return local;
        }
        if !all.is_empty() {
            return all;
        }
        if depth >= 5 {
            return Vec::new();
        }
        // Inherited: resolve each base of `ty` and look there.
        let mut out = Vec::new();
        for base in self.bases(file, ty, depth + 1) {
            let b = self.def(base);
            out.extend(self.members_by_name(base.file, &b.name.clone(), name, depth + 1));
        }
        out.sort();
        out.dedup();
        out
    }

    /// Returns the resolved base types (inherited or implemented) of type `ty` declared in `file`.
    pub(crate) fn bases(&self, file: u32, ty: &str, depth: usize) -> Vec<DefId> {
        let facts = &self.files[file as usize].facts;
        let mut out = Vec::new();
        for rel in facts.relations.iter().filter(|r| r.subject == ty) {
            let scope = super::extract::enclosing_def(facts, rel.span.start_byte as usize);
            let o = if rel.qualifier.is_empty() {
                self.resolve_unqualified(file, &rel.target, rel.span.start_byte, scope, depth)
            } else {
                self.resolve_qualified(
                    file,
                    &rel.qualifier,
                    &rel.target,
                    rel.span.start_byte,
                    scope,
                    depth,
                )
            };
            if let Some(o) = o {
                out.extend(
                    o.defs
                        .into_iter()
                        .filter(|d| self.def(*d).name != ty || d.file != file),
                );
            }
        }
        out
    }

    /// Returns definitions named `name`, best first: same file, same directory, imported
    /// files, then the rest; members first when the use was qualified.
    pub(crate) fn candidates(&self, file: u32, name: &str, member: bool) -> Vec<DefId> {
        self.scored_candidates(file, name, member)
            .into_iter()
            .map(|(_, id)| id)
            .collect()
    }

    /// Returns the best-ranked candidates for `qualifier.name` only: the members of types named
    /// like the qualifier's last segment when there are any, and of those (or of all) the ones
    /// ranked highest. A `def` at a position answers these instead of every ranked match.
    pub(crate) fn best_candidates(&self, file: u32, qualifier: &str, name: &str) -> Vec<DefId> {
        let scored = self.scored_candidates(file, name, !qualifier.is_empty());
        let owner = qualifier_owner(qualifier);
        let owned: Vec<(i32, DefId)> = scored
            .iter()
            .filter(|(_, id)| {
                !owner.is_empty()
                    && self.files[id.file as usize].facts.container(id.def) == Some(owner)
            })
            .copied()
            .collect();
        let pool = if owned.is_empty() { scored } else { owned };
        let best = pool.first().map(|(s, _)| *s);
        pool.into_iter()
            .take_while(|(s, _)| Some(*s) == best)
            .map(|(_, id)| id)
            .collect()
    }

    /// Returns the candidates named `name` with their rank (lower is better), sorted.
    fn scored_candidates(&self, file: u32, name: &str, member: bool) -> Vec<(i32, DefId)> {
        let from = &self.files[file as usize];
        let dir = dir_of(&from.path);
        let imported: HashSet<u32> = from
            .facts
            .imports
            .iter()
            .flat_map(|i| self.modules().resolve(&self.files, file, &i.module))
            .collect();
        let mut scored: Vec<(i32, DefId)> = self
            .names
            .ids(name)
            .iter()
            .filter(|id| self.files[id.file as usize].lang.same_family(from.lang))
            .filter(|id| {
                let d = self.def(**id);
                if d.kind == "impl" || is_type_parameter(&d.kind) {
                    return false;
                }
                let f = &self.files[id.file as usize].facts;
                // Locals of other functions are never candidates.
                d.parent
                    .is_none_or(|p| !is_function(&f.defs[p as usize].kind))
            })
            .map(|id| {
                let d = self.def(*id);
                let f = &self.files[id.file as usize];
                let is_member = d.parent.is_some() || !d.owner.is_empty();
                let mut s = 0;
                if id.file == file {
                    s += 8;
                } else if imported.contains(&id.file) {
                    s += 6;
                } else if dir_of(&f.path) == dir {
                    s += 3;
                }
                // Through a qualifier (`x.send()`) a member outranks a function of the same
                // file: a test `send` never stands for the method it exercises.
                if is_member == member {
                    s += if member { 12 } else { 4 };
                }
                if d.exported {
                    s += 1;
                }
                (-s, *id)
            })
            .collect();
        scored.sort();
        scored
    }
}

/// Removes repeated entries, keeping the first of each in place.
fn dedup_stable<T: PartialEq + Copy>(v: &mut Vec<T>) {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v.iter() {
        if !out.contains(x) {
            out.push(*x);
        }
    }
    *v = out;
}

/// Returns the type a qualifier names last (`Glob` of `crate::glob::Glob<T>`), or empty.
fn qualifier_owner(qualifier: &str) -> &str {
    let owner = qualifier
        .rsplit(['.', ':'])
        .next()
        .map(|s| s.split('<').next().unwrap_or(s).trim())
        .unwrap_or_default();
    if is_self(owner) { "" } else { owner }
}

//! The questions: definition, references, callers, callees, implementations, imports,
//! importers, outline, source of a symbol, and search by name pattern.
//!
//! Every answer carries its resolution label, so a caller can tell a binding the rules proved
//! from a ranked name match.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;

pub use super::resolve::Resolution;

use super::NavError;
use super::extract::{enclosing_def, is_function};
use super::facts::ImportKind;
use super::index::{DefId, Index};
use super::lang::Lang;
use super::resolve::{Outcome, is_type_parameter};
use super::target::At;

/// Types followed when implementations of implementations are collected, at most.
const MAX_IMPLEMENTATION_TYPES: usize = 512;

/// One implementation found: the implementing definition, how it was matched, the relation
/// (`implements`, `derives Clone`), and where it is written when not at the definition (a
/// derive's attribute).
#[derive(Debug, Clone)]
struct Implementation {
    id: DefId,
    resolution: Resolution,
    relation: Option<String>,
    at: Option<super::facts::Span>,
}

/// Returns the item a `derives` relation's attribute stands above: the first definition
/// starting after it, when it has the relation's subject name.
fn derived_item(facts: &super::facts::FileFacts, rel: &super::facts::Relation) -> Option<u32> {
    let next = facts
        .defs
        .iter()
        .enumerate()
        .filter(|(_, d)| d.span.start_byte >= rel.span.end_byte)
        .min_by_key(|(_, d)| d.span.start_byte)?;
    (next.1.name == rel.subject).then_some(next.0 as u32)
}

/// One place in the code, with what is there and how it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    pub path: String,
    pub line: u32,
    pub col: u32,
    pub end_line: u32,
    /// Definition kind (`function`, `class`, …) or reference kind (`call`, `type`, `import`, …).
    pub kind: String,
    pub name: String,
    /// Qualified name of the enclosing definition (the container of a definition, the caller
    /// of a reference), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The definition's signature line, or the source line of a reference.
    pub signature: String,
    pub resolution: Resolution,
}

/// One entry of a file outline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutlineItem {
    pub name: String,
    pub kind: String,
    pub line: u32,
    pub end_line: u32,
    /// Nesting depth (0 at the top level).
    pub depth: u32,
    pub signature: String,
}

/// One import edge between files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportEdge {
    /// The importing file.
    pub path: String,
    pub line: u32,
    /// The module as written.
    pub module: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub alias: String,
    pub reexport: bool,
    /// The imported file inside the repository; `None` for external modules.
    pub target: Option<String>,
}

/// The exact source of one definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolSource {
    pub location: Location,
    pub source: String,
}

/// Splits `Client.send` / `Client::send` into (containers, name).
pub(crate) fn split_symbol(symbol: &str) -> (Vec<&str>, &str) {
    let parts: Vec<&str> = symbol.split(['.', ':']).filter(|s| !s.is_empty()).collect();
    match parts.split_last() {
        Some((last, rest)) => (rest.to_vec(), last),
        None => (Vec::new(), symbol),
    }
}

impl Index {
    /// Returns the definitions a symbol names: `name`, or `Container.name` / `Container::name`
    /// matched against the container chain; local definitions inside functions are excluded.
    pub fn lookup(&self, symbol: &str) -> Vec<DefId> {
        let (containers, name) = split_symbol(symbol);
        let mut out: Vec<DefId> = self
            .names
            .ids(name)
            .iter()
            .filter(|id| {
                let facts = &self.files[id.file as usize].facts;
                let d = &facts.defs[id.def as usize];
                if d.kind == "impl" {
                    return false;
                }
                // Locals and generic parameters are reached through their item, or `--from`.
                if (is_type_parameter(&d.kind)
                    || d.parent
                        .is_some_and(|p| is_function(&facts.defs[p as usize].kind)))
                    && containers.is_empty()
                {
                    return false;
                }
                let chain = facts.container_chain(id.def);
                chain.len() >= containers.len()
                    && chain[chain.len() - containers.len()..] == containers[..]
            })
            .copied()
            .collect();
        out.sort_by(|a, b| {
            (&self.files[a.file as usize].path, a.def)
                .cmp(&(&self.files[b.file as usize].path, b.def))
        });
        out
    }

    pub(crate) fn lookup_or_err(&self, symbol: &str) -> Result<Vec<DefId>, NavError> {
        let mut defs = self.lookup(symbol);
        if defs.is_empty() {
            // `pkg.mod.func`, `crate::a::Type::f`, `src/app.py:main`.
            defs = self.lookup_in_module(symbol);
        }
        if defs.is_empty() {
            return Err(NavError::UnknownSymbol {
                name: symbol.to_string(),
            });
        }
        Ok(defs)
    }

    /// Returns the location of a definition.
    pub fn def_location(&self, id: DefId, resolution: Resolution) -> Location {
        let f = &self.files[id.file as usize];
        let d = &f.facts.defs[id.def as usize];
        let chain = f.facts.container_chain(id.def);
        Location {
            path: f.path.clone(),
            line: d.name_span.line,
            col: d.name_span.col,
            end_line: d.span.end_line,
            kind: d.kind.clone(),
            name: d.name.clone(),
            container: (!chain.is_empty()).then(|| chain.join(".")),
            signature: d.signature.clone(),
            resolution,
        }
    }

    fn module_location(&self, file: u32) -> Location {
        let f = &self.files[file as usize];
        Location {
            path: f.path.clone(),
            line: 1,
            col: 1,
            end_line: 1,
            kind: "module".into(),
            name: f.path.clone(),
            container: None,
            signature: String::new(),
            resolution: Resolution::Resolved,
        }
    }

    /// Returns where `symbol` is defined. With `from` (path, line), resolves the use of the
    /// name on that line through that file's scopes and imports.
    pub fn definition(
        &self,
        symbol: &str,
        from: Option<(&str, u32)>,
    ) -> Result<Vec<Location>, NavError> {
        let at = from.map(|(path, line)| At {
            path: path.to_string(),
            line,
            col: None,
        });
        self.definition_at(Some(symbol), at.as_ref())
    }

    /// Returns where the token at `from` is defined (the use of `symbol` on that line, or the
    /// token at its column), or without `from` every definition `symbol` names. A token the
    /// rules cannot bind answers its best-ranked candidates only.
    pub fn definition_at(
        &self,
        symbol: Option<&str>,
        from: Option<&At>,
    ) -> Result<Vec<Location>, NavError> {
        let t = match self.targets(symbol, from) {
            Err(e @ NavError::BadArgument { .. }) => {
                // A name imported from outside the repository is defined, as far as the
                // repository goes, by its import.
                return match from.and_then(|at| self.external_import_site(symbol, at)) {
                    Some(site) => Ok(vec![site]),
                    None => Err(e),
                };
            }
            t => t?,
        };
        let mut out: Vec<Location> = t
            .defs
            .iter()
            .map(|d| self.def_location(*d, t.resolution))
            .collect();
        out.extend(t.modules.iter().map(|m| self.module_location(*m)));
        Ok(out)
    }

    /// Returns the definition whose name is on `line` of `path`, if any.
    pub fn def_at(&self, path: &str, line: u32) -> Option<DefId> {
        let file = self.file_id(path)?;
        let facts = &self.files[file as usize].facts;
        facts
            .defs
            .iter()
            .position(|d| d.name_span.line == line && d.kind != "impl")
            .map(|d| DefId {
                file,
                def: d as u32,
            })
    }

    /// Returns every reference to definition `id` (including import sites).
    pub fn references_of(&self, id: DefId) -> Vec<Location> {
        let name = self.def(id).name.clone();
        self.references_to(&HashSet::from([id]), &name, |_| true)
    }

    /// Returns every reference to the definitions `symbol` names (including import sites),
    /// resolved ones first, sorted by file and line.
    pub fn references(&self, symbol: &str) -> Result<Vec<Location>, NavError> {
        self.references_at(Some(symbol), None)
    }

    /// Returns every reference to the definitions the query is about (see
    /// [`Index::targets`]): with `from`, the one the token there denotes.
    pub fn references_at(
        &self,
        symbol: Option<&str>,
        from: Option<&At>,
    ) -> Result<Vec<Location>, NavError> {
        if let Some(locs) = from.and_then(|at| self.untyped_member_references(symbol, at)) {
            return Ok(locs);
        }
        match self.target_set(symbol, from) {
            Ok((targets, name)) => Ok(self.references_to(&targets, &name, |_| true)),
            Err(e @ NavError::UnknownSymbol { .. }) => match symbol.filter(|_| from.is_none()) {
                Some(symbol) => self.outside_references(symbol, |_| true).ok_or(e),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Returns the uses of a name of a module outside the repository that `symbol` names
    /// (`json.dumps`, `os.path.join`, `React.useState`): each reference named like its last
    /// segment that the graph binds to an import of that module (`import json` …
    /// `json.dumps(x)`, `from json import dumps` … `dumps(x)`), with the imports of the name
    /// itself. `None` when the symbol is not qualified or nothing here uses it.
    pub(crate) fn outside_references(
        &self,
        symbol: &str,
        keep_kind: impl Fn(&str) -> bool,
    ) -> Option<Vec<Location>> {
        let (qualifier, name) = split_symbol(symbol);
        if qualifier.is_empty() {
            return None;
        }
        let module = qualifier.join(".");
        let rust_module = qualifier.join("::");
        let from_module = |m: &str| {
            m == module
                || m == rust_module
                || m.ends_with(&format!(".{module}"))
                || m.ends_with(&format!("/{module}"))
                || m.ends_with(&format!("::{rust_module}"))
        };
        let mut out = Vec::new();
        let mut lines: HashMap<u32, Vec<String>> = HashMap::new();
        for (fi, ri) in self.refs_named(name) {
            let r = &self.refs_of(fi)[ri as usize];
            if !keep_kind(&r.kind) {
                continue;
            }
            let o = self.resolve_ref(fi, r);
            if o.defs.is_empty() && o.external.as_deref().is_some_and(from_module) {
                let mut loc = self.ref_location(
                    fi,
                    r.span,
                    &r.kind,
                    &r.name,
                    r.scope,
                    Resolution::Resolved,
                    &mut lines,
                );
                loc.signature = format!("from {module}, outside the repository");
                out.push(loc);
            }
        }
        if keep_kind("import") {
            for (fi, f) in self.files.iter().enumerate() {
                for imp in &f.facts.imports {
                    if imp.name == name && from_module(&imp.module) {
                        let mut loc = self.ref_location(
                            fi as u32,
                            imp.span,
                            "import",
                            &imp.alias,
                            None,
                            Resolution::Resolved,
                            &mut lines,
                        );
                        loc.signature = format!("from {module}, outside the repository");
                        out.push(loc);
                    }
                }
            }
        }
        out.sort_by(|a, b| (&a.path, a.line, a.col).cmp(&(&b.path, b.line, b.col)));
        out.dedup_by(|a, b| a.path == b.path && a.line == b.line && a.col == b.col);
        (!out.is_empty()).then_some(out)
    }

    /// Returns the definitions a query is about as a set, with the name they are defined under.
    fn target_set(
        &self,
        symbol: Option<&str>,
        from: Option<&At>,
    ) -> Result<(HashSet<DefId>, String), NavError> {
        let mut t = self.targets(symbol, from)?;
        // At a TypeScript or JavaScript use the graph cannot bind, the best-ranked candidate is
        // the definition answered; the other candidates' uses belong to other symbols.
        let ecma = from.and_then(|at| self.file_id(&at.path)).is_some_and(|f| {
            matches!(
                self.files[f as usize].lang,
                Lang::TypeScript | Lang::Tsx | Lang::JavaScript
            )
        });
        if ecma && t.resolution == Resolution::Candidate {
            t.defs.truncate(1);
        }
        // Through an alias (`Cfg` for `Config`) the definition's own name finds every use.
        let name = t
            .defs
            .first()
            .map_or(t.name.clone(), |d| self.def(*d).name.clone());
        Ok((t.defs.into_iter().collect(), name))
    }

    /// Returns `name` and every local name it is imported under (`import {a as b}`), to a
    /// fixed point, since a reference through an alias carries the alias's name.
    pub(crate) fn alias_names(&self, name: &str) -> Vec<String> {
        let mut names = vec![name.to_string()];
        let mut i = 0;
        while i < names.len() && names.len() < 64 {
            let n = names[i].clone();
            // An import of `n` mentions it: a one-shot query reads the facts of those files
            // only, not every file's.
            for fi in self.files_mentioning(&n) {
                let f = &self.files[fi as usize];
                for imp in &f.facts.imports {
                    if imp.name == n && !imp.alias.is_empty() && !names.contains(&imp.alias) {
                        names.push(imp.alias.clone());
                    }
                }
            }
            i += 1;
        }
        names
    }

    fn references_to(
        &self,
        targets: &HashSet<DefId>,
        name: &str,
        keep_kind: impl Fn(&str) -> bool,
    ) -> Vec<Location> {
        let mut out = Vec::new();
        let mut lines: HashMap<u32, Vec<String>> = HashMap::new();
        let names = self.alias_names(name);
        let overloads = self.overload_groups(targets);
        let expanded: HashSet<DefId>;
        let targets = if overloads.is_empty() {
            targets
        } else {
            expanded = targets.iter().chain(&overloads).copied().collect();
            &expanded
        };
        if keep_kind("overload") {
            for d in &overloads {
                let mut loc = self.def_location(*d, Resolution::Resolved);
                loc.kind = "overload".into();
                out.push(loc);
            }
        }
        for (fi, ri) in names.iter().flat_map(|n| self.refs_named(n)) {
            let r = &self.refs_of(fi)[ri as usize];
            if !keep_kind(&r.kind) {
                continue;
            }
            let o = self.resolve_ref(fi, r);
            // A bound use counts if it binds to a target; an unbound one (a ranked candidate
            // list) only if a target is its best candidate, or grep-like noise would follow.
            let hit = if o.bound {
                o.defs.iter().any(|d| targets.contains(d))
            } else {
                // Attribute reads through unknown receivers (`x.default`) are mostly data;
                // a doc link to a name the file does not bind is prose, not a reference.
                !matches!(r.kind.as_str(), "read" | "field" | "doc")
                    && o.defs.first().is_some_and(|d| targets.contains(d))
                    && !self.is_untyped_member_use(fi, r, o.defs.len())
            };
            if !hit {
                continue;
            }
            out.push(self.ref_location(
                fi,
                r.span,
                &r.kind,
                &r.name,
                r.scope,
                o.resolution(),
                &mut lines,
            ));
        }
        if keep_kind("implementation") {
            out.extend(self.impl_sites(targets, &names, &mut lines));
        }
        if keep_kind("import") {
            // An import of one of the names mentions it (see `files_mentioning`).
            let mut files: Vec<u32> = names
                .iter()
                .flat_map(|n| self.files_mentioning(n))
                .collect();
            files.sort_unstable();
            files.dedup();
            for fi in files {
                let f = &self.files[fi as usize];
                for imp in &f.facts.imports {
                    if !names.contains(&imp.name) && !names.contains(&imp.alias) {
                        continue;
                    }
                    let mut o = Outcome::default();
                    if imp.kind == ImportKind::Name {
                        o = self
                            .resolve_unqualified(fi, &imp.alias, imp.span.start_byte, None, 0)
                            .unwrap_or_default();
                    }
                    if o.defs.iter().any(|d| targets.contains(d)) {
                        out.push(self.ref_location(
                            fi,
                            imp.span,
                            "import",
                            name,
                            None,
                            Resolution::Resolved,
                            &mut lines,
                        ));
                    }
                }
            }
        }
        out.sort_by(|a, b| {
            (a.resolution, &a.path, a.line, a.col).cmp(&(b.resolution, &b.path, b.line, b.col))
        });
        out.dedup_by(|a, b| a.path == b.path && a.line == b.line && a.col == b.col);
        out
    }

    /// Returns every declaration of the TypeScript or Python functions and methods among
    /// `targets` that are overloaded (`function f(a: string): R; function f(a: number): R;
    /// function f(a) {…}`, `@overload def f(…)` before `def f(…)`, a property's getter and
    /// setter), when there is more than one: the language treats them as one symbol, so a
    /// reference to one is a reference to all, and each declaration is itself a reference.
    fn overload_groups(&self, targets: &HashSet<DefId>) -> Vec<DefId> {
        let mut out: BTreeSet<DefId> = BTreeSet::new();
        for t in targets {
            let f = &self.files[t.file as usize];
            if !matches!(f.lang, Lang::TypeScript | Lang::Tsx | Lang::Python) {
                continue;
            }
            let d = &f.facts.defs[t.def as usize];
            if !is_function(&d.kind) {
                continue;
            }
            let group: Vec<DefId> = self
                .names
                .ids(&d.name)
                .iter()
                .filter(|o| {
                    o.file == t.file && {
                        let od = &f.facts.defs[o.def as usize];
                        od.parent == d.parent && is_function(&od.kind)
                    }
                })
                .copied()
                .collect();
            if group.len() > 1 {
                out.extend(group);
            }
        }
        out.into_iter().collect()
    }

    /// Returns the `impl` blocks whose type (`X` in `impl Visitor for X`, `impl<T> X<T>`) is
    /// one of `names` and binds to a target. The type of an impl block is recorded as the
    /// block's name, not as a reference, so reference search asks the blocks themselves.
    fn impl_sites(
        &self,
        targets: &HashSet<DefId>,
        names: &[String],
        lines: &mut HashMap<u32, Vec<String>>,
    ) -> Vec<Location> {
        let mut out = Vec::new();
        for n in names {
            for id in self.names.ids(n).iter() {
                let d = self.def(*id);
                if d.kind != "impl" {
                    continue;
                }
                let o = self
                    .resolve_unqualified(id.file, &d.name, d.name_span.start_byte, d.parent, 0)
                    .filter(|o| !o.defs.is_empty())
                    .unwrap_or_else(|| Outcome {
                        defs: self.candidates(id.file, &d.name, false),
                        ..Outcome::default()
                    });
                let hit = if o.bound {
                    o.defs.iter().any(|t| targets.contains(t))
                } else {
                    o.defs.first().is_some_and(|t| targets.contains(t))
                };
                if hit {
                    out.push(self.ref_location(
                        id.file,
                        d.name_span,
                        "implementation",
                        &d.name,
                        d.parent,
                        o.resolution(),
                        lines,
                    ));
                }
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn ref_location(
        &self,
        file: u32,
        span: super::facts::Span,
        kind: &str,
        name: &str,
        scope: Option<u32>,
        resolution: Resolution,
        lines: &mut HashMap<u32, Vec<String>>,
    ) -> Location {
        let f = &self.files[file as usize];
        let text = lines.entry(file).or_insert_with(|| {
            self.read_source(file)
                .map(|s| {
                    String::from_utf8_lossy(&s)
                        .lines()
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        });
        let signature = text
            .get(span.line.saturating_sub(1) as usize)
            .map(|l| l.trim().chars().take(160).collect())
            .unwrap_or_default();
        Location {
            path: f.path.clone(),
            line: span.line,
            col: span.col,
            end_line: span.end_line,
            kind: kind.to_string(),
            name: name.to_string(),
            container: scope.map(|s| f.facts.qualified_name(s)),
            signature,
            resolution,
        }
    }

    /// Returns the definitions that call `symbol`, one entry per call site.
    pub fn callers(&self, symbol: &str) -> Result<Vec<Location>, NavError> {
        self.callers_at(Some(symbol), None)
    }

    /// Returns the call sites of the definitions the query is about.
    pub fn callers_at(
        &self,
        symbol: Option<&str>,
        from: Option<&At>,
    ) -> Result<Vec<Location>, NavError> {
        let is_call = |k: &str| matches!(k, "call" | "new" | "macro");
        match self.target_set(symbol, from) {
            Ok((targets, name)) => Ok(self.references_to(&targets, &name, is_call)),
            Err(e @ NavError::UnknownSymbol { .. }) => match symbol.filter(|_| from.is_none()) {
                Some(symbol) => self.outside_references(symbol, is_call).ok_or(e),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Returns the definitions `symbol`'s bodies call, resolved where the rules allow.
    pub fn callees(&self, symbol: &str) -> Result<Vec<Location>, NavError> {
        self.callees_at(Some(symbol), None)
    }

    /// Returns what the bodies of the definitions the query is about call.
    pub fn callees_at(
        &self,
        symbol: Option<&str>,
        from: Option<&At>,
    ) -> Result<Vec<Location>, NavError> {
        let defs = self.targets(symbol, from)?.defs;
        let mut seen: BTreeSet<(Resolution, DefId)> = BTreeSet::new();
        for d in defs {
            let facts = &self.files[d.file as usize].facts;
            let span = facts.defs[d.def as usize].span;
            for r in self.refs_of(d.file) {
                if !matches!(r.kind.as_str(), "call" | "new" | "macro") || !span.contains(&r.span) {
                    continue;
                }
                let o = self.resolve_ref(d.file, r);
                let res = o.resolution();
                // Unbound names give ranked candidates; the best one stands for the call.
                let take = if o.bound { o.defs.len() } else { 1 };
                for t in o.defs.into_iter().take(take) {
                    seen.insert((res, t));
                }
            }
        }
        Ok(seen
            .into_iter()
            .map(|(r, d)| self.def_location(d, r))
            .collect())
    }

    /// Returns implementations of `symbol`: subclasses, implementing types, `impl` blocks.
    pub fn implementations(&self, symbol: &str) -> Result<Vec<Location>, NavError> {
        self.implementations_at(Some(symbol), None)
    }

    /// Returns the implementations of the types the query is about: direct ones, and the
    /// implementations of every resolved class or interface among them (a class extending a
    /// class that implements the interface, an interface extending it), to a fixed point.
    pub fn implementations_at(
        &self,
        symbol: Option<&str>,
        from: Option<&At>,
    ) -> Result<Vec<Location>, NavError> {
        let (targets, name) = self.target_set(symbol, from)?;
        let targets = self.with_stub_twins(targets);
        let mut found = self.direct_implementations(&targets, &[name]);
        // One more scan of the relations per level: the resolved classes and interfaces the
        // last level found, not yet followed.
        let mut seen = targets;
        let mut level = 0..found.len();
        while seen.len() < MAX_IMPLEMENTATION_TYPES {
            let frontier: HashSet<DefId> = found[level.clone()]
                .iter()
                .filter(|i| i.resolution == Resolution::Resolved)
                .map(|i| i.id)
                .filter(|id| matches!(self.def(*id).kind.as_str(), "class" | "interface"))
                .filter(|id| seen.insert(*id))
                .collect();
            if frontier.is_empty() {
                break;
            }
            let mut names: Vec<String> = frontier
                .iter()
                .map(|id| self.def(*id).name.clone())
                .collect();
            names.sort_unstable();
            names.dedup();
            let start = found.len();
            found.extend(self.direct_implementations(&frontier, &names));
            level = start..found.len();
        }
        let mut out: Vec<Location> = found
            .into_iter()
            .map(|i| {
                let mut loc = self.def_location(i.id, i.resolution);
                if let Some(at) = i.at {
                    loc.line = at.line;
                    loc.col = at.col;
                    loc.end_line = at.end_line;
                }
                if let Some(rel) = i.relation {
                    loc.kind = format!("{} ({rel})", loc.kind);
                }
                loc
            })
            .collect();
        out.sort_by(|a, b| (a.resolution, &a.path, a.line).cmp(&(b.resolution, &b.path, b.line)));
        out.dedup_by(|a, b| a.path == b.path && a.line == b.line);
        Ok(out)
    }

    /// Returns the types implementing one of `targets` (named one of `names`) directly:
    /// classes and interfaces whose `extends`/`implements`/bases name it, Rust `impl` blocks and
    /// derives; each with its resolution and the relation's kind.
    fn direct_implementations(
        &self,
        targets: &HashSet<DefId>,
        names: &[String],
    ) -> Vec<Implementation> {
        // A Rust struct or enum is implemented by impl blocks and derives, never named where
        // a trait goes (`impl de::Deserializer for &mut Deserializer` implements serde's trait).
        let rust_types = targets.iter().all(|t| {
            self.files[t.file as usize].lang == Lang::Rust
                && matches!(self.def(*t).kind.as_str(), "struct" | "enum" | "type")
        });
        let mut out = if rust_types {
            Vec::new()
        } else {
            self.relation_implementations(targets, names)
        };
        out.extend(self.rust_type_implementations(targets));
        out
    }

    /// Returns the types whose relations (`extends`, `implements`, bases, `impl Trait for`,
    /// derives) name one of `names` (or a local alias of it): resolved when the name resolves
    /// to one of `targets`, candidates when it resolves to nothing.
    fn relation_implementations(
        &self,
        targets: &HashSet<DefId>,
        names: &[String],
    ) -> Vec<Implementation> {
        let mut names: Vec<String> = names.iter().flat_map(|n| self.alias_names(n)).collect();
        names.sort_unstable();
        names.dedup();
        let mut out = Vec::new();
        for (fi, f) in self.files.iter().enumerate() {
            let fi = fi as u32;
            for rel in f
                .facts
                .relations
                .iter()
                .filter(|r| names.contains(&r.target))
                // A Rust supertrait bound (`trait A: B`) is no implementation of `B`.
                .filter(|r| f.lang != Lang::Rust || r.kind != "inherits")
            {
                let scope = enclosing_def(&f.facts, rel.span.start_byte as usize);
                let o = if rel.qualifier.is_empty() {
                    self.resolve_unqualified(fi, &rel.target, rel.span.start_byte, scope, 0)
                } else {
                    self.resolve_qualified(
                        fi,
                        &rel.qualifier,
                        &rel.target,
                        rel.span.start_byte,
                        scope,
                        0,
                    )
                };
                let (hit, res) = match &o {
                    Some(o) if o.defs.iter().any(|d| targets.contains(d)) => {
                        (true, Resolution::Resolved)
                    }
                    Some(o) if !o.defs.is_empty() => (false, Resolution::Candidate),
                    // A base imported from outside the repository (`from logging import
                    // Handler`) is that package's type, never a namesake's here.
                    Some(o) if o.external.is_some() => (false, Resolution::Candidate),
                    _ => (true, Resolution::Candidate),
                };
                if !hit {
                    continue;
                }
                // The subject: the impl block or class holding the relation; for a derive, the
                // item under the attribute, placed at the attribute.
                let (subject, at) = if rel.kind == "derives" {
                    (derived_item(&f.facts, rel), Some(rel.span))
                } else {
                    let holder = scope.or_else(|| {
                        f.facts
                            .defs
                            .iter()
                            .position(|d| d.span.contains(&rel.span))
                            .map(|p| p as u32)
                    });
                    (holder, None)
                };
                // A class never implements itself (`class Environment(BaseEnvironment)` with
                // `from jinja2 import Environment as BaseEnvironment`).
                let subject = subject.filter(|s| !targets.contains(&DefId { file: fi, def: *s }));
                if let Some(s) = subject {
                    out.push(Implementation {
                        id: DefId { file: fi, def: s },
                        resolution: res,
                        relation: Some(rel.kind.clone()),
                        at,
                    });
                }
            }
        }
        out
    }

    /// Returns the inherent and trait impl blocks of the Rust types among `targets`, resolved
    /// when the block's type resolves to it, and the traits it derives, at the attribute.
    fn rust_type_implementations(&self, targets: &HashSet<DefId>) -> Vec<Implementation> {
        let mut out = Vec::new();
        for t in targets {
            let d = self.def(*t);
            if matches!(d.kind.as_str(), "struct" | "enum" | "type") {
                for id in self.names.ids(&d.name).iter() {
                    if self.def(*id).kind != "impl"
                        || self.files[id.file as usize].lang != self.files[t.file as usize].lang
                    {
                        continue;
                    }
                    let resolution = match self.enclosing_class(id.file, Some(id.def), 0) {
                        Some(c) if c == *t => Resolution::Resolved,
                        Some(_) => continue,
                        None => Resolution::Candidate,
                    };
                    out.push(Implementation {
                        id: *id,
                        resolution,
                        relation: None,
                        at: None,
                    });
                }
                let facts = &self.files[t.file as usize].facts;
                for rel in facts
                    .relations
                    .iter()
                    .filter(|r| r.kind == "derives" && r.subject == d.name)
                {
                    if derived_item(facts, rel) == Some(t.def) {
                        out.push(Implementation {
                            id: *t,
                            resolution: Resolution::Resolved,
                            relation: Some(format!("derives {}", rel.target)),
                            at: Some(rel.span),
                        });
                    }
                }
            }
        }
        out
    }
}

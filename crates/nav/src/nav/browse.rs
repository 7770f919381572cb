//! File-level and name-level questions: imports, importers, outline, the source of a symbol,
//! and search by name pattern.

use super::NavError;
use super::extract::is_function;
use super::facts::ImportKind;
use super::index::{DefId, Index};
use super::lang::Lang;
use super::query::{ImportEdge, Location, OutlineItem, Resolution, SymbolSource};
use super::resolve::is_type_parameter;

/// Returns true if and only if a Python import is written to re-export what it binds: a
/// `from … import` in a package's `__init__`. Every Python import binds a name importers can
/// reach (resolution follows them all), but only these are labelled re-exports.
fn python_reexport(path: &str, imp: &super::facts::Import) -> bool {
    let init = path.ends_with("__init__.py") || path.ends_with("__init__.pyi");
    init && imp.kind != ImportKind::Module && imp.module != "__future__"
}

/// How many imports a Rust path is followed through (`crate::x` imported from a module that
/// imports it from another): re-export chains are short, and a cycle must end.
const MAX_REEXPORT_DEPTH: usize = 4;

/// Returns true if and only if the Rust import `imp` binds `name` in its module: `use a::Name`,
/// `use a::Other as Name`, `extern crate name;`, never a glob.
fn rust_binds(imp: &super::facts::Import, name: &str) -> bool {
    if imp.kind == ImportKind::Glob {
        return false;
    }
    let bound = if !imp.alias.is_empty() {
        imp.alias.as_str()
    } else if !imp.name.is_empty() {
        imp.name.as_str()
    } else {
        imp.module.rsplit("::").next().unwrap_or("")
    };
    bound == name
}

/// Returns true if and only if an import binds a name other than the one it imports (`import
/// numpy as np`, `{ a as b }`), not the name a module import binds by default (`sys` of
/// `import sys`, `os` of `import os.path`, `fmt` of Go's `"fmt"`).
fn shows_alias(imp: &super::facts::Import) -> bool {
    if imp.kind != ImportKind::Module {
        return imp.alias != imp.name;
    }
    let first = imp.module.split(['.', '/', ':']).next();
    let last = imp.module.rsplit(['.', '/', ':']).next();
    !imp.alias.is_empty() && first != Some(imp.alias.as_str()) && last != Some(imp.alias.as_str())
}

impl Index {
    fn file_or_err(&self, path: &str) -> Result<u32, NavError> {
        self.file_id(path).ok_or_else(|| NavError::UnknownFile {
            path: path.to_string(),
        })
    }

    /// Returns the imports of file `path` with the files they resolve to.
    pub fn imports_of(&self, path: &str) -> Result<Vec<ImportEdge>, NavError> {
        let file = self.file_or_err(path)?;
        let f = &self.files[file as usize];
        let mut out = Vec::new();
        for imp in &f.facts.imports {
            if imp.module.is_empty() {
                continue; // `export { x as y }` names a local
            }
            let target = match f.lang {
                Lang::Rust => self.rust_import_target(file, imp),
                _ => self.import_target(file, imp),
            };
            out.push(ImportEdge {
                path: f.path.clone(),
                line: imp.span.line,
                module: imp.module.clone(),
                name: imp.name.clone(),
                alias: if shows_alias(imp) {
                    imp.alias.clone()
                } else {
                    String::new()
                },
                reexport: imp.reexport && (f.lang != Lang::Python || python_reexport(&f.path, imp)),
                target: target.map(|t| self.files[t as usize].path.clone()),
            });
        }
        Ok(out)
    }

    /// Returns the file an import (not Rust's) reaches: for `from pkg import sub`, the
    /// submodule when `sub` is one, whatever else the importing file binds to that name, else
    /// a module the imported name resolves to; otherwise the module imported from.
    fn import_target(&self, file: u32, imp: &super::facts::Import) -> Option<u32> {
        let module = self
            .modules()
            .resolve(&self.files, file, &imp.module)
            .last()
            .copied();
        if imp.kind != ImportKind::Name || imp.name.is_empty() {
            return module;
        }
        let sub = module.and_then(|package| {
            self.modules()
                .python_submodule(&self.files, package, &imp.name)
        });
        sub.or_else(|| {
            self.resolve_unqualified(file, &imp.alias, imp.span.start_byte, None, 0)
                .and_then(|o| o.modules.last().copied())
        })
        .or(module)
    }

    /// Returns the file a Rust `use` leaf imports from: the leaf's own file when the leaf is a
    /// module (`use crate::util::{iter}`), else the file of the path before it, where an item
    /// on that path (`self::Kind::*` of an enum) stands for the file holding it. `self` and
    /// `super` count the inline modules (`mod tests { use super::*; }`) around the `use`.
    fn rust_import_target(&self, file: u32, imp: &super::facts::Import) -> Option<u32> {
        self.rust_import_target_within(file, imp, 0)
    }

    /// [`Self::rust_import_target`], `depth` imports deep: a path through a name the module it
    /// reaches imports (`crate::alloc::…` through the root's `extern crate alloc;`,
    /// `crate::EitherOrBoth::*` through `pub use either_or_both::EitherOrBoth;`) leads where
    /// that import leads, as rust-analyzer resolves it.
    fn rust_import_target_within(
        &self,
        file: u32,
        imp: &super::facts::Import,
        depth: usize,
    ) -> Option<u32> {
        let facts = &self.files[file as usize].facts;
        let inline = facts
            .defs
            .iter()
            .filter(|d| d.kind == "module" && d.span.contains(&imp.span))
            .count();
        let mut segs: Vec<&str> = imp.module.split("::").filter(|s| !s.is_empty()).collect();
        if imp.kind == ImportKind::Name && !imp.name.is_empty() {
            let mut leaf = segs.clone();
            leaf.push(&imp.name);
            if let Some(t) = self.rust_module_path(file, &leaf, inline) {
                return Some(t);
            }
        }
        // The segment after the longest prefix that names a module.
        let mut next: Option<&str> = None;
        while !segs.is_empty() {
            if let Some(t) = self.rust_module_path(file, &segs, inline) {
                let through = next.filter(|_| depth < MAX_REEXPORT_DEPTH).and_then(|n| {
                    self.files[t as usize]
                        .facts
                        .imports
                        .iter()
                        .find(|i| rust_binds(i, n))
                });
                return match through {
                    Some(i) => self.rust_import_target_within(t, i, depth + 1),
                    None => Some(t),
                };
            }
            next = segs.pop();
        }
        None
    }

    /// Resolves the module path `segs` written inside `inline` inline modules of `file`.
    fn rust_module_path(&self, file: u32, segs: &[&str], inline: usize) -> Option<u32> {
        let ups = segs.iter().take_while(|s| **s == "super").count();
        match segs.first() {
            // Still inside this file's inline modules: `self::x` or `super::x` names an item
            // of this file.
            Some(&"self") if inline > 0 => return Some(file),
            Some(&"super") if ups <= inline => return Some(file),
            Some(&"super") => {
                let module = ["super"]
                    .repeat(ups - inline)
                    .into_iter()
                    .chain(segs[ups..].iter().copied())
                    .collect::<Vec<_>>()
                    .join("::");
                return self.modules().rust_module(file, &module);
            }
            _ => {}
        }
        self.modules().rust_module(file, &segs.join("::"))
    }

    /// Returns the imports, anywhere in the view, that resolve to file `path`.
    pub fn importers_of(&self, path: &str) -> Result<Vec<ImportEdge>, NavError> {
        let target = self.file_or_err(path)?;
        let mut out = Vec::new();
        for f in &self.files {
            if f.facts.imports.iter().all(|i| i.module.is_empty()) {
                continue;
            }
            for e in self.imports_of(&f.path)? {
                if e.target.as_deref() == Some(self.files[target as usize].path.as_str()) {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }

    /// Returns the definitions of file `path` in source order with their nesting depth.
    pub fn outline(&self, path: &str) -> Result<Vec<OutlineItem>, NavError> {
        let file = self.file_or_err(path)?;
        let facts = &self.files[file as usize].facts;
        Ok(facts
            .defs
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                // Locals of functions and generic parameters clutter an outline.
                !is_type_parameter(&d.kind)
                    && d.parent
                        .is_none_or(|p| !is_function(&facts.defs[p as usize].kind))
            })
            .map(|(i, d)| OutlineItem {
                name: d.name.clone(),
                kind: d.kind.clone(),
                line: d.name_span.line,
                end_line: d.span.end_line,
                depth: facts.container_chain(i as u32).len() as u32,
                signature: d.signature.clone(),
            })
            .collect())
    }

    /// Returns the exact source text of every definition `symbol` names.
    pub fn show(&self, symbol: &str) -> Result<Vec<SymbolSource>, NavError> {
        let defs = self.lookup_or_err(symbol)?;
        let r = if defs.len() == 1 {
            Resolution::Resolved
        } else {
            Resolution::Candidate
        };
        let mut out = Vec::new();
        for d in defs {
            let src = self.read_source(d.file)?;
            let def = self.def(d);
            // Start at the beginning of the line so indentation is kept.
            let start = src[..def.span.start_byte as usize]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |p| p + 1);
            let end = (def.span.end_byte as usize).min(src.len());
            out.push(SymbolSource {
                location: self.def_location(d, r),
                source: String::from_utf8_lossy(src.get(start..end).unwrap_or_default())
                    .into_owned(),
            });
        }
        Ok(out)
    }

    /// Returns definitions whose name matches `pattern` (a glob such as `send*`, or a plain
    /// substring), optionally of one kind; exact matches first.
    pub fn search(&self, pattern: &str, kind: Option<&str>) -> Result<Vec<Location>, NavError> {
        let is_glob = pattern.contains(['*', '?', '[']);
        let lower = pattern.to_lowercase();
        let matcher = if is_glob {
            Some(
                globset::GlobBuilder::new(pattern)
                    .case_insensitive(pattern == lower)
                    .build()
                    .map_err(|e| NavError::BadArgument {
                        message: format!(
                            "bad name pattern `{pattern}`: {e}; use * and ? as wildcards"
                        ),
                    })?
                    .compile_matcher(),
            )
        } else {
            None
        };
        let mut hits: Vec<(u8, DefId)> = Vec::new();
        for (name, ids) in self.names.table() {
            let rank = if name == pattern {
                0
            } else if let Some(m) = &matcher {
                if m.is_match(name) { 1 } else { continue }
            } else if name.to_lowercase().starts_with(&lower) {
                1
            } else if name.to_lowercase().contains(&lower) {
                2
            } else {
                continue;
            };
            for id in ids {
                let facts = &self.files[id.file as usize].facts;
                let d = &facts.defs[id.def as usize];
                if d.kind == "impl"
                    || is_type_parameter(&d.kind)
                    || d.parent
                        .is_some_and(|p| is_function(&facts.defs[p as usize].kind))
                {
                    continue;
                }
                if kind.is_some_and(|k| k != d.kind) {
                    continue;
                }
                hits.push((rank, *id));
            }
        }
        hits.sort_by(|a, b| {
            (a.0, &self.files[a.1.file as usize].path, a.1.def).cmp(&(
                b.0,
                &self.files[b.1.file as usize].path,
                b.1.def,
            ))
        });
        Ok(hits
            .into_iter()
            .map(|(_, d)| self.def_location(d, Resolution::Resolved))
            .collect())
    }
}

//! What a query is about: the definitions a symbol names, or those the token at a position
//! (`--from FILE:LINE[:COL]`) resolves to through its syntactic context — its qualifier or
//! receiver, `self`/`this`/`Self`, the imports and scopes around it.
//!
//! A position narrows every query the same way: `def` answers what the token denotes, and
//! `refs`, `callers`, `callees` and `impls` answer about that definition only, instead of every
//! definition sharing its name.

use super::NavError;
use super::facts::Ref;
use super::index::{DefId, Index};
use super::query::{Location, split_symbol};
use super::resolve::{Outcome, Resolution};

/// A position in a file of the view: a repository-relative path, a 1-based line and, when
/// given, a 1-based column (in bytes, as editors count them for ASCII).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub path: String,
    pub line: u32,
    pub col: Option<u32>,
}

impl At {
    /// Parses `path:line` or `path:line:col`.
    pub fn parse(from: &str) -> Result<At, NavError> {
        let bad = || NavError::BadArgument {
            message: format!(
                "`{from}` is not a location; write it as path:line or path:line:col, e.g. src/app.py:120"
            ),
        };
        let (head, last) = from.rsplit_once(':').ok_or_else(bad)?;
        let last: u32 = last.parse().map_err(|_| bad())?;
        let at = match head.rsplit_once(':') {
            Some((path, line)) if line.parse::<u32>().is_ok() => At {
                path: path.to_string(),
                line: line.parse().map_err(|_| bad())?,
                col: Some(last),
            },
            _ => At {
                path: head.to_string(),
                line: last,
                col: None,
            },
        };
        if at.path.is_empty() || at.line == 0 || at.col == Some(0) {
            return Err(bad());
        }
        Ok(at)
    }
}

/// The definitions a query is about.
#[derive(Debug, Clone)]
pub struct Targets {
    pub defs: Vec<DefId>,
    /// Files the token denotes (a module imported whole).
    pub modules: Vec<u32>,
    /// Resolved when the rules bound the token (or the name names one definition).
    pub resolution: Resolution,
    /// The name the definitions are known by at the query (the token's text).
    pub name: String,
}

/// What stands at a position.
pub(crate) enum Token<'a> {
    /// A use of a name, with its qualifier or receiver.
    Ref(&'a Ref),
    /// The name of a definition of the file.
    Def(u32),
    /// A word the facts hold no use of (an imported name, `self`, a word in a comment).
    Word(String),
}

/// Returns true if and only if column `col` of a line lies on the token spanning `span`.
fn covers(span: &super::facts::Span, line: u32, col: u32) -> bool {
    span.line == line
        && span.col <= col
        && col < span.col + (span.end_byte - span.start_byte).max(1)
}

/// Returns the identifier around byte column `col` (1-based) of `line`, if any.
pub fn word_at(line: &str, col: u32) -> Option<String> {
    let bytes = line.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    let at = (col as usize).checked_sub(1)?;
    if at >= bytes.len() || !is_word(bytes[at]) {
        return None;
    }
    let start = (0..=at)
        .rev()
        .take_while(|&i| is_word(bytes[i]))
        .last()
        .unwrap_or(at);
    let end = (at..bytes.len())
        .take_while(|&i| is_word(bytes[i]))
        .last()
        .map_or(at, |e| e + 1);
    line.get(start..end).map(str::to_string)
}

impl Index {
    /// Returns the definitions a query is about: with `from`, what the token at that position
    /// denotes (the token named `symbol`'s last segment on that line, or the one at the column);
    /// without it, every definition `symbol` names.
    pub fn targets(&self, symbol: Option<&str>, from: Option<&At>) -> Result<Targets, NavError> {
        let Some(at) = from else {
            let symbol = symbol.ok_or_else(|| NavError::BadArgument {
                message: "give a symbol, or a position with --from path:line:col".into(),
            })?;
            let defs = self.lookup_or_err(symbol)?;
            let resolution = if defs.len() == 1 {
                Resolution::Resolved
            } else {
                Resolution::Candidate
            };
            return Ok(Targets {
                defs,
                modules: Vec::new(),
                resolution,
                name: split_symbol(symbol).1.to_string(),
            });
        };
        let (name, outcome) = self.resolve_at(symbol, at)?;
        let what = symbol.map_or_else(|| name.clone(), str::to_string);
        if outcome.defs.is_empty() && outcome.modules.is_empty() {
            if let Some(ext) = outcome.external {
                return Err(NavError::BadArgument {
                    message: format!(
                        "`{what}` at {}:{} comes from `{ext}`, which is outside this repository",
                        at.path, at.line
                    ),
                });
            }
            return Err(NavError::UnknownSymbol { name: what });
        }
        Ok(Targets {
            resolution: outcome.resolution(),
            defs: outcome.defs,
            modules: outcome.modules,
            name,
        })
    }

    /// Returns where the name at `at` is imported from outside the repository, as a location
    /// of kind `import` (its signature names the module), if it is.
    pub(crate) fn external_import_site(&self, symbol: Option<&str>, at: &At) -> Option<Location> {
        let file = self.file_id(&at.path)?;
        let (name, outcome) = self.resolve_at(symbol, at).ok()?;
        let module = outcome.external?;
        let f = &self.files[file as usize];
        let imp = f
            .facts
            .imports
            .iter()
            .find(|i| i.alias == name && (i.module == module || module.starts_with(&i.module)))
            .or_else(|| f.facts.imports.iter().find(|i| i.alias == name))?;
        Some(Location {
            path: f.path.clone(),
            line: imp.span.line,
            col: imp.span.col,
            end_line: imp.span.end_line,
            kind: "import".into(),
            name,
            container: None,
            signature: format!("from {module}, outside the repository"),
            resolution: Resolution::Resolved,
        })
    }

    /// Returns a note for a query by a bare name that several definitions share (the answer
    /// covers all of them), naming them and how to pick one; `None` otherwise.
    pub fn ambiguity_note(&self, symbol: Option<&str>, from: Option<&At>) -> Option<String> {
        if from.is_some() {
            return None;
        }
        let defs = self.lookup(symbol?);
        if defs.len() < 2 {
            return None;
        }
        let mut names: Vec<String> = defs
            .iter()
            .take(4)
            .map(|d| {
                let f = &self.files[d.file as usize];
                format!(
                    "{} ({}:{})",
                    f.facts.qualified_name(d.def),
                    f.path,
                    self.def(*d).name_span.line
                )
            })
            .collect();
        if defs.len() > 4 {
            names.push(format!("{} more", defs.len() - 4));
        }
        Some(format!(
            "note: `{}` names {} definitions: {}; this answer covers them all. For one, give a qualified name or --from PATH:LINE[:COL] (tool argument `from`).",
            symbol?,
            defs.len(),
            names.join(", ")
        ))
    }

    /// Resolves the token at `at` (named like `symbol`'s last segment when given) and returns
    /// its name with what it denotes; an unbound token keeps only its best-ranked candidates.
    fn resolve_at(&self, symbol: Option<&str>, at: &At) -> Result<(String, Outcome), NavError> {
        let file = self
            .file_id(&at.path)
            .ok_or_else(|| NavError::UnknownFile {
                path: at.path.clone(),
            })?;
        let token = self.token_at(file, symbol, at)?;
        let (name, outcome) = match token {
            Token::Ref(r)
                if r.qualifier.is_empty() && matches!(r.name.as_str(), "Self" | "this") =>
            {
                let o = self.resolve_word(file, &r.name, at.line);
                (r.name.clone(), o)
            }
            Token::Ref(r) => {
                let mut o = self.resolve_ref(file, r);
                if !o.bound {
                    let best = self.best_candidates(file, &r.qualifier, &r.name);
                    o.defs = self.rust_candidates(file, r, best);
                    self.rank_by_use(file, r, &mut o.defs);
                }
                (r.name.clone(), o)
            }
            Token::Def(d) => (
                self.files[file as usize].facts.defs[d as usize]
                    .name
                    .clone(),
                Outcome {
                    defs: vec![DefId { file, def: d }],
                    bound: true,
                    ..Outcome::default()
                },
            ),
            Token::Word(w) => {
                let o = self.resolve_word(file, &w, at.line);
                (w, o)
            }
        };
        Ok((name, outcome))
    }

    /// Returns the token at `at`: at the column when given, else the first use (or
    /// definition) on the line of the name `symbol` ends with.
    pub(crate) fn token_at(
        &self,
        file: u32,
        symbol: Option<&str>,
        at: &At,
    ) -> Result<Token<'_>, NavError> {
        let facts = &self.files[file as usize].facts;
        let refs = self.refs_of(file);
        let (containers, name) = match symbol {
            Some(s) => {
                let (c, n) = split_symbol(s);
                (c, Some(n))
            }
            None => (Vec::new(), None),
        };
        if let Some(col) = at.col {
            if let Some(r) = refs.iter().find(|r| covers(&r.span, at.line, col)) {
                return Ok(Token::Ref(r));
            }
            if let Some(d) = facts
                .defs
                .iter()
                .position(|d| d.kind != "impl" && covers(&d.name_span, at.line, col))
            {
                return Ok(Token::Def(d as u32));
            }
            let src = self.read_source(file)?;
            let text = String::from_utf8_lossy(&src);
            let word = text
                .lines()
                .nth(at.line as usize - 1)
                .and_then(|l| word_at(l, col));
            return match word.or_else(|| name.map(str::to_string)) {
                Some(w) => Ok(Token::Word(w)),
                None => Err(NavError::BadArgument {
                    message: format!(
                        "no name at {}:{}:{col}; point the column at an identifier",
                        at.path, at.line
                    ),
                }),
            };
        }
        let name = name.ok_or_else(|| NavError::BadArgument {
            message: format!(
                "`{}:{}` has no column: give the symbol too, or write path:line:col",
                at.path, at.line
            ),
        })?;
        let on_line: Vec<&Ref> = refs
            .iter()
            .filter(|r| r.span.line == at.line && r.name == name)
            .collect();
        // `Builder::new` prefers the use of `new` reached through `Builder`.
        let qualified = containers.last().and_then(|c| {
            on_line
                .iter()
                .find(|r| r.qualifier.rsplit([':', '.']).next() == Some(*c))
        });
        if let Some(r) = qualified.or(on_line.first()) {
            return Ok(Token::Ref(r));
        }
        if let Some(d) = facts
            .defs
            .iter()
            // An impl block's name is its type, a use of a name defined elsewhere.
            .position(|d| d.name_span.line == at.line && d.name == name && d.kind != "impl")
        {
            return Ok(Token::Def(d as u32));
        }
        Ok(Token::Word(name.to_string()))
    }

    /// Resolves a word no reference records (an imported name, `self`, `Self`, `this`) in the
    /// scope of `line` of `file`.
    fn resolve_word(&self, file: u32, word: &str, line: u32) -> Outcome {
        let facts = &self.files[file as usize].facts;
        // A name in an import statement is what the import names (`asdict` in `from ._funcs
        // import asdict as _asdict`), whatever the file defines under that name later.
        if let Some(imp) = facts.imports.iter().find(|i| {
            i.span.line <= line
                && line <= i.span.end_line
                && !i.module.is_empty()
                && (i.name == word || i.alias == word)
        }) {
            let mut out = Outcome {
                bound: true,
                ..Outcome::default()
            };
            self.follow_import(file, imp, &mut out, 0);
            if !out.defs.is_empty() || !out.modules.is_empty() || out.external.is_some() {
                return out;
            }
        }
        let scope = facts
            .defs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.span.line <= line && line <= d.span.end_line)
            .map(|(i, _)| i as u32)
            .next_back();
        if matches!(word, "self" | "Self" | "this" | "cls")
            && let Some(class) = self.enclosing_class(file, scope, 0)
        {
            return Outcome {
                defs: vec![class],
                bound: true,
                ..Outcome::default()
            };
        }
        let at = scope.map_or(0, |s| facts.defs[s as usize].body_start);
        match self.resolve_unqualified(file, word, at, scope, 0) {
            Some(o) if !o.defs.is_empty() || !o.modules.is_empty() || o.external.is_some() => o,
            _ => Outcome {
                defs: self.best_candidates(file, "", word),
                ..Outcome::default()
            },
        }
    }
}

impl Index {
    /// Returns the definitions a module-qualified symbol names: `pkg.mod.func`,
    /// `mod.Class.method`, `crate::net::Client::new`, `other_crate::Type`, or a file and a
    /// name, `src/app.py:main` / `src/app.py:App.run`. The module part names a file by its
    /// module path (a suffix of it will do); the rest is looked up in that file, then among
    /// what the file exports (its re-exports included).
    pub(crate) fn lookup_in_module(&self, symbol: &str) -> Vec<DefId> {
        if let Some((path, rest)) = symbol.split_once(':')
            && super::lang::Lang::from_path(path).is_some()
        {
            let Some(file) = self.file_id(path) else {
                return Vec::new();
            };
            let rest = rest.trim_start_matches(':');
            return self
                .lookup(rest)
                .into_iter()
                .filter(|d| d.file == file)
                .collect();
        }
        let (containers, name) = split_symbol(symbol);
        let mut out = Vec::new();
        for k in 1..=containers.len() {
            let (module, inner) = containers.split_at(k);
            let files = self.files_of_module(module);
            for file in files {
                let facts = &self.files[file as usize].facts;
                let mut found: Vec<DefId> = self
                    .names
                    .ids(name)
                    .iter()
                    .filter(|id| id.file == file && facts.defs[id.def as usize].kind != "impl")
                    .filter(|id| facts.container_chain(id.def) == inner)
                    .copied()
                    .collect();
                if found.is_empty() {
                    // Re-exported by the module (`pkg/__init__.py`, a barrel, `pub use`).
                    let path: Vec<&str> = inner.iter().copied().chain([name]).collect();
                    let mut cur = self.exports(file, path[0], 0, false);
                    for seg in &path[1..] {
                        cur = self.member_of(&cur, seg, 0);
                    }
                    found = cur.defs;
                }
                out.extend(found);
            }
            if !out.is_empty() {
                break;
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Returns the files whose module path ends with `module` (`json`, `courier.client`,
    /// `crate::net`, `wire::frame`, `src/core/stream`).
    fn files_of_module(&self, module: &[&str]) -> Vec<u32> {
        // `core/stream` is two segments, as `core.stream` is.
        let want: Vec<&str> = module
            .iter()
            .flat_map(|s| s.split('/'))
            .filter(|s| !matches!(*s, "crate" | "self" | ""))
            .collect();
        if want.is_empty() {
            return Vec::new();
        }
        (0..self.files.len() as u32)
            .filter(|f| {
                let segs = self.module_segments(*f);
                segs.len() >= want.len()
                    && segs[segs.len() - want.len()..]
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a == b)
            })
            .collect()
    }

    /// Returns the module path of a file as its segments: `src/courier/client` of
    /// `src/courier/client.py`; a Rust file's crate name and module path (`wire/frame`).
    fn module_segments(&self, file: u32) -> Vec<String> {
        let f = &self.files[file as usize];
        if let Some((root, segs)) = self.modules().rust_module_of(file) {
            let mut out: Vec<String> = self.modules().crate_name(root).into_iter().collect();
            out.extend(segs.iter().cloned());
            return out;
        }
        let stem = f.path.rsplit_once('.').map_or(f.path.as_str(), |(s, _)| s);
        let stem = stem.strip_suffix(".d").unwrap_or(stem);
        let mut segs: Vec<String> = stem.split('/').map(str::to_string).collect();
        if matches!(
            segs.last().map(String::as_str),
            Some("__init__" | "index" | "mod")
        ) {
            segs.pop();
        }
        segs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_parse_with_and_without_a_column() {
        assert_eq!(
            At::parse("src/a.rs:40").unwrap(),
            At {
                path: "src/a.rs".into(),
                line: 40,
                col: None
            }
        );
        assert_eq!(At::parse("src/a.rs:40:13").unwrap().col, Some(13));
        assert!(At::parse("src/a.rs").is_err());
        assert!(At::parse("src/a.rs:0").is_err());
        assert!(At::parse("src/a.rs:x").is_err());
    }

    #[test]
    fn the_word_at_a_column_is_the_whole_identifier() {
        let line = "    let b = Builder::new();";
        assert_eq!(word_at(line, 13).as_deref(), Some("Builder"));
        assert_eq!(word_at(line, 24).as_deref(), Some("new"));
        assert_eq!(word_at(line, 20), None);
    }
}

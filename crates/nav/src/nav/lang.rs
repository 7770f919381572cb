//! The supported languages: file detection, grammars, and the compiled query sets.
//!
//! Queries are data files under `src/nav/queries/<lang>/`, compiled once per process. The
//! query text and grammar version are hashed into the facts version, so editing a query file
//! invalidates exactly the cached facts it would change.
//!
//! A language's tags and imports files stay separate files but compile into one query, so a
//! single pass of the query cursor over the tree matches both: walking the tree costs as much
//! as matching, and a second pass for a handful of import patterns cost almost as much as the
//! first. Capture names are mapped to [`Capture`] roles once here instead of being compared
//! as strings for every capture of every match.

use std::sync::OnceLock;

use tree_sitter::Query;

use super::NavError;

/// A language the index understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
}

/// The compiled queries of one language.
pub struct LangQueries {
    /// The tags patterns followed by the imports patterns.
    pub query: Query,
    /// Index of the first imports pattern in `query`; tags patterns come before it.
    pub imports_from: usize,
    /// The role of each capture of `query`, by capture index.
    pub captures: Vec<Capture>,
    /// The same patterns for the walk matcher, when they stay within its subset; otherwise
    /// tree-sitter's query cursor runs them.
    pub matcher: Option<super::matcher::Matcher>,
}

/// What a capture name means to the extractor (see `queries/README.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    Name,
    Body,
    Qualifier,
    Subject,
    Target,
    Receiver,
    ReceiverVar,
    Local,
    Ignore,
    Module,
    Alias,
    Tree,
    /// A comment whose `{@link X}` / `@see X` names are doc references.
    Doc,
    /// The type or callee of a `@binding.*` match.
    Type,
    /// `@<family>.<kind>`: the node a pattern is about; see [`LangQueries::kind`].
    Role(Family),
    /// A capture the extractor does not read.
    Other,
}

/// The part before the dot of a role capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Definition,
    Container,
    Reference,
    Relation,
    /// What a name holds (`@binding.annotation`, `.call`, …): a type fact.
    Binding,
    Import,
    Reexport,
    Export,
}

impl LangQueries {
    /// Returns the kind of role capture number `capture` (`function` in
    /// `@definition.function`), or an empty string for a capture without one.
    pub fn kind(&self, capture: u32) -> &str {
        self.query
            .capture_names()
            .get(capture as usize)
            .and_then(|n| n.split_once('.'))
            .map_or("", |(_, kind)| kind)
    }
}

impl Capture {
    /// Returns the role of the capture named `name`.
    fn parse(name: &str) -> Capture {
        match name {
            "name" => Capture::Name,
            "body" => Capture::Body,
            "qualifier" => Capture::Qualifier,
            "subject" => Capture::Subject,
            "target" => Capture::Target,
            "receiver" => Capture::Receiver,
            "receiver_var" => Capture::ReceiverVar,
            "local" => Capture::Local,
            "ignore" => Capture::Ignore,
            "module" => Capture::Module,
            "alias" => Capture::Alias,
            "tree" => Capture::Tree,
            "doc" => Capture::Doc,
            "type" => Capture::Type,
            _ => {
                let Some((family, _)) = name.split_once('.') else {
                    return Capture::Other;
                };
                let family = match family {
                    "definition" => Family::Definition,
                    "container" => Family::Container,
                    "reference" => Family::Reference,
                    "relation" => Family::Relation,
                    "binding" => Family::Binding,
                    "import" => Family::Import,
                    "reexport" => Family::Reexport,
                    "export" => Family::Export,
                    _ => return Capture::Other,
                };
                Capture::Role(family)
            }
        }
    }
}

impl Lang {
    /// Every supported language.
    pub const ALL: [Lang; 6] = [
        Lang::Rust,
        Lang::Python,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::JavaScript,
        Lang::Go,
    ];

    /// Returns the language of a path by its extension, or `None` for files the index skips.
    pub fn from_path(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "go" => Lang::Go,
            _ => return None,
        })
    }

    /// Returns the stable lower-case name used in output and the cache.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
            Lang::Go => "go",
        }
    }

    /// Returns true if and only if both languages share one module system (JS and TS do).
    pub fn same_family(self, other: Lang) -> bool {
        self.family() == other.family()
    }

    fn family(self) -> u8 {
        match self {
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript => 0,
            Lang::Rust => 1,
            Lang::Python => 2,
            Lang::Go => 3,
        }
    }

    /// Returns the tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    /// Returns the query sources (tags, imports), shared parts first.
    fn sources(self) -> (String, String) {
        const ECMA_TAGS: &str = include_str!("queries/ecma/tags.scm");
        const ECMA_IMPORTS: &str = include_str!("queries/ecma/imports.scm");
        match self {
            Lang::Rust => (
                include_str!("queries/rust/tags.scm").into(),
                include_str!("queries/rust/imports.scm").into(),
            ),
            Lang::Python => (
                include_str!("queries/python/tags.scm").into(),
                include_str!("queries/python/imports.scm").into(),
            ),
            Lang::Go => (
                include_str!("queries/go/tags.scm").into(),
                include_str!("queries/go/imports.scm").into(),
            ),
            Lang::JavaScript => (
                format!(
                    "{ECMA_TAGS}\n{}",
                    include_str!("queries/javascript/tags.scm")
                ),
                format!(
                    "{ECMA_IMPORTS}\n{}",
                    include_str!("queries/javascript/imports.scm")
                ),
            ),
            Lang::TypeScript | Lang::Tsx => (
                format!(
                    "{ECMA_TAGS}\n{}",
                    include_str!("queries/typescript/tags.scm")
                ),
                format!(
                    "{ECMA_IMPORTS}\n{}",
                    include_str!("queries/typescript/imports.scm")
                ),
            ),
        }
    }

    /// Returns the version of this language's facts: a hash of its query sources, grammar
    /// ABI and extractor version, which keys the caches. Computed without compiling the
    /// queries, so a query answered from a stored snapshot compiles none.
    pub fn version(self) -> u64 {
        static CELLS: [OnceLock<u64>; 6] = [const { OnceLock::new() }; 6];
        *CELLS[self as usize].get_or_init(|| {
            let (tags, imports) = self.sources();
            fnv1a(&[
                tags.as_bytes(),
                imports.as_bytes(),
                &self.grammar().abi_version().to_le_bytes(),
                self.name().as_bytes(),
                super::extract::EXTRACTOR_VERSION.as_bytes(),
            ])
        })
    }

    /// Returns the compiled queries, compiling them on first use.
    pub fn queries(self) -> Result<&'static LangQueries, NavError> {
        static CELLS: [OnceLock<Result<LangQueries, String>>; 6] = [const { OnceLock::new() }; 6];
        let slot = &CELLS[self as usize];
        let compiled = slot.get_or_init(|| {
            let grammar = self.grammar();
            let (tags, imports) = self.sources();
            let text = format!("{tags}\n{imports}");
            let query = match Query::new(&grammar, &text) {
                Ok(q) => q,
                Err(e) => {
                    // Name the file at fault, with positions inside that file.
                    Query::new(&grammar, &tags).map_err(|e| format!("tags.scm: {e}"))?;
                    Query::new(&grammar, &imports).map_err(|e| format!("imports.scm: {e}"))?;
                    return Err(format!("tags.scm with imports.scm: {e}"));
                }
            };
            let imports_from = (0..query.pattern_count())
                .find(|&i| query.start_byte_for_pattern(i) > tags.len())
                .unwrap_or(query.pattern_count());
            let captures = query
                .capture_names()
                .iter()
                .map(|n| Capture::parse(n))
                .collect();
            // The walk matcher runs the languages whose facts it was checked to reproduce
            // exactly. In the Go and JavaScript files a definition can be captured by two
            // patterns, and which one wins follows tree-sitter's order of matches, which the
            // matcher does not reproduce; TypeScript's files are not in its subset.
            let checked = matches!(self, Lang::Python | Lang::Rust);
            let matcher = if !checked || std::env::var_os("ORCHESTRA_NAV_QUERY_CURSOR").is_some() {
                None
            } else {
                super::matcher::Matcher::compile(&grammar, &text, &query)
            };
            Ok(LangQueries {
                imports_from,
                captures,
                query,
                matcher,
            })
        });
        compiled.as_ref().map_err(|message| NavError::Query {
            lang: self.name(),
            message: message.clone(),
        })
    }
}

/// Returns the 64-bit FNV-1a hash of the concatenated parts (stable across runs and builds).
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in *part {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

//! The supported languages: file detection, grammars, and the compiled query sets.
//!
//! Queries are data files under `src/nav/queries/<lang>/`, compiled once per process. The
//! query text and grammar version are hashed into the facts version, so editing a query file
//! invalidates exactly the cached facts it would change.

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
    pub tags: Query,
    pub imports: Query,
    /// Hash of the grammar version and query text; part of every cache key.
    pub version: u64,
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

    /// Returns the compiled queries, compiling them on first use.
    pub fn queries(self) -> Result<&'static LangQueries, NavError> {
        static CELLS: [OnceLock<Result<LangQueries, String>>; 6] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let slot = &CELLS[self as usize];
        let compiled = slot.get_or_init(|| {
            let grammar = self.grammar();
            let (tags, imports) = self.sources();
            let version = fnv1a(&[
                tags.as_bytes(),
                imports.as_bytes(),
                &grammar.abi_version().to_le_bytes(),
                self.name().as_bytes(),
                super::extract::EXTRACTOR_VERSION.as_bytes(),
            ]);
            let tags = Query::new(&grammar, &tags).map_err(|e| format!("tags.scm: {e}"))?;
            let imports =
                Query::new(&grammar, &imports).map_err(|e| format!("imports.scm: {e}"))?;
            Ok(LangQueries {
                tags,
                imports,
                version,
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

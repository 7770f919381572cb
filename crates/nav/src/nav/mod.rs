//! Code navigation through a symbol graph: definitions, references, calls, imports and type
//! relations of Rust, Python, TypeScript/TSX, JavaScript and Go, resolved through each
//! language's import and scope rules, cached by git blob id.
//!
//! Layers, bottom up: `lang` and `queries/` (tree-sitter grammars and query files),
//! `extract` (one blob → [`FileFacts`]; `use_tree` unfolds Rust `use` trees), `cache` (facts
//! per blob in SQLite in the common git directory), `worktree` (which blob each file holds
//! now), [`Index`] (the worktree's view, refreshed incrementally and parsed in parallel),
//! `modules` and `resolve` (imports, re-exports, scopes), `query` and `browse` (the questions
//! people and agents ask), `map` (a ranked repository map under a token budget), `render`
//! (bounded text that degrades instead of truncating), `tools` (the same queries as agent
//! tools taking JSON arguments) and `mcp` (those tools served over MCP on stdio).

#[cfg(test)]
mod at_uses;
#[cfg(test)]
mod at_uses_impls;
#[cfg(test)]
mod at_uses_imports;
#[cfg(test)]
mod at_uses_inferred;
#[cfg(test)]
mod at_uses_unions;
mod browse;
mod cache;
mod doc_links;
mod elements;
mod extract;
mod facts;
mod index;
mod inferred;
mod lang;
mod macro_impls;
mod manifests;
mod map;
mod matcher;
pub mod mcp;
mod mod_paths;
mod modules;
mod narrowing;
mod patterns;
mod query;
mod render;
mod resolve;
mod rust_autoref;
mod rust_foreign;
mod snapshot;
mod stub_twins;
mod target;
pub mod tools;
mod typefacts;
mod types;
mod unions;
mod untyped;
mod use_tree;
mod worktree;

use std::path::PathBuf;

pub use cache::Cache;
pub use extract::Extractor;
pub use facts::{Def, FileFacts, Import, ImportKind, Ref, Relation, Span, TypeFact};
pub use index::{DefId, FileEntry, Index, RefreshStats};
pub use lang::Lang;
pub use map::{MapOptions, estimate_tokens};
pub use query::{ImportEdge, Location, OutlineItem, Resolution, SymbolSource};
pub use render::{
    Detail, PlaceOptions, Rendered, render_imports, render_locations, render_locations_at,
    render_outline, render_places, render_places_with,
};
pub use target::{At, Targets, word_at};

/// Why a navigation request failed; each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum NavError {
    #[error("the {lang} navigation queries do not compile: {message}")]
    Query { lang: &'static str, message: String },
    #[error("navigation cache {path}: {source}; delete the file to rebuild it")]
    Cache {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot encode the facts of blob {oid}: {message}")]
    Encode { oid: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Git(#[from] orchestra_git::git::GitError),
    #[error(transparent)]
    Repo(#[from] orchestra_git::git::RepoError),
    #[error(
        "`{path}` is not an indexed source file; give a path relative to the repository root of a .rs, .py, .ts, .tsx, .js or .go file"
    )]
    UnknownFile { path: String },
    #[error(
        "no symbol named `{name}`; try `git orchestra nav search '{name}*'` to find similar names"
    )]
    UnknownSymbol { name: String },
    #[error("{message}")]
    BadArgument { message: String },
    #[error("cannot read the git index of {path}: {message}")]
    GitIndex { path: PathBuf, message: String },
    #[error("MCP session failed: {message}")]
    Mcp { message: String },
}

impl NavError {
    /// Returns true if and only if this is the cache failing because this process may not
    /// write it (a read-only file or directory, a sandbox).
    pub fn cache_unwritable(&self) -> bool {
        match self {
            NavError::Cache {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            } => matches!(
                e.code,
                rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::CannotOpen
                    | rusqlite::ErrorCode::PermissionDenied
            ),
            NavError::Io { source, .. } => source.kind() == std::io::ErrorKind::PermissionDenied,
            _ => false,
        }
    }
}

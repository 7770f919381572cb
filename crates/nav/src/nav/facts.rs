//! The facts extracted from one blob: definitions, references, local bindings, imports and
//! type relations, exactly as the syntax shows them, before any cross-file resolution.
//!
//! Facts depend only on a blob's bytes and the query set, which is why they are cached by blob
//! id and shared by every commit and worktree that contains the blob. They are stored in a
//! compact binary form (postcard), so no field may be skipped when serialising.

use serde::{Deserialize, Serialize};

/// A position range in a file: zero-based byte offsets, one-based lines and columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Span {
    #[serde(rename = "b")]
    pub start_byte: u32,
    #[serde(rename = "e")]
    pub end_byte: u32,
    #[serde(rename = "l")]
    pub line: u32,
    #[serde(rename = "c")]
    pub col: u32,
    #[serde(rename = "el")]
    pub end_line: u32,
}

impl Span {
    /// Returns true if and only if `other` lies entirely inside this span.
    pub fn contains(&self, other: &Span) -> bool {
        self.start_byte <= other.start_byte && other.end_byte <= self.end_byte
    }
}

/// One definition: a named item with its kind, container and signature line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Def {
    #[serde(rename = "n")]
    pub name: String,
    /// `function`, `method`, `class`, `struct`, `interface`, `trait`, `type`, `enum`,
    /// `module`, `constant`, `variable`, `field`, `macro`, `overload` (a TypeScript overload
    /// signature), `type_parameter` (generic and const parameters, scoped to their item), or
    /// `impl` (a container only).
    #[serde(rename = "k")]
    pub kind: String,
    /// Index of the enclosing definition in the same file, if any.
    #[serde(rename = "p", default)]
    pub parent: Option<u32>,
    /// The whole item.
    #[serde(rename = "s")]
    pub span: Span,
    /// The name token.
    #[serde(rename = "ns")]
    pub name_span: Span,
    /// Byte where the item's body starts; names bound by the item are visible from here on.
    #[serde(rename = "bs")]
    pub body_start: u32,
    /// The first line of the item, trimmed.
    #[serde(rename = "sig")]
    pub signature: String,
    /// The owning type named outside the nesting (a Go method's receiver), or empty.
    #[serde(rename = "o", default)]
    pub owner: String,
    /// The name a Go method binds its receiver to (`s` in `func (s *Store) Get()`), or empty.
    #[serde(rename = "rv", default)]
    pub receiver_var: String,
    /// True when the item is exported (`pub`, `export`, capitalised Go name, no leading `_`).
    #[serde(rename = "x", default)]
    pub exported: bool,
}

/// One reference to a name: a call, a type use, a read, or an implementation site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ref {
    #[serde(rename = "n")]
    pub name: String,
    /// `call`, `type`, `read`, `new`, `implementation`, `inherit`, `macro`, `doc` (a
    /// `{@link X}` / `@see X` in a comment).
    #[serde(rename = "k")]
    pub kind: String,
    /// What the name is reached through: `self`, `Foo`, `crate::a`, `mod.sub`, or empty.
    #[serde(rename = "q", default)]
    pub qualifier: String,
    #[serde(rename = "s")]
    pub span: Span,
    /// Index of the innermost enclosing definition (the caller), if any.
    #[serde(rename = "in", default)]
    pub scope: Option<u32>,
}

/// How an import binds names in the importing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportKind {
    /// Binds the module itself under `alias` (`import a.b as c`, `import * as ns`, Go import).
    Module,
    /// Binds `name` from the module under `alias` (`from m import n as a`, `use m::n as a`).
    Name,
    /// Binds every public name of the module (`from m import *`, `use m::*`).
    Glob,
}

/// One import or re-export as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Import {
    #[serde(rename = "k")]
    pub kind: ImportKind,
    /// The module as written: `..pkg.mod`, `./util`, `crate::a::b`, `github.com/x/y`.
    #[serde(rename = "m")]
    pub module: String,
    /// The imported name (for `Name` imports); `default` for JS default imports.
    #[serde(rename = "n", default)]
    pub name: String,
    /// The local name it is bound to (equal to `name` when not aliased).
    #[serde(rename = "a", default)]
    pub alias: String,
    /// True when the binding is visible to importers of this file (`pub use`, `export … from`,
    /// and every Python import, since Python modules re-export what they import).
    #[serde(rename = "r", default)]
    pub reexport: bool,
    #[serde(rename = "s")]
    pub span: Span,
}

/// A type relation: `subject` implements or inherits `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    /// `implements` or `inherits`.
    #[serde(rename = "k")]
    pub kind: String,
    #[serde(rename = "sub")]
    pub subject: String,
    #[serde(rename = "t")]
    pub target: String,
    /// What the target name is reached through (`abc` in `abc.ABC`), or empty.
    #[serde(rename = "q", default)]
    pub qualifier: String,
    #[serde(rename = "s")]
    pub span: Span,
}

/// A local type fact: what a name is known to hold, as the syntax says it — an annotation
/// (`app: Flask`, `let c: Client`, a struct field, `-> Session`) or the value of a call
/// (`client = Client()`, `let c = Client::new()?`, `new Client()`, `this.x = new X()`).
///
/// Facts are resolved on demand ([`crate::nav`]'s `types`); one that does not resolve to a single
/// type leaves the receiver untyped, so its members stay candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeFact {
    /// The name bound: a variable, `self.x` / `this.x`, a field of the enclosing type, or
    /// empty for the return type of the enclosing function.
    #[serde(rename = "v")]
    pub var: String,
    /// For an annotation, the type as written; for a call, the callee (`Client`,
    /// `Client::new`, `app.test_client`); for an alias, the other name.
    #[serde(rename = "t")]
    pub ty: String,
    /// `annotation`, `call`, `unwrap` (a call whose `Result`/`Option`/`Promise` is unwrapped
    /// by `?`, `.unwrap()` or `await`), `alias` (`self.session = session`: what another name
    /// holds there), `element` (`for x in items`, `items.forEach((x) => …)`: an element of
    /// the collection `ty`) or `unknown`.
    #[serde(rename = "k")]
    pub kind: String,
    /// Where the binding is made; a later binding of the same name in the same scope wins.
    #[serde(rename = "s")]
    pub span: Span,
    /// The function or type the binding belongs to (none at module level).
    #[serde(rename = "in", default)]
    pub scope: Option<u32>,
}

/// Everything extracted from one blob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileFacts {
    #[serde(rename = "d")]
    pub defs: Vec<Def>,
    #[serde(rename = "r")]
    pub refs: Vec<Ref>,
    #[serde(rename = "i")]
    pub imports: Vec<Import>,
    #[serde(rename = "rel")]
    pub relations: Vec<Relation>,
    #[serde(rename = "ty")]
    pub types: Vec<TypeFact>,
    /// Rust `#[path = "…"] mod name;` declarations: the files they load.
    #[serde(rename = "mp", default)]
    pub mod_paths: Vec<ModPath>,
}

/// A Rust module declaration whose file a `#[path]` attribute names (`#[path = "unix.rs"] mod
/// sys;`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModPath {
    /// The module's name (`sys`).
    #[serde(rename = "n")]
    pub name: String,
    /// The path as written, relative to the declaring file's directory (`unix.rs`).
    #[serde(rename = "p")]
    pub path: String,
    /// The `mod` item.
    #[serde(rename = "s")]
    pub span: Span,
    /// The inline modules around the declaration, outermost first (`["a"]` for `mod a {
    /// #[path = "x.rs"] mod b; }`): the path is then relative to their directory (`a/`).
    #[serde(rename = "in", default)]
    pub inline: Vec<String>,
}

impl FileFacts {
    /// Returns the chain of container names of definition `idx`, outermost first.
    pub fn container_chain(&self, idx: u32) -> Vec<&str> {
        let mut chain = Vec::new();
        if let Some(d) = self.defs.get(idx as usize)
            && !d.owner.is_empty()
        {
            chain.push(d.owner.as_str());
        }
        let mut cur = self.defs.get(idx as usize).and_then(|d| d.parent);
        while let Some(p) = cur {
            match self.defs.get(p as usize) {
                Some(d) => {
                    chain.push(d.name.as_str());
                    cur = d.parent;
                }
                None => break,
            }
        }
        chain.reverse();
        chain
    }

    /// Returns the name of the innermost container of definition `idx` (type, class, module).
    pub fn container(&self, idx: u32) -> Option<&str> {
        self.container_chain(idx).last().copied()
    }

    /// Returns the dotted qualified name of definition `idx` (`Client.send`).
    pub fn qualified_name(&self, idx: u32) -> String {
        let mut parts = self.container_chain(idx);
        if let Some(d) = self.defs.get(idx as usize) {
            parts.push(&d.name);
        }
        parts.join(".")
    }
}

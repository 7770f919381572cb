//! Rust `#[path = "…"] mod name;` declarations: extracted from a file's syntax, and followed
//! when a module path does not name a file by layout.
//!
//! As rustc reads them, the path of a `mod` declared at a file's top level is relative to the
//! directory of the declaring file, whether that file is a `mod.rs`/crate root or not.

use tree_sitter::Node;

use super::extract::{node_text, span_of};
use super::facts::ModPath;

/// Returns the `#[path]` module declarations (without a body) of a Rust file, at its top level
/// and inside its inline modules (`mod a { #[path = "x.rs"] mod b; }`).
///
/// A plain `#[path]` wins over `#[cfg_attr(…, path = "…")]`; of several of those, the first
/// whose condition does not name Windows, else the first.
pub(super) fn extract(root: Node, source: &[u8]) -> Vec<ModPath> {
    let mut out = Vec::new();
    extract_in(root, source, &mut Vec::new(), &mut out);
    out
}

/// Adds to `out` the `#[path]` declarations among the items of `list` (a file or an inline
/// module's body), inside the inline modules `inline`, and those of the inline modules in it.
fn extract_in(list: Node, source: &[u8], inline: &mut Vec<String>, out: &mut Vec<ModPath>) {
    // Deeper than this is no module tree anyone writes; it bounds the recursion.
    const MAX_INLINE: usize = 16;
    let mut cursor = list.walk();
    for item in list.named_children(&mut cursor) {
        if item.kind() != "mod_item" {
            continue;
        }
        let Some(name) = item.child_by_field_name("name") else {
            continue;
        };
        if let Some(body) = item.child_by_field_name("body") {
            if inline.len() < MAX_INLINE {
                inline.push(node_text(name, source));
                extract_in(body, source, inline, out);
                inline.pop();
            }
            continue;
        }
        if let Some(path) = declared_path(item, source) {
            out.push(ModPath {
                name: node_text(name, source),
                path,
                span: span_of(item),
                inline: inline.clone(),
            });
        }
    }
}

/// Returns the path the `#[path]` or `#[cfg_attr(…, path = …)]` attributes of the `mod` item
/// `item` name, if any.
fn declared_path(item: Node, source: &[u8]) -> Option<String> {
    let mut found: Vec<(u8, String)> = Vec::new();
    let mut attr = item.prev_named_sibling();
    while let Some(a) = attr {
        match a.kind() {
            "attribute_item" => {
                found.extend(path_attribute(&node_text(a, source)));
            }
            "line_comment" | "block_comment" => {}
            _ => break,
        }
        attr = a.prev_named_sibling();
    }
    // Attributes were met last first; the lowest rank, earliest in the source, wins.
    found.reverse();
    found
        .into_iter()
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, path)| path)
}

/// Returns the rank and path of a `#[path = "…"]` (rank 0) or `#[cfg_attr(cond, path = "…")]`
/// (rank 1, or 2 when the condition names Windows) attribute, `None` for any other attribute.
fn path_attribute(text: &str) -> Option<(u8, String)> {
    let inner = text.strip_prefix("#[")?.strip_suffix(']')?.trim();
    if let Some(args) = inner
        .strip_prefix("cfg_attr")
        .and_then(|a| a.trim_start().strip_prefix('('))
        .and_then(|a| a.trim_end().strip_suffix(')'))
    {
        let (cond, attr) = args.rsplit_once(',')?;
        let rank = if cond.contains("windows") { 2 } else { 1 };
        return Some((rank, path_value(attr.trim())?));
    }
    Some((0, path_value(inner)?))
}

/// Returns the string of a `path = "…"` meta item.
fn path_value(meta: &str) -> Option<String> {
    let value = meta.strip_prefix("path")?.trim_start().strip_prefix('=')?;
    let literal = value.trim().strip_prefix('"')?.strip_suffix('"')?;
    (!literal.is_empty() && !literal.contains('\\')).then(|| literal.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::at_uses::repo;

    #[test]
    fn path_attribute_reads_only_path_attributes() {
        let path = |t: &str| super::path_attribute(t);
        assert_eq!(path("#[path = \"unix.rs\"]"), Some((0, "unix.rs".into())));
        assert_eq!(path("#[path=\"../a/b.rs\"]"), Some((0, "../a/b.rs".into())));
        assert_eq!(
            path("#[cfg_attr(unix, path = \"u.rs\")]"),
            Some((1, "u.rs".into()))
        );
        assert_eq!(
            path("#[cfg_attr(all(windows, x), path = \"w.rs\")]"),
            Some((2, "w.rs".into()))
        );
        assert_eq!(path("#[cfg_attr(unix, derive(Debug))]"), None);
        assert_eq!(path("#[pathological = \"x\"]"), None);
        assert_eq!(path("#[cfg(unix)]"), None);
    }

    #[test]
    fn a_cfg_attr_path_other_than_windows_is_followed() {
        let r = repo(&[
            (
                "src/lib.rs",
                concat!(
                    "#[cfg_attr(windows, path = \"windows.rs\")]\n", // 1
                    "#[cfg_attr(unix, path = \"unix.rs\")]\n",       // 2
                    "mod imp;\n",                                    // 3
                    "pub fn f() { imp::open(); }\n",                 // 4
                ),
            ),
            ("src/unix.rs", "pub fn open() {}\n"),
            ("src/windows.rs", "pub fn open() {}\n"),
        ]);
        assert_eq!(r.def("src/lib.rs", 4, "open"), ["src/unix.rs:1"]);
    }

    #[test]
    fn definitions_and_imports_go_through_a_path_module() {
        let r = repo(&[
            (
                "src/lib.rs",
                concat!(
                    "#[cfg(unix)]\n",                // 1
                    "#[path = \"impls/unix.rs\"]\n", // 2
                    "mod sys;\n",                    // 3
                    "use crate::sys::Handle;\n",     // 4
                    "pub fn f() {\n",                // 5
                    "    let _h = Handle::new();\n", // 6
                    "    sys::open();\n",            // 7
                    "}\n",                           // 8
                ),
            ),
            (
                "src/impls/unix.rs",
                concat!(
                    "pub struct Handle;\n",                              // 1
                    "impl Handle { pub fn new() -> Self { Handle } }\n", // 2
                    "pub fn open() {}\n",                                // 3
                ),
            ),
            (
                "src/impls/windows.rs",
                concat!(
                    "pub struct Handle;\n",                              // 1
                    "impl Handle { pub fn new() -> Self { Handle } }\n", // 2
                    "pub fn open() {}\n",                                // 3
                ),
            ),
        ]);
        let f = "src/lib.rs";
        assert_eq!(r.def(f, 4, "Handle"), ["src/impls/unix.rs:1"]);
        assert_eq!(r.def(f, 6, "Handle"), ["src/impls/unix.rs:1"]);
        assert_eq!(r.def(f, 7, "open"), ["src/impls/unix.rs:3"]);
        let imports = r.index.imports_of(f).unwrap();
        let targets: Vec<_> = imports.iter().map(|i| i.target.as_deref()).collect();
        assert_eq!(targets, [Some("src/impls/unix.rs")]);
        assert_eq!(r.refs("src/impls/unix.rs", 3, "open"), ["src/lib.rs:7"]);
    }

    #[test]
    fn a_path_module_in_a_non_mod_rs_file_is_relative_to_its_directory() {
        let r = repo(&[
            ("src/lib.rs", "pub mod net;\n"),
            ("src/net/mod.rs", "pub mod client;\n"),
            (
                "src/net/client.rs",
                concat!(
                    "#[path = \"../shared/util.rs\"]\n", // 1
                    "mod util;\n",                       // 2
                    "use self::util::Retry;\n",          // 3
                    "pub fn go(r: Retry) {\n",           // 4
                    "    util::helper();\n",             // 5
                    "}\n",                               // 6
                ),
            ),
            (
                "src/shared/util.rs",
                "pub struct Retry;\npub fn helper() {}\n",
            ),
            ("src/other.rs", "pub struct Retry;\npub fn helper() {}\n"),
        ]);
        let f = "src/net/client.rs";
        assert_eq!(r.def(f, 4, "Retry"), ["src/shared/util.rs:1"]);
        assert_eq!(r.def(f, 5, "helper"), ["src/shared/util.rs:2"]);
        let imports = r.index.imports_of(f).unwrap();
        let targets: Vec<_> = imports.iter().map(|i| i.target.as_deref()).collect();
        assert_eq!(targets, [Some("src/shared/util.rs")]);
    }

    #[test]
    fn a_path_loaded_file_reaches_its_parent_through_super() {
        let r = repo(&[
            (
                "src/lib.rs",
                concat!(
                    "pub struct Config;\n",          // 1
                    "#[path = \"impls/unix.rs\"]\n", // 2
                    "mod sys;\n",                    // 3
                ),
            ),
            (
                "src/impls/unix.rs",
                concat!(
                    "use super::Config;\n",        // 1
                    "pub fn open(c: Config) {}\n", // 2
                ),
            ),
            ("src/other.rs", "pub struct Config;\n"),
        ]);
        let f = "src/impls/unix.rs";
        assert_eq!(r.def(f, 2, "Config"), ["src/lib.rs:1"]);
        let imports = r.index.imports_of(f).unwrap();
        let targets: Vec<_> = imports.iter().map(|i| i.target.as_deref()).collect();
        assert_eq!(targets, [Some("src/lib.rs")]);
    }

    #[test]
    fn a_path_loaded_file_owns_its_directory_for_its_own_modules() {
        let r = repo(&[
            (
                "src/lib.rs",
                concat!(
                    "#[path = \"impls/unix.rs\"]\n", // 1
                    "mod sys;\n",                    // 2
                    "use crate::sys::fs::File;\n",   // 3
                    "pub fn f(_f: File) {}\n",       // 4
                ),
            ),
            ("src/impls/unix.rs", "pub mod fs;\n"),
            ("src/impls/fs.rs", "pub struct File;\n"),
            ("src/other.rs", "pub struct File;\n"),
        ]);
        assert_eq!(r.def("src/lib.rs", 4, "File"), ["src/impls/fs.rs:1"]);
    }

    #[test]
    fn a_path_module_inside_an_inline_module_is_relative_to_its_directory() {
        let r = repo(&[
            (
                "src/lib.rs",
                concat!(
                    "pub mod a {\n",                         // 1
                    "    #[path = \"x.rs\"]\n",              // 2
                    "    pub mod b;\n",                      // 3
                    "}\n",                                   // 4
                    "use crate::a::b::Thing;\n",             // 5
                    "pub fn f(_t: Thing) { a::b::go(); }\n", // 6
                ),
            ),
            ("src/a/x.rs", "pub struct Thing;\npub fn go() {}\n"),
            ("src/x.rs", "pub struct Thing;\npub fn go() {}\n"),
        ]);
        let f = "src/lib.rs";
        assert_eq!(r.def(f, 5, "Thing"), ["src/a/x.rs:1"]);
        assert_eq!(r.def(f, 6, "Thing"), ["src/a/x.rs:1"]);
        assert_eq!(r.def(f, 6, "go"), ["src/a/x.rs:2"]);
        let imports = r.index.imports_of(f).unwrap();
        let targets: Vec<_> = imports.iter().map(|i| i.target.as_deref()).collect();
        assert_eq!(targets, [Some("src/a/x.rs")]);
        assert_eq!(r.refs("src/a/x.rs", 2, "go"), ["src/lib.rs:6"]);
    }

    #[test]
    fn an_inline_path_module_of_a_non_mod_rs_file_is_under_the_file_s_name() {
        let r = repo(&[
            ("src/lib.rs", "pub mod net;\n"),
            (
                "src/net.rs",
                concat!(
                    "mod imp {\n",                       // 1
                    "    mod deep {\n",                  // 2
                    "        #[path = \"u.rs\"]\n",      // 3
                    "        pub mod sys;\n",            // 4
                    "    }\n",                           // 5
                    "}\n",                               // 6
                    "use self::imp::deep::sys::open;\n", // 7
                    "pub struct Conn;\n",                // 8
                ),
            ),
            (
                "src/net/imp/deep/u.rs",
                "use super::super::super::Conn;\npub fn open(_c: Conn) {}\n",
            ),
            ("src/conn.rs", "pub struct Conn;\n"),
            ("src/imp/deep/u.rs", "pub fn open() {}\n"),
            ("src/net/imp/u.rs", "pub fn open() {}\n"),
        ]);
        assert_eq!(r.def("src/net.rs", 7, "open"), ["src/net/imp/deep/u.rs:2"]);
        let imports = r.index.imports_of("src/net.rs").unwrap();
        let targets: Vec<_> = imports.iter().map(|i| i.target.as_deref()).collect();
        assert_eq!(targets, [Some("src/net/imp/deep/u.rs")]);
        assert_eq!(r.def("src/net/imp/deep/u.rs", 2, "Conn"), ["src/net.rs:8"]);
    }
}

//! Rust: `use` paths with aliases and groups, `pub use` re-exports, `crate`/`super`/`self`,
//! `Type::method`, trait impls, and calls inside macros.

use crate::nav::{index, places, resolved};
use crate::support::TestRepo;

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        (
            "src/lib.rs",
            "pub mod net;\nmod util;\npub use net::client::Client as Conn;\n",
        ),
        ("src/net/mod.rs", "pub mod client;\n"),
        (
            "src/net/client.rs",
            concat!(
                "use super::super::util::{self, helper as h};\n", // 1
                "pub trait Send { fn send(&self); }\n",           // 2
                "pub struct Client;\n",                           // 3
                "impl Client {\n",                                // 4
                "    pub fn new() -> Self { h(); util::other(); Client }\n", // 5
                "}\n",                                            // 6
                "impl Send for Client {\n",                       // 7
                "    fn send(&self) { println!(\"{}\", helper_in_macro()); }\n", // 8
                "}\n",                                            // 9
                "fn helper_in_macro() -> u8 { 1 }\n",             // 10
            ),
        ),
        ("src/util.rs", "pub fn helper() {}\npub fn other() {}\n"),
        (
            "src/main.rs",
            "use demo::Conn;\nfn main() {\n    let c = Conn::new();\n    let new = 1;\n}\n",
        ),
    ])
}

#[test]
fn use_groups_aliases_and_super_paths_resolve() {
    let repo = repo();
    let idx = index(&repo);
    assert_eq!(
        resolved(&idx.definition("h", Some(("src/net/client.rs", 5))).unwrap()),
        vec!["src/util.rs:1"]
    );
    assert_eq!(
        resolved(
            &idx.definition("other", Some(("src/net/client.rs", 5)))
                .unwrap()
        ),
        vec!["src/util.rs:2"]
    );
}

#[test]
fn calls_inside_macros_and_trait_impls_are_found() {
    let repo = repo();
    let idx = index(&repo);
    assert_eq!(
        resolved(&idx.callers("helper_in_macro").unwrap()),
        vec!["src/net/client.rs:8"]
    );
    let impls = places(&idx.implementations("Send").unwrap());
    assert_eq!(impls, vec!["src/net/client.rs:7"]);
    let blocks = places(&idx.implementations("Client").unwrap());
    assert!(
        blocks.contains(&"src/net/client.rs:4".into())
            && blocks.contains(&"src/net/client.rs:7".into()),
        "{blocks:?}"
    );
    let outline = idx.outline("src/net/client.rs").unwrap();
    let new = outline.iter().find(|i| i.name == "new").unwrap();
    assert_eq!((new.kind.as_str(), new.depth), ("method", 1));
}

#[test]
fn type_method_calls_resolve_by_container() {
    let repo = repo();
    let idx = index(&repo);
    // main.rs is another crate root, using the library by its crate name (`use demo::Conn`).
    let callers = resolved(&idx.callers("Client::new").unwrap());
    assert_eq!(callers, vec!["src/main.rs:3"]);
    let refs = idx.references("Client.new").unwrap();
    assert!(places(&refs).contains(&"src/main.rs:3".into()), "{refs:?}");
    // `let new = 1` is a local binding, never a reference.
    assert!(!places(&refs).contains(&"src/main.rs:4".into()));
}

/// A crate exercising generic parameters, macro bodies, nested `use` trees, trait impls and
/// aliases; line numbers are in the comments.
fn accuracy_repo() -> TestRepo {
    TestRepo::with_files(&[
        (
            "src/lib.rs",
            concat!(
                "pub mod visit;\n",                                      // 1
                "pub mod shapes;\n",                                     // 2
                "use crate::shapes::{Square as Sq, util::{\n",           // 3
                "    helper,\n",                                         // 4
                "    other}};\n",                                        // 5
                "pub struct T;\n",                                       // 6
                "pub trait Bound {}\n",                                  // 7
                "pub fn f<T: Bound>(x: T) -> T {\n",                     // 8
                "    x\n",                                               // 9
                "}\n",                                                   // 10
                "pub struct Holder<T> {\n",                              // 11
                "    pub v: T,\n",                                       // 12
                "}\n",                                                   // 13
                "impl<T: Clone> Holder<T> {\n",                          // 14
                "    pub fn get(&self) -> T { self.v.clone() }\n",       // 15
                "}\n",                                                   // 16
                "pub fn plain(t: T) -> T { t }\n",                       // 17
                "pub fn run() -> Sq { helper(); other(); Sq::new() }\n", // 18
                "impl Bound for Sq {}\n",                                // 19
                "use crate::shapes::util as u;\n",                       // 20
                "pub fn again() { u::other(); }\n",                      // 21
            ),
        ),
        (
            "src/visit.rs",
            concat!(
                "pub trait Visitor {\n",       // 1
                "    fn visit(&self);\n",      // 2
                "}\n",                         // 3
                "pub trait Seen<'a> {}\n",     // 4
                "pub struct Walker;\n",        // 5
                "impl Visitor for Walker {\n", // 6
                "    fn visit(&self) {}\n",    // 7
                "}\n",                         // 8
            ),
        ),
        (
            "src/shapes/mod.rs",
            concat!(
                "pub mod util;\n",                                   // 1
                "pub struct Square;\n",                              // 2
                "impl Square {\n",                                   // 3
                "    pub fn new() -> Self { Square }\n",             // 4
                "}\n",                                               // 5
                "pub struct Circle;\n",                              // 6
                "pub fn new() -> u8 { 0 }\n",                        // 7
                "macro_rules! square {\n",                           // 8
                "    () => { Square::new() };\n",                    // 9
                "    ($t:ty) => { <$t>::default() };\n",             // 10
                "}\n",                                               // 11
                "macro_rules! circle {\n",                           // 12
                "    () => { Circle::new() };\n",                    // 13
                "}\n",                                               // 14
                "pub fn build() { let _ = vec![Square::new()]; }\n", // 15
            ),
        ),
        (
            "src/shapes/util.rs",
            "pub fn helper() {}\npub fn other() {}\n",
        ),
        (
            "src/walkers.rs",
            concat!(
                "use crate::visit::{self, Visitor};\n",        // 1
                "pub struct Runner;\n",                        // 2
                "impl Visitor for Runner {\n",                 // 3
                "    fn visit(&self) {}\n",                    // 4
                "}\n",                                         // 5
                "impl<'a> visit::Seen<'a> for Runner {}\n",    // 6
                "impl<'a> crate::visit::Seen<'a> for u8 {}\n", // 7
            ),
        ),
    ])
}

#[test]
fn generic_parameters_resolve_to_their_item_and_shadow_globals() {
    let repo = accuracy_repo();
    let idx = index(&repo);
    let def_t = |line| resolved(&idx.definition("T", Some(("src/lib.rs", line))).unwrap());
    // `fn f<T: Bound>(x: T) -> T`: the parameter, from the header and from the body.
    assert_eq!(def_t(8), vec!["src/lib.rs:8"]);
    assert_eq!(def_t(9), vec!["src/lib.rs:8"]);
    // `struct Holder<T> { v: T }` and `impl<T: Clone> Holder<T>` bind their own `T`.
    assert_eq!(def_t(12), vec!["src/lib.rs:11"]);
    assert_eq!(def_t(15), vec!["src/lib.rs:14"]);
    // Outside every generic item, `T` is the struct.
    assert_eq!(def_t(17), vec!["src/lib.rs:6"]);
    let kinds: Vec<String> = idx
        .definition("T", Some(("src/lib.rs", 9)))
        .unwrap()
        .iter()
        .map(|l| l.kind.clone())
        .collect();
    assert_eq!(kinds, vec!["type_parameter"]);
    // Without a use site, `T` names the struct only; parameters stay out of outlines.
    assert_eq!(
        places(&idx.definition("T", None).unwrap()),
        vec!["src/lib.rs:6"]
    );
    let outline = idx.outline("src/lib.rs").unwrap();
    assert!(
        outline.iter().all(|i| i.kind != "type_parameter"),
        "{outline:?}"
    );
    // References to the struct do not include the parameters' uses.
    let mut refs = places(&idx.references("T").unwrap());
    refs.dedup();
    assert_eq!(refs, vec!["src/lib.rs:17"], "{refs:?}");
}

#[test]
fn path_calls_in_macro_bodies_resolve_within_the_type() {
    let repo = accuracy_repo();
    let idx = index(&repo);
    // `Square::new()` inside a macro_rules! body is Square's `new`, not the free fn `new`.
    let sq = idx
        .definition("new", Some(("src/shapes/mod.rs", 9)))
        .unwrap();
    assert_eq!(resolved(&sq), vec!["src/shapes/mod.rs:4"]);
    // In macro arguments (`vec![…]`) too.
    assert_eq!(
        resolved(
            &idx.definition("new", Some(("src/shapes/mod.rs", 15)))
                .unwrap()
        ),
        vec!["src/shapes/mod.rs:4"]
    );
    // `Circle` has no `new`: only candidates, never the free `new` as a resolved answer.
    let circle = idx
        .definition("new", Some(("src/shapes/mod.rs", 13)))
        .unwrap();
    assert!(resolved(&circle).is_empty(), "{circle:?}");
    let free_new = idx.def_at("src/shapes/mod.rs", 7).unwrap();
    let free_refs = resolved(&idx.references_of(free_new));
    assert!(free_refs.is_empty(), "{free_refs:?}");
    let sq_callers = resolved(&idx.callers("Square::new").unwrap());
    assert_eq!(
        sq_callers,
        vec![
            "src/lib.rs:18",
            "src/shapes/mod.rs:15",
            "src/shapes/mod.rs:9"
        ]
    );
}

#[test]
fn nested_use_trees_report_the_line_of_each_name() {
    let repo = accuracy_repo();
    let idx = index(&repo);
    let other = places(&idx.references("other").unwrap());
    assert_eq!(
        other,
        vec!["src/lib.rs:18", "src/lib.rs:21", "src/lib.rs:5"]
    );
    let helper = places(&idx.references("helper").unwrap());
    assert_eq!(helper, vec!["src/lib.rs:18", "src/lib.rs:4"]);
    let edges = idx.imports_of("src/lib.rs").unwrap();
    let lines: Vec<(String, u32)> = edges.iter().map(|e| (e.name.clone(), e.line)).collect();
    assert!(
        lines.contains(&("Square".into(), 3)) && lines.contains(&("other".into(), 5)),
        "{lines:?}"
    );
}

#[test]
fn trait_impls_are_references_and_implementations() {
    let repo = accuracy_repo();
    let idx = index(&repo);
    // `impl Visitor for X` refers to the trait and to the type.
    let refs = resolved(&idx.references("Visitor").unwrap());
    for want in ["src/visit.rs:6", "src/walkers.rs:1", "src/walkers.rs:3"] {
        assert!(refs.contains(&want.to_string()), "{want} missing: {refs:?}");
    }
    let walker = resolved(&idx.references("Walker").unwrap());
    assert_eq!(walker, vec!["src/visit.rs:6"]);
    let runner = resolved(&idx.references("Runner").unwrap());
    assert_eq!(runner, vec!["src/walkers.rs:3", "src/walkers.rs:6"]);
    let impls = resolved(&idx.implementations("Visitor").unwrap());
    assert_eq!(impls, vec!["src/visit.rs:6", "src/walkers.rs:3"]);
    // Through a module path, with generic arguments, and through `mod visit;`.
    let seen = resolved(&idx.implementations("Seen").unwrap());
    assert_eq!(seen, vec!["src/walkers.rs:6", "src/walkers.rs:7"]);
    let seen_refs = resolved(&idx.references("Seen").unwrap());
    assert_eq!(seen_refs, vec!["src/walkers.rs:6", "src/walkers.rs:7"]);
}

#[test]
fn aliases_resolve_to_the_original_definition() {
    let repo = accuracy_repo();
    let idx = index(&repo);
    // `use crate::shapes::{Square as Sq, …}`: `Sq` on line 18 is `Square`.
    let sq = idx.definition("Sq", Some(("src/lib.rs", 18))).unwrap();
    assert_eq!(resolved(&sq), vec!["src/shapes/mod.rs:2"]);
    assert_eq!(sq[0].name, "Square");
    // From the `use` line itself, where `Sq` is bound.
    assert_eq!(
        resolved(&idx.definition("Sq", Some(("src/lib.rs", 3))).unwrap()),
        vec!["src/shapes/mod.rs:2"]
    );
    // `Sq::new()` is Square's `new`, and the alias is a reference to `Square`.
    assert_eq!(
        resolved(&idx.definition("new", Some(("src/lib.rs", 18))).unwrap()),
        vec!["src/shapes/mod.rs:4"]
    );
    let refs = resolved(&idx.references("Square").unwrap());
    assert!(
        refs.contains(&"src/lib.rs:3".into()) && refs.contains(&"src/lib.rs:18".into()),
        "{refs:?}"
    );
    // An alias as the type of an impl block is the aliased type, not the block.
    assert_eq!(
        resolved(&idx.definition("Sq", Some(("src/lib.rs", 19))).unwrap()),
        vec!["src/shapes/mod.rs:2"]
    );
    assert!(refs.contains(&"src/lib.rs:19".into()), "{refs:?}");
    // A module alias (`use crate::shapes::util as u;`) reaches the module's file.
    assert_eq!(
        resolved(&idx.definition("other", Some(("src/lib.rs", 21))).unwrap()),
        vec!["src/shapes/util.rs:2"]
    );
}

#[test]
fn super_and_self_path_calls_name_modules_not_receivers() {
    let repo = TestRepo::with_files(&[
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        ("src/lib.rs", "mod git;\n"),
        (
            "src/git/mod.rs",
            "mod registry;\npub fn lock() {}\nfn local() {}\n",
        ),
        (
            "src/git/registry.rs",
            concat!(
                "pub struct Registry;\n",                                      // 1
                "impl Registry {\n",                                           // 2
                "    pub fn lock(&self) { super::lock(); self::helper(); }\n", // 3
                "    pub fn other(&self) { self.lock(); }\n",                  // 4
                "}\n",                                                         // 5
                "fn helper() {}\n",                                            // 6
            ),
        ),
    ]);
    let idx = index(&repo);
    // `super::lock()` inside a method named `lock` is the parent module's function.
    assert_eq!(
        resolved(
            &idx.definition("lock", Some(("src/git/registry.rs", 3)))
                .unwrap()
        ),
        vec!["src/git/mod.rs:2"]
    );
    assert_eq!(
        resolved(
            &idx.definition("helper", Some(("src/git/registry.rs", 3)))
                .unwrap()
        ),
        vec!["src/git/registry.rs:6"]
    );
    // `self.lock()` is still the method.
    assert_eq!(
        resolved(
            &idx.definition("lock", Some(("src/git/registry.rs", 4)))
                .unwrap()
        ),
        vec!["src/git/registry.rs:3"]
    );
}

#[test]
fn rust_scope_rules_decide_between_namesakes() {
    let repo = TestRepo::with_files(&[
        (
            "src/lib.rs",
            concat!(
                "mod buf;\n",                                          // 1
                "mod other;\n",                                        // 2
                "pub type Result<T> = core::result::Result<T, ()>;\n", // 3
                "pub fn run() -> Result<u8> { Ok(1) }\n",              // 4
            ),
        ),
        (
            "src/other.rs",
            "pub fn parse() -> Result<u8, String> { Ok(1) }\n",
        ),
        (
            "src/buf.rs",
            concat!(
                "pub trait Buf {\n",                                     // 1
                "    type Chunk;\n",                                     // 2
                "    fn remaining(&self) -> usize;\n",                   // 3
                "    fn chunk(&self) -> Option<Self::Chunk>;\n",         // 4
                "}\n",                                                   // 5
                "pub struct Take<T> { inner: T }\n",                     // 6
                "impl<T: Buf> Buf for Take<T> {\n",                      // 7
                "    type Chunk = T::Chunk;\n",                          // 8
                "    fn remaining(&self) -> usize {\n",                  // 9
                "        self.inner.remaining()\n",                      // 10
                "    }\n",                                               // 11
                "    fn chunk(&self) -> Option<Self::Chunk> { None }\n", // 12
                "}\n",                                                   // 13
            ),
        ),
    ]);
    let idx = index(&repo);
    let def = |file: &str, name: &str, line| {
        places(&idx.definition(name, Some((file, line))).unwrap_or_default())
    };
    // `Result` in a module that neither defines nor imports the crate's alias is the
    // prelude's: no definition here, and no candidate.
    assert_eq!(def("src/other.rs", "Result", 1), Vec::<String>::new());
    // The crate's own use is its reference, the other module's is not even a candidate.
    let refs = places(&idx.references("Result").unwrap());
    assert_eq!(refs, vec!["src/lib.rs:4"]);
    // A wrapper's call on what it wraps: the trait's method first.
    assert_eq!(def("src/buf.rs", "remaining", 10)[0], "src/buf.rs:3");
    // `Self::Chunk` in a trait impl is the trait's associated type.
    assert_eq!(def("src/buf.rs", "Chunk", 12), vec!["src/buf.rs:2"]);
}

/// A `use` leaf that is a module imports that module's file (`use crate::util::{iter}`), an
/// item path (`self::Kind::*`) the file holding the item, and `super` inside an inline
/// `mod tests` the file around it, as rust-analyzer resolves them.
#[test]
fn use_leaves_that_are_modules_and_inline_modules_import_the_right_file() {
    let repo = TestRepo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
        ),
        ("src/lib.rs", "pub mod util;\npub mod search;\n"),
        ("src/util/mod.rs", "pub mod iter;\npub fn helper() {}\n"),
        ("src/util/iter.rs", "pub struct Iter;\n"),
        (
            "src/search.rs",
            "use crate::util::{iter, helper};\nuse self::Kind::*;\n\npub enum Kind { A, B }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::util;\n}\n",
        ),
    ]);
    let idx = index(&repo);
    let edges: Vec<(String, String, String)> = idx
        .imports_of("src/search.rs")
        .unwrap()
        .into_iter()
        .map(|e| (e.module, e.name, e.target.unwrap_or_default()))
        .collect();
    let want = |m: &str, n: &str, t: &str| (m.to_string(), n.to_string(), t.to_string());
    assert_eq!(
        edges,
        vec![
            want("crate::util", "iter", "src/util/iter.rs"),
            want("crate::util", "helper", "src/util/mod.rs"),
            want("self::Kind", "", "src/search.rs"),
            want("super", "", "src/search.rs"),
            want("super::super", "util", "src/util/mod.rs"),
        ]
    );
}

/// Implementations of a Rust type are its impl blocks and its derives (at the attribute); of a
/// trait, the impls for any self type (`&'a [u8]`, `()`, a path with generics) and the items
/// deriving it, not a subtrait (`trait Sub: Base`) nor a trait of the same name a struct's
/// impl names (`impl fmt::Write for Buffer` implements no `Write` type of the crate).
#[test]
fn implementations_cover_derives_and_every_self_type() {
    let repo = TestRepo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
        ),
        (
            "src/lib.rs",
            "pub trait Base {}\npub trait Sub: Base {}\n\n/// A buffer.\n#[derive(Debug, Clone)]\n#[allow(dead_code)]\npub struct Buffer;\n\nimpl Base for Buffer {}\nimpl<'a> Base for &'a [u8] {}\nimpl Base for () {}\nimpl<T> Base for std::num::Wrapping<T> {}\n\npub struct Write;\nimpl core::fmt::Write for Buffer {\n    fn write_str(&mut self, _: &str) -> core::fmt::Result { Ok(()) }\n}\n",
        ),
    ]);
    let idx = index(&repo);
    assert_eq!(
        resolved(&idx.implementations("Base").unwrap()),
        vec![
            "src/lib.rs:10",
            "src/lib.rs:11",
            "src/lib.rs:12",
            "src/lib.rs:9"
        ]
    );
    assert_eq!(
        resolved(&idx.implementations("Buffer").unwrap()),
        vec!["src/lib.rs:15", "src/lib.rs:5", "src/lib.rs:9"]
    );
    assert!(places(&idx.implementations("Write").unwrap()).is_empty());
}

//! Rust: `use` paths with aliases and groups, `pub use` re-exports, `crate`/`super`/`self`,
//! `Type::method`, trait impls, and calls inside macros.

use crate::support::TestRepo;
use crate::{index, places, resolved};

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
    let callers = resolved(&idx.callers("Client::new").unwrap());
    assert!(
        callers.is_empty(),
        "main.rs is another crate root; its `Conn::new` is a candidate: {callers:?}"
    );
    let refs = idx.references("Client.new").unwrap();
    assert!(places(&refs).contains(&"src/main.rs:3".into()), "{refs:?}");
    // `let new = 1` is a local binding, never a reference.
    assert!(!places(&refs).contains(&"src/main.rs:4".into()));
}

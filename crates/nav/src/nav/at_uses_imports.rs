//! Unit tests of the imports of a file asked where a use stands on an import line: each
//! statement's target is the file rust-analyzer's resolution gives the module as written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::at_uses::repo;

/// itertools' `use crate::EitherOrBoth::*;` in `either_or_both.rs` names the enum `lib.rs`
/// re-exports (`pub use crate::either_or_both::EitherOrBoth;`): rust-analyzer resolves it to
/// the enum's file. semver's `use crate::alloc::alloc::…` goes through the root's
/// `extern crate alloc;`: outside the repository. A module of the crate is still its file.
#[test]
fn a_path_through_a_name_the_root_imports_leads_where_that_import_leads() {
    let r = repo(&[
        (
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
        ),
        (
            "src/lib.rs",
            concat!(
                "extern crate alloc;\n",
                "mod either_or_both;\n",
                "mod util;\n",
                "pub use crate::either_or_both::EitherOrBoth;\n",
            ),
        ),
        (
            "src/either_or_both.rs",
            concat!(
                "use crate::EitherOrBoth::*;\n",
                "use crate::alloc::alloc::Layout;\n",
                "use crate::util::helper;\n",
                "pub enum EitherOrBoth { Both }\n",
            ),
        ),
        ("src/util.rs", "pub fn helper() {}\n"),
    ]);
    let edges = r.index.imports_of("src/either_or_both.rs").unwrap();
    let got: Vec<(String, Option<String>)> =
        edges.into_iter().map(|e| (e.module, e.target)).collect();
    assert_eq!(
        got,
        [
            (
                "crate::EitherOrBoth".to_string(),
                Some("src/either_or_both.rs".to_string())
            ),
            ("crate::alloc::alloc".to_string(), None),
            ("crate::util".to_string(), Some("src/util.rs".to_string())),
        ]
    );
}

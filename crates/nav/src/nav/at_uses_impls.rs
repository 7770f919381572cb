//! Unit tests of implementations asked at a use of a type or trait (an annotation, a path
//! call, an import), as `--from PATH:LINE:COL` asks it: the answer is the implementations of
//! what the use names, including those a `macro_rules!` body writes out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::at_uses::{Repo, repo};

/// Returns the implementations of the `token` on `line` of `path`, as sorted `path:line`,
/// each marked `?` when only a candidate.
fn impls(r: &Repo, path: &str, line: u32, token: &str) -> Vec<String> {
    let at = r.at(path, line, token, 0);
    let locs = r.index.implementations_at(Some(token), Some(&at)).unwrap();
    let mut got: Vec<String> = locs
        .iter()
        .map(|l| {
            let mark = if l.resolution == super::Resolution::Resolved {
                ""
            } else {
                "?"
            };
            format!("{}:{}{mark}", l.path, l.line)
        })
        .collect();
    got.sort();
    got
}

/// serde_json's `impl From<$ty> for Value` inside `macro_rules! from_integer`, bytes'
/// `impl Index<$t> for UninitSlice`: rust-analyzer lists each at its line in the macro body,
/// for the self type and for the trait; an impl for `&'a Value` is the trait's, not
/// `Value`'s; a metavariable self type (`for $t`) names nothing.
#[test]
fn impls_written_in_a_macro_rules_body_implement_their_trait_and_type() {
    let r = repo(&[
        (
            "src/lib.rs",
            concat!(
                "mod from;\n",                            // 1
                "pub trait Convert<T> {}\n",              // 2
                "pub trait Marker {}\n",                  // 3
                "pub struct Value;\n",                    // 4
                "impl Value {\n",                         // 5
                "    pub fn new() -> Value { Value }\n",  // 6
                "}\n",                                    // 7
                "pub fn make(v: Value) -> Value { v }\n", // 8
            ),
        ),
        (
            "src/from.rs",
            concat!(
                "use crate::{Convert, Marker, Value};\n",      // 1
                "\n",                                          // 2
                "macro_rules! from_integer {\n",               // 3
                "    ($($ty:ident)*) => {\n",                  // 4
                "        $(\n",                                // 5
                "            impl Convert<$ty> for Value {\n", // 6
                "                fn f() {}\n",                 // 7
                "            }\n",                             // 8
                "        )*\n",                                // 9
                "    };\n",                                    // 10
                "}\n",                                         // 11
                "macro_rules! marked {\n",                     // 12
                "    ($t:ty) => {\n",                          // 13
                "        impl<T> crate::Marker for $t {}\n",   // 14
                "    };\n",                                    // 15
                "}\n",                                         // 16
                "from_integer!(u8 u16);\n",                    // 17
                "marked!(Value);\n",                           // 18
                "macro_rules! by_ref {\n",                     // 19
                "    ($ty:ident) => { impl<'a> Convert<$ty> for &'a Value {} };\n", // 20
                "}\n",                                         // 21
            ),
        ),
    ]);
    // At a use in an annotation, and at the declaration.
    assert_eq!(
        impls(&r, "src/lib.rs", 8, "Value"),
        ["src/from.rs:6", "src/lib.rs:5"]
    );
    assert_eq!(
        impls(&r, "src/lib.rs", 4, "Value"),
        ["src/from.rs:6", "src/lib.rs:5"]
    );
    // The trait's: the blocks in the bodies, the one for a reference too (which is none of
    // `Value`'s); `for $t` names no type, so it is no answer.
    assert_eq!(
        impls(&r, "src/lib.rs", 2, "Convert"),
        ["src/from.rs:20", "src/from.rs:6"]
    );
    assert!(impls(&r, "src/lib.rs", 3, "Marker").is_empty());
}

/// werkzeug's `structures.pyi` declares `MultiDict` again beside `structures.py`, and its
/// `class OrderedMultiDict(MultiDict[K, V])` names the stub's class: jedi takes stub and
/// implementation for one class, so the subclasses the stub declares are the implementation's
/// too, asked at a use or at either declaration.
#[test]
fn subclasses_declared_in_a_stub_are_the_implementations_classes_too() {
    let r = repo(&[
        ("pkg/__init__.py", ""),
        (
            "pkg/structures.py",
            "class MultiDict(dict):\n    pass\nclass Ordered(MultiDict):\n    pass\n",
        ),
        (
            "pkg/structures.pyi",
            "class MultiDict(dict): ...\nclass Ordered(MultiDict): ...\nclass Combined(MultiDict): ...\n",
        ),
        (
            "pkg/use.py",
            "from .structures import MultiDict\ndef f(d: MultiDict) -> None:\n    pass\n",
        ),
    ]);
    let want = [
        "pkg/structures.py:3",
        "pkg/structures.pyi:2",
        "pkg/structures.pyi:3",
    ];
    assert_eq!(impls(&r, "pkg/use.py", 2, "MultiDict"), want);
    assert_eq!(impls(&r, "pkg/structures.py", 1, "MultiDict"), want);
    assert_eq!(impls(&r, "pkg/structures.pyi", 1, "MultiDict"), want);
}

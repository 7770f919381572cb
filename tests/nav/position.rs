//! `--from FILE:LINE[:COL]` on every query: the token at the position is resolved from its
//! syntactic context (qualifier, receiver, `self`/`Self`, imports in scope), and the query
//! answers about that definition only.

use git_orchestra::nav::{At, Resolution};

use crate::nav::{at, def_at, fixture, index, line_of, resolved};
use crate::support::{orchestra, text};

const HANDLER: &str = "crates/server/src/handler.rs";
const FRAME: &str = "crates/wire/src/frame.rs";

#[test]
fn def_at_a_qualified_call_answers_that_type_s_method_only() {
    let repo = fixture("rust");
    let idx = index(&repo);
    let builder_new = line_of(&repo, HANDLER, "pub fn new() -> Self");
    // `Builder::new()` on that line, without a column: the use of `new` there.
    let use_line = at(&repo, HANDLER, "let builder = Builder::new()", "new");
    let by_line = At {
        col: None,
        ..use_line.clone()
    };
    let locs = idx.definition_at(Some("new"), Some(&by_line)).unwrap();
    assert_eq!(resolved(&locs), vec![builder_new.clone()], "{locs:?}");
    assert_eq!(
        locs.len(),
        1,
        "only Builder::new, not every `new`: {locs:?}"
    );
    // With a column, the symbol may be left out.
    assert_eq!(def_at(&idx, &use_line), builder_new);
    // `Frame::new()` in the same file is the other `new`.
    let frame_new = at(&repo, HANDLER, "frame: Frame::new()", "new");
    assert_eq!(
        def_at(&idx, &frame_new),
        line_of(&repo, FRAME, "pub fn new() -> Self")
    );
    // `Self` in a signature is the type the impl block is for.
    let self_ty = at(&repo, HANDLER, "pub fn new() -> Self", "Self");
    assert_eq!(
        def_at(&idx, &self_ty),
        line_of(&repo, HANDLER, "pub struct Builder")
    );
}

#[test]
fn refs_callers_callees_and_impls_take_a_position() {
    let repo = fixture("rust");
    let idx = index(&repo);
    // References to the `len` defined on that line: Frame::len, not the test `len` nor
    // `Vec::len`.
    let len_def = at(&repo, FRAME, "pub fn len(&self)", "len");
    let refs = idx.references_at(None, Some(&len_def)).unwrap();
    let want = vec![
        line_of(&repo, HANDLER, "out.size() + frame.len()"),
        line_of(&repo, FRAME, "self.len() == 0"),
        line_of(&repo, FRAME, "assert_eq!(f.len(), 3)"),
        line_of(&repo, "crates/wire/src/codec.rs", "vec![self.len() as u8]"),
        line_of(&repo, "crates/server/src/main.rs", "built.len()"),
    ];
    let mut want_sorted = want.clone();
    want_sorted.sort();
    let mut got = resolved(&refs);
    got.dedup();
    assert_eq!(got, want_sorted, "{refs:?}");
    // Callers of the `new` used at a position.
    let use_line = at(
        &repo,
        "crates/server/src/main.rs",
        "handler::Builder::new()",
        "new",
    );
    let callers = idx.callers_at(None, Some(&use_line)).unwrap();
    assert_eq!(
        resolved(&callers),
        vec![
            line_of(&repo, HANDLER, "let builder = Builder::new()"),
            line_of(
                &repo,
                "crates/server/src/main.rs",
                "handler::Builder::new()"
            ),
        ]
    );
    // Callees of the function defined at a position.
    let handle = at(&repo, HANDLER, "pub fn handle(", "handle");
    let callees = idx.callees_at(None, Some(&handle)).unwrap();
    let names: Vec<(&str, Resolution)> = callees
        .iter()
        .map(|l| (l.name.as_str(), l.resolution))
        .collect();
    for name in ["new", "build", "size", "len"] {
        assert!(
            names.contains(&(name, Resolution::Resolved)),
            "{name} in {names:?}"
        );
    }
    // Implementations of the trait imported at a position.
    let encode = at(
        &repo,
        HANDLER,
        "use net_kit::proto::codec::Encode",
        "Encode",
    );
    let impls = idx.implementations_at(None, Some(&encode)).unwrap();
    assert_eq!(
        resolved(&impls),
        vec![line_of(
            &repo,
            "crates/wire/src/codec.rs",
            "impl Encode for Frame"
        )]
    );
}

#[test]
fn the_command_line_takes_from_on_every_query_with_a_column() {
    let repo = fixture("rust");
    let pos = at(&repo, HANDLER, "let builder = Builder::new()", "new");
    let from = format!("{}:{}:{}", pos.path, pos.line, pos.col.unwrap());
    let out = orchestra(&repo.path, &["nav", "def", "--from", &from]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let builder_new = line_of(&repo, HANDLER, "pub fn new() -> Self");
    assert!(
        stdout.contains(&format!(
            "{builder_new}:12 method new in Builder [resolved]"
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("frame.rs"), "{stdout}");
    for query in ["refs", "callers", "callees", "impls"] {
        let out = orchestra(
            &repo.path,
            &["nav", query, "new", "--from", &from, "--json"],
        );
        assert!(out.status.success(), "{query}: {}", text(&out));
    }
    let out = orchestra(&repo.path, &["nav", "callers", "--from", &from]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("main.rs"), "{stdout}");
    assert!(!stdout.contains("frame.rs"), "{stdout}");
    // Without a symbol, the position needs a column.
    let out = orchestra(
        &repo.path,
        &[
            "nav",
            "refs",
            "--from",
            &format!("{}:{}", pos.path, pos.line),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

//! Shadowing in tests and macros: a test named like the function or method it tests never
//! stands for it — not through a receiver (`client.send()` beside a test helper `send`), not
//! inside `assert_eq!(f.len(), 3)` in a test named `len`.

use git_orchestra::nav::Resolution;

use crate::nav::{at, def_at, fixture, index, line_of, resolved};
use crate::support::TestRepo;

#[test]
fn a_method_call_inside_assert_eq_is_not_the_test_of_the_same_name() {
    let repo = fixture("rust");
    let idx = index(&repo);
    let frame = "crates/wire/src/frame.rs";
    let p = at(&repo, frame, "assert_eq!(f.len(), 3)", "len");
    assert_eq!(def_at(&idx, &p), line_of(&repo, frame, "pub fn len(&self)"));
    // The test `len` has no callers; the method has that one.
    let test_len = at(&repo, frame, "fn len() {", "len");
    assert!(resolved(&idx.callers_at(None, Some(&test_len)).unwrap()).is_empty());
    // `Frame::new().is_empty()` in a test named `new`.
    let p = at(&repo, frame, "assert!(Frame::new().is_empty())", "new");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, frame, "pub fn new() -> Self")
    );
    // An integration test named `encode`: `frame.encode()` and the trait's default
    // `frame.size()` inside `assert_eq!` are the trait's.
    let codec = "crates/wire/src/codec.rs";
    let p = at(
        &repo,
        "crates/wire/tests/roundtrip.rs",
        "frame.encode()",
        "encode",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, codec, "    fn encode(&self) -> Vec<u8> {")
    );
    let p = at(
        &repo,
        "crates/wire/tests/roundtrip.rs",
        "frame.size()",
        "size",
    );
    assert_eq!(def_at(&idx, &p), line_of(&repo, codec, "fn size(&self)"));
}

#[test]
fn a_receiver_s_method_outranks_a_same_file_function_of_the_name() {
    // Untyped receivers give candidates; the member comes first, the helper never.
    let repo = TestRepo::with_files(&[
        (
            "src/client.py",
            "class Client:\n    def send(self, path):\n        return path\n",
        ),
        (
            "tests/test_client.py",
            concat!(
                "from src.client import Client\n",
                "\n",
                "def send(client):\n",
                "    return client.send('/ping')\n",
                "\n",
                "def test_send(make):\n",
                "    assert make().send('/') == send(make())\n",
            ),
        ),
    ]);
    let idx = index(&repo);
    let p = at(&repo, "tests/test_client.py", "return client.send(", "send");
    let locs = idx.definition_at(None, Some(&p)).unwrap();
    assert_eq!(
        locs.iter()
            .map(|l| (format!("{}:{}", l.path, l.line), l.resolution))
            .collect::<Vec<_>>(),
        vec![("src/client.py:2".to_string(), Resolution::Candidate)]
    );
    // The bare `send(…)` is the helper, bound by scope.
    let p = at(&repo, "tests/test_client.py", "== send(make())", "send");
    assert_eq!(def_at(&idx, &p), "tests/test_client.py:3");
}

//! Workspaces and facades: Rust crates used by name, through a facade re-exporting them, and
//! `mod` declarations in binary roots; TypeScript barrels and tsconfig `baseUrl`/`paths`;
//! Python `src/` layouts, `__init__` re-exports and relative imports seen from tests and
//! examples.

use crate::nav::{at, def_at, fixture, index, line_of};

#[test]
fn rust_crates_are_reached_by_name_through_facades_and_binary_roots() {
    let repo = fixture("rust");
    let idx = index(&repo);
    let frame = "crates/wire/src/frame.rs";
    let frame_struct = line_of(&repo, frame, "pub struct Frame");
    // `use net_kit::sub::Frame;` (package `net-kit`, an inline module re-exporting it).
    let p = at(
        &repo,
        "crates/server/src/main.rs",
        "let frame = Frame::new()",
        "Frame",
    );
    assert_eq!(def_at(&idx, &p), frame_struct);
    let p = at(
        &repo,
        "crates/server/src/main.rs",
        "let frame = Frame::new()",
        "new",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, frame, "pub fn new() -> Self")
    );
    // `use net_kit::proto::codec::Encode;` through `pub use wire as proto;`.
    let p = at(
        &repo,
        "crates/server/src/handler.rs",
        "use net_kit::proto::codec::Encode",
        "Encode",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "crates/wire/src/codec.rs", "pub trait Encode")
    );
    // `use wire::frame::Frame;` by the crate's name, and from an integration test.
    let p = at(
        &repo,
        "crates/server/src/handler.rs",
        "    frame: Frame,",
        "Frame",
    );
    assert_eq!(def_at(&idx, &p), frame_struct);
    let p = at(
        &repo,
        "crates/wire/tests/roundtrip.rs",
        "Frame::new()",
        "Frame",
    );
    assert_eq!(def_at(&idx, &p), frame_struct);
    // `mod handler;` in main.rs and `mod util;` in a binary's own directory.
    let p = at(
        &repo,
        "crates/server/src/main.rs",
        "handler::handle(&frame)",
        "handle",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "crates/server/src/handler.rs", "pub fn handle(")
    );
    let p = at(
        &repo,
        "crates/server/src/bin/probe/main.rs",
        "util::ping()",
        "ping",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "crates/server/src/bin/probe/util.rs", "pub fn ping")
    );
    // The crate-qualified name of a method.
    let len = vec![line_of(&repo, frame, "pub fn len(&self)")];
    for symbol in [
        "wire::frame::Frame::len",
        "crate::frame::Frame::len",
        "frame::Frame::len",
        "crates/wire/src/frame.rs:Frame::len",
    ] {
        let locs = idx.definition(symbol, None).unwrap();
        assert_eq!(crate::nav::places(&locs), len, "{symbol}");
    }
    // The facade's re-export by its path: `net_kit::sub::Frame`.
    let locs = idx.definition("net_kit::sub::Frame", None).unwrap();
    assert_eq!(
        crate::nav::places(&locs),
        vec![line_of(&repo, frame, "pub struct Frame")]
    );
}

#[test]
fn typescript_barrels_and_tsconfig_paths_resolve() {
    let repo = fixture("typescript");
    let idx = index(&repo);
    let main = "src/app/main.ts";
    // `import { Source, Stream, Subscriber } from '@core/index'` (paths) → barrel → files.
    let p = at(&repo, main, "new Stream(source)", "Stream");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/core/stream.ts", "export class Stream")
    );
    let p = at(&repo, main, "new Subscriber<number>()", "Subscriber");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/core/subscriber.ts", "export class Subscriber")
    );
    // `import { BufferedStream } from '@core/buffered'`.
    let p = at(&repo, main, "new BufferedStream(source)", "BufferedStream");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/core/buffered.ts", "export class BufferedStream")
    );
    // `import { Subscription } from 'src/core/stream'` (baseUrl).
    let p = at(
        &repo,
        main,
        "private subscription: Subscription",
        "Subscription",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/core/stream.ts", "export class Subscription")
    );
    // A file and a qualified name; a module path and a name.
    let subscribe = vec![line_of(&repo, "src/core/stream.ts", "  subscribe(observer")];
    for symbol in [
        "src/core/stream.ts:Stream.subscribe",
        "core/stream.Stream.subscribe",
    ] {
        let locs = idx.definition(symbol, None).unwrap();
        assert_eq!(crate::nav::places(&locs), subscribe, "{symbol}");
    }
    let targets: Vec<Option<String>> = idx
        .imports_of(main)
        .unwrap()
        .into_iter()
        .map(|e| e.target)
        .collect();
    assert!(targets.iter().all(Option::is_some), "{targets:?}");
}

#[test]
fn python_src_layouts_reexports_and_relative_imports_resolve() {
    let repo = fixture("python");
    let idx = index(&repo);
    // `from courier import Client` (src/ layout, `__init__` re-export of `.client`).
    let p = at(
        &repo,
        "tests/test_client.py",
        "from courier import Client",
        "Client",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/courier/client.py", "class Client:")
    );
    // `import courier` then `courier.session()`.
    let p = at(
        &repo,
        "examples/send_mail.py",
        "courier.session()",
        "session",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/courier/sessions.py", "def session()")
    );
    // Module-qualified names: `pkg.mod.func`, `pkg.Class.method` through a re-export, a file
    // and a name.
    let sessions = "src/courier/sessions.py";
    let want = vec![line_of(&repo, sessions, "def session()")];
    assert_eq!(
        crate::nav::places(&idx.definition("courier.sessions.session", None).unwrap()),
        want
    );
    assert_eq!(
        crate::nav::places(&idx.definition("courier.session", None).unwrap()),
        want
    );
    assert_eq!(
        crate::nav::places(
            &idx.definition("src/courier/sessions.py:session", None)
                .unwrap()
        ),
        want
    );
    assert_eq!(
        crate::nav::places(&idx.definition("courier.Client.send", None).unwrap()),
        vec![line_of(
            &repo,
            "src/courier/client.py",
            "    def send(self, path):"
        )]
    );
    let refs = idx.references("courier.sessions.Session.close").unwrap();
    assert!(!refs.is_empty());
}

//! Inheritance: a method inherited from a base (Python's method resolution order, a mixin),
//! `super().m()` and `super.m()`, TypeScript `extends` and `implements`, Rust trait default
//! methods reached through the implementing type.

use crate::nav::{at, def_at, fixture, index, line_of, places, resolved};

#[test]
fn python_inherited_methods_and_super_follow_the_bases() {
    let repo = fixture("python");
    let idx = index(&repo);
    let tests = "tests/test_client.py";
    let client = "src/courier/client.py";
    let sessions = "src/courier/sessions.py";
    // `TracingClient("…").get(…)`: inherited from Client (the second `client.get` of the file).
    let text = std::fs::read_to_string(repo.path.join(tests)).unwrap();
    let tracing_get = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("client.get(\"/\")"))
        .map(|(i, l)| git_orchestra::nav::At {
            path: tests.into(),
            line: i as u32 + 1,
            col: Some(l.find("get").unwrap() as u32 + 1),
        })
        .nth(1)
        .unwrap();
    assert_eq!(
        def_at(&idx, &tracing_get),
        line_of(&repo, client, "def get(self, path)")
    );
    // The override wins over the base's method.
    let p = at(&repo, tests, "    client.send(\"/\")", "send");
    let text = std::fs::read_to_string(repo.path.join(client)).unwrap();
    let override_line = text
        .lines()
        .position(|l| l.contains("print(\"->\", path)"))
        .unwrap();
    assert_eq!(def_at(&idx, &p), format!("{client}:{override_line}"));
    // `super().send(path)` in the override is the base's.
    let p = at(&repo, client, "return super().send(path)", "send");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, client, "    def send(self, path):")
    );
    // A mixin's method through a subclass instance, and a base adapter's `close`.
    let p = at(
        &repo,
        tests,
        "s.resolve_redirects(None)",
        "resolve_redirects",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, sessions, "def resolve_redirects")
    );
    let p = at(&repo, sessions, "self.adapter.close()", "close");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/courier/adapters.py", "    def close(self):")
    );
    // Subclasses of the base adapter.
    let impls = idx.implementations("BaseAdapter").unwrap();
    assert_eq!(
        resolved(&impls),
        vec![line_of(
            &repo,
            "src/courier/adapters.py",
            "class HTTPAdapter(BaseAdapter)"
        )]
    );
}

#[test]
fn typescript_extends_implements_and_super_calls() {
    let repo = fixture("typescript");
    let idx = index(&repo);
    let main = "src/app/main.ts";
    let stream = "src/core/stream.ts";
    // `sink.unsubscribe()` on a Subscriber: inherited from Subscription.
    let p = at(&repo, main, "sink.unsubscribe()", "unsubscribe");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  unsubscribe(): void")
    );
    // `sink.complete()`: the class's own method, not the interface's signature.
    let p = at(&repo, main, "sink.complete()", "complete");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/core/subscriber.ts", "  complete(): void {")
    );
    // `this.unsubscribe()` inside the subclass.
    let p = at(
        &repo,
        "src/core/subscriber.ts",
        "this.unsubscribe()",
        "unsubscribe",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  unsubscribe(): void")
    );
    // `buffered.subscribe(sink)`: inherited from Stream; `buffered.concat` is the override.
    let p = at(&repo, main, "buffered.subscribe(sink)", "subscribe");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  subscribe(observer")
    );
    let p = at(&repo, main, "buffered.concat(stream)", "concat");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/core/buffered.ts", "  concat(other")
    );
    // `super.concat(other)` is the base's.
    let p = at(
        &repo,
        "src/core/buffered.ts",
        "super.concat(other)",
        "concat",
    );
    assert_eq!(def_at(&idx, &p), line_of(&repo, stream, "  concat(other"));
    // Interface implementations and subclasses.
    let impls = places(&idx.implementations("Observer").unwrap());
    assert_eq!(
        impls,
        vec![line_of(
            &repo,
            "src/core/subscriber.ts",
            "export class Subscriber"
        )]
    );
    let subs = resolved(&idx.implementations("Stream").unwrap());
    assert_eq!(
        subs,
        vec![line_of(
            &repo,
            "src/core/buffered.ts",
            "export class BufferedStream"
        )]
    );
}

#[test]
fn rust_trait_default_methods_and_impl_blocks_are_the_type_s() {
    let repo = fixture("rust");
    let idx = index(&repo);
    let codec = "crates/wire/src/codec.rs";
    // `out.size()` on a Frame (`let out = builder.build()`, `fn build(&self) -> Frame`): the
    // default method of the trait Frame implements.
    let p = at(&repo, "crates/server/src/handler.rs", "out.size()", "size");
    assert_eq!(def_at(&idx, &p), line_of(&repo, codec, "fn size(&self)"));
    // The inherent and trait impl blocks of Frame are resolved implementations, and so is its
    // derive attribute (rust-analyzer lists the derived impls there).
    let impls = resolved(&idx.implementations("Frame").unwrap());
    assert_eq!(
        impls,
        vec![
            line_of(&repo, codec, "impl Encode for Frame"),
            line_of(&repo, "crates/wire/src/frame.rs", "#[derive(Debug"),
            line_of(&repo, "crates/wire/src/frame.rs", "impl Frame"),
        ]
    );
}

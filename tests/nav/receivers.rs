//! Receivers with an obvious type: annotated parameters and variables, constructor calls,
//! `self.x = …` in constructors, attribute annotations, return annotations of resolved
//! functions, module-level instances, `this.x` through TypeScript parameter properties. An
//! untyped receiver stays a candidate, never a wrong resolved answer.

use git_orchestra::nav::Resolution;

use crate::nav::{at, def_at, fixture, index, line_of};

const CLIENT: &str = "src/courier/client.py";
const SESSIONS: &str = "src/courier/sessions.py";
const TESTS: &str = "tests/test_client.py";

#[test]
fn python_receivers_are_typed_by_annotations_constructors_and_returns() {
    let repo = fixture("python");
    let idx = index(&repo);
    let client_send = line_of(&repo, CLIENT, "    def send(self, path):");
    // `def send(client: Client): client.send(…)`: the method, not the helper of the same name.
    let p = at(&repo, TESTS, "return client.send(\"/ping\")", "send");
    assert_eq!(def_at(&idx, &p), client_send);
    // `client = make_client(…)` with `-> "Client"`.
    let p = at(&repo, TESTS, "    client.get(\"/\")", "get");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, CLIENT, "def get(self, path)")
    );
    // `self.session: Session = …` in `__init__`, then `self.session.send(…)`.
    let p = at(&repo, CLIENT, "self.session.send(", "send");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, SESSIONS, "def send(self, request)")
    );
    // `self.retries = Retry(3)`.
    let p = at(&repo, CLIENT, "self.retries.reset()", "reset");
    assert_eq!(def_at(&idx, &p), line_of(&repo, CLIENT, "def reset(self)"));
    // `self.adapter = HTTPAdapter()` in the session's constructor.
    let p = at(&repo, SESSIONS, "return self.adapter.send(", "send");
    let adapters = std::fs::read_to_string(repo.path.join("src/courier/adapters.py")).unwrap();
    let http_send = adapters
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("def send(self, request, timeout=None)"))
        .map(|(i, _)| format!("src/courier/adapters.py:{}", i + 1))
        .nth(1)
        .unwrap();
    assert_eq!(
        def_at(&idx, &p),
        http_send,
        "HTTPAdapter.send, not BaseAdapter.send"
    );
}

#[test]
fn python_typing_crosses_modules_fixtures_and_examples() {
    let repo = fixture("python");
    let idx = index(&repo);
    // `client = app.test_client()` where `app: App` and `test_client() -> "TestClient"`.
    let p = at(&repo, "tests/test_app.py", "client.get(\"/\")", "get");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/courier/app.py", "    def get(self, path):")
    );
    // `courier.Client(…)` through the package's re-export.
    let p = at(
        &repo,
        "examples/send_mail.py",
        "client.send(\"/mail\")",
        "send",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, CLIENT, "    def send(self, path):")
    );
    // `s = courier.session()` with `-> Session`.
    let p = at(&repo, "examples/send_mail.py", "s.request(", "request");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, SESSIONS, "def request(self")
    );
    // A module-level instance: `app = App("mailer")`, used in a decorator and below.
    let p = at(&repo, "examples/send_mail.py", "@app.route", "route");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/courier/app.py", "def route(self")
    );
    let p = at(&repo, "examples/send_mail.py", "app.run()", "run");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "src/courier/app.py", "def run(self)")
    );
}

#[test]
fn an_untyped_receiver_stays_a_candidate() {
    let repo = fixture("python");
    let idx = index(&repo);
    let p = at(&repo, TESTS, "thing.send(\"/\")", "send");
    let locs = idx.definition_at(None, Some(&p)).unwrap();
    assert!(!locs.is_empty());
    assert!(
        locs.iter().all(|l| l.resolution == Resolution::Candidate),
        "{locs:?}"
    );
    // References to Client.send count the typed uses, never the untyped one as resolved.
    let send = at(&repo, CLIENT, "    def send(self, path):", "send");
    let refs = idx.references_at(None, Some(&send)).unwrap();
    let untyped = line_of(&repo, TESTS, "thing.send(");
    assert!(
        refs.iter()
            .all(|l| format!("{}:{}", l.path, l.line) != untyped
                || l.resolution == Resolution::Candidate),
        "{refs:?}"
    );
    let resolved: Vec<String> = refs
        .iter()
        .filter(|l| l.resolution == Resolution::Resolved)
        .map(|l| format!("{}:{}", l.path, l.line))
        .collect();
    for want in [
        line_of(&repo, TESTS, "return client.send(\"/ping\")"),
        line_of(&repo, TESTS, "assert client.send(\"/ping\")"),
        line_of(&repo, "examples/send_mail.py", "client.send(\"/mail\")"),
        line_of(&repo, CLIENT, "return self.send(path)"),
        line_of(&repo, CLIENT, "return super().send(path)"),
    ] {
        assert!(resolved.contains(&want), "{want} not in {resolved:?}");
    }
    // `client.send("/")` on a TracingClient is the override's.
    let tracing = line_of(&repo, TESTS, "    client.send(\"/\")");
    assert!(!resolved.contains(&tracing), "{resolved:?}");
}

#[test]
fn typescript_receivers_are_typed_by_parameter_properties_fields_and_constructors() {
    let repo = fixture("typescript");
    let idx = index(&repo);
    let main = "src/app/main.ts";
    let stream = "src/core/stream.ts";
    // `constructor(private readonly stream: Stream<number>)`, then `this.stream.subscribe`.
    let p = at(&repo, main, "this.stream.subscribe(sink)", "subscribe");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  subscribe(observer")
    );
    // `private subscription: Subscription | undefined`, then `this.subscription?.unsubscribe()`.
    let p = at(
        &repo,
        main,
        "this.subscription?.unsubscribe()",
        "unsubscribe",
    );
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  unsubscribe(): void")
    );
    // `const stream = new Stream(source)`.
    let p = at(&repo, main, "  stream.subscribe(sink);", "subscribe");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  subscribe(observer")
    );
    // `const pipeline = run()` where `run(): Pipeline`.
    let p = at(&repo, main, "pipeline.stop()", "stop");
    assert_eq!(def_at(&idx, &p), line_of(&repo, main, "  stop(): void"));
    // In the stream itself, `this.source.connect(…)` through the parameter property.
    let p = at(&repo, stream, "this.source.connect(observer)", "connect");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, stream, "  connect(observer")
    );
}

#[test]
fn rust_values_of_calls_are_typed_through_unwrap_try_and_method_chains() {
    let repo = crate::support::TestRepo::with_files(&[(
        "src/lib.rs",
        concat!(
            "pub struct Index;\n",
            "pub struct NavError;\n",
            "impl Index {\n",
            "    pub fn open(p: &str) -> Result<Index, NavError> { Ok(Index) }\n",
            "    pub fn refresh(&mut self) {}\n",
            "}\n",
            "pub fn a() {\n",
            "    let mut index = Index::open(\"x\").unwrap();\n",
            "    index.refresh();\n",
            "}\n",
            "pub fn b() -> Result<(), NavError> {\n",
            "    let mut index = Index::open(\"x\")?;\n",
            "    index.refresh();\n",
            "    let mut other = Index::open(\"y\").expect(\"an index\");\n",
            "    other.refresh();\n",
            "    Ok(())\n",
            "}\n",
        ),
    )]);
    let idx = index(&repo);
    for line in [9, 13, 15] {
        let p = git_orchestra::nav::At {
            path: "src/lib.rs".into(),
            line,
            col: None,
        };
        let locs = idx.definition_at(Some("refresh"), Some(&p)).unwrap();
        assert_eq!(
            crate::nav::resolved(&locs),
            vec!["src/lib.rs:5"],
            "line {line}: {locs:?}"
        );
    }
    // `let built = handler::Builder::new().build();` then `built.len()`.
    let repo = fixture("rust");
    let idx = index(&repo);
    let p = at(&repo, "crates/server/src/main.rs", "built.len()", "len");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "crates/wire/src/frame.rs", "pub fn len(&self)")
    );
}

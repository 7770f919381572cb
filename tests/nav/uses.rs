//! Navigation where an agent reading unfamiliar code stands: at a use. Method calls on
//! receivers typed by a factory, a builder chain or `this`/`Self` returns, on parameters bound
//! by a trait, through properties; references from a method's declaration through such
//! receivers; re-exported crates and packages; Python subclasses resolved through imports.

use git_orchestra::nav::At;

use crate::nav::{def_at, index, resolved};
use crate::support::TestRepo;

/// Returns the position of the `nth` (0-based) whole-word `token` on line `line` of `path`.
fn pos(repo: &TestRepo, path: &str, line: u32, token: &str) -> At {
    let text = std::fs::read_to_string(repo.path.join(path)).unwrap();
    let l = text.lines().nth(line as usize - 1).unwrap();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let col = l
        .match_indices(token)
        .map(|(i, _)| i)
        .find(|&i| !word(l[..i].chars().next_back()) && !word(l[i + token.len()..].chars().next()))
        .unwrap_or_else(|| panic!("`{token}` is not on {path}:{line}"));
    At {
        path: path.to_string(),
        line,
        col: Some(col as u32 + 1),
    }
}

/// Returns where the `token` on line `line` of `path` is defined, as the index `idx` of
/// `repo` answers.
fn def_of(
    idx: &git_orchestra::nav::Index,
    repo: &TestRepo,
    path: &str,
    line: u32,
    token: &str,
) -> String {
    def_at(idx, &pos(repo, path, line, token))
}

#[test]
fn rust_builder_chains_and_trait_bound_parameters_type_their_receivers() {
    let repo = TestRepo::with_files(&[(
        "src/lib.rs",
        concat!(
            "pub trait Matcher {\n",                                       // 1
            "    fn find_at(&self, at: usize) -> usize;\n",                // 2
            "}\n",                                                         // 3
            "pub struct RegexMatcher;\n",                                  // 4
            "impl Matcher for RegexMatcher {\n",                           // 5
            "    fn find_at(&self, at: usize) -> usize { at }\n",          // 6
            "}\n",                                                         // 7
            "pub struct SearcherBuilder { n: bool }\n",                    // 8
            "pub struct Searcher;\n",                                      // 9
            "impl SearcherBuilder {\n",                                    // 10
            "    pub fn new() -> Self { SearcherBuilder { n: false } }\n", // 11
            "    pub fn line_number(&mut self, y: bool) -> &mut Self { self.n = y; self }\n", // 12
            "    pub fn build(&self) -> Searcher { Searcher }\n",          // 13
            "}\n",                                                         // 14
            "impl Searcher {\n",                                           // 15
            "    pub fn search_path(&self, p: &str) {}\n",                 // 16
            "}\n",                                                         // 17
            "pub fn search_path(p: &str) {}\n",                            // 18
            "pub fn run<M: Matcher>(m: M, s: &Searcher) {\n",              // 19
            "    m.find_at(0);\n",                                         // 20
            "    s.search_path(\"a\");\n",                                 // 21
            "    let mut searcher = SearcherBuilder::new()\n",             // 22
            "        .line_number(true)\n",                                // 23
            "        .build();\n",                                         // 24
            "    searcher.search_path(\"b\");\n",                          // 25
            "    SearcherBuilder::new().build().search_path(\"c\");\n",    // 26
            "    let r = RegexMatcher;\n",                                 // 27
            "    r.find_at(1);\n",                                         // 28
            "}\n",                                                         // 29
            "pub fn dynamic(m: &dyn Matcher, w: impl Matcher) {\n",        // 30
            "    m.find_at(2);\n",                                         // 31
            "    w.find_at(3);\n",                                         // 32
            "}\n",                                                         // 33
            "pub fn bounded<M>(m: M) where M: Matcher {\n",                // 34
            "    m.find_at(4);\n",                                         // 35
            "}\n",                                                         // 36
        ),
    )]);
    let idx = index(&repo);
    let f = "src/lib.rs";
    let search = format!("{f}:16");
    for line in [21, 25, 26] {
        assert_eq!(
            def_of(&idx, &repo, f, line, "search_path"),
            search,
            "line {line}"
        );
    }
    assert_eq!(def_of(&idx, &repo, f, 23, "line_number"), format!("{f}:12"));
    assert_eq!(def_of(&idx, &repo, f, 24, "build"), format!("{f}:13"));
    // A receiver of a concrete type: the impl's method; bound by a trait: the trait's.
    assert_eq!(def_of(&idx, &repo, f, 28, "find_at"), format!("{f}:6"));
    for line in [20, 31, 32, 35] {
        assert_eq!(
            def_of(&idx, &repo, f, line, "find_at"),
            format!("{f}:2"),
            "line {line}"
        );
    }
    // References from the declaration find the calls through those receivers.
    let refs = idx
        .references_at(None, Some(&pos(&repo, f, 16, "search_path")))
        .unwrap();
    let got = resolved(&refs);
    for line in [21, 25, 26] {
        assert!(got.contains(&format!("{f}:{line}")), "line {line}: {got:?}");
    }
    assert!(!got.contains(&format!("{f}:18")), "{got:?}");
}

#[test]
fn typescript_factories_builders_and_this_returns_type_their_receivers() {
    let repo = TestRepo::with_files(&[
        (
            "src/schema.ts",
            concat!(
                "export interface Schema {\n",                     // 1
                "  cast(v: unknown): unknown;\n",                  // 2
                "}\n",                                             // 3
                "export class ObjectSchema implements Schema {\n", // 4
                "  cast(v: unknown): unknown { return v; }\n",     // 5
                "  shape(): this { return this; }\n",              // 6
                "  strict(): ObjectSchema { return this; }\n",     // 7
                "}\n",                                             // 8
                "export class Other {\n",                          // 9
                "  cast(v: unknown): unknown { return v; }\n",     // 10
                "}\n",                                             // 11
                "export function makeSchema(): Schema { return new ObjectSchema(); }\n", // 12
                "export const object = (): ObjectSchema => new ObjectSchema();\n", // 13
                "export class Builder {\n",                        // 14
                "  withName(n: string): Builder { return this; }\n", // 15
                "  build(): ObjectSchema { return new ObjectSchema(); }\n", // 16
                "  static create(): Builder { return new Builder(); }\n", // 17
                "}\n",                                             // 18
            ),
        ),
        (
            "src/use.ts",
            concat!(
                "import { makeSchema, object, Builder, ObjectSchema } from './schema';\n", // 1
                "export function main(p: ObjectSchema) {\n",                               // 2
                "  const s = makeSchema();\n",                                             // 3
                "  s.cast(1);\n",                                                          // 4
                "  const o = object();\n",                                                 // 5
                "  o.cast(2);\n",                                                          // 6
                "  const b = Builder.create().withName('x').build();\n",                   // 7
                "  b.cast(3);\n",                                                          // 8
                "  new ObjectSchema().shape().cast(4);\n",                                 // 9
                "  p.shape().strict().cast(5);\n",                                         // 10
                "  const q = new ObjectSchema();\n",                                       // 11
                "  q.cast(6);\n",                                                          // 12
                "}\n",                                                                     // 13
            ),
        ),
    ]);
    let idx = index(&repo);
    let u = "src/use.ts";
    assert_eq!(def_of(&idx, &repo, u, 4, "cast"), "src/schema.ts:2");
    for line in [6, 8, 9, 10, 12] {
        assert_eq!(
            def_of(&idx, &repo, u, line, "cast"),
            "src/schema.ts:5",
            "line {line}"
        );
    }
    assert_eq!(def_of(&idx, &repo, u, 7, "build"), "src/schema.ts:16");
    let refs = idx
        .references_at(
            None,
            Some(&At {
                path: "src/schema.ts".into(),
                line: 5,
                col: Some(3),
            }),
        )
        .unwrap();
    let got = resolved(&refs);
    for line in [6, 8, 9, 10, 12] {
        assert!(got.contains(&format!("{u}:{line}")), "line {line}: {got:?}");
    }
}

#[test]
fn python_factories_builders_properties_and_self_returns_type_their_receivers() {
    let repo = TestRepo::with_files(&[
        (
            "pkg/__init__.py",
            "from .schema import *\nfrom .build import Builder as Maker\n",
        ),
        (
            "pkg/schema.py",
            concat!(
                "from typing import Self\n",             // 1
                "__all__ = ['Schema', 'make_schema']\n", // 2
                "class Schema:\n",                       // 3
                "    def cast(self, v):\n",              // 4
                "        return v\n",                    // 5
                "    def strict(self) -> Self:\n",       // 6
                "        return self\n",                 // 7
                "class Other:\n",                        // 8
                "    def cast(self, v):\n",              // 9
                "        return v\n",                    // 10
                "def make_schema() -> Schema:\n",        // 11
                "    return Schema()\n",                 // 12
            ),
        ),
        (
            "pkg/build.py",
            concat!(
                "from .schema import Schema\n",             // 1
                "class Builder:\n",                         // 2
                "    @classmethod\n",                       // 3
                "    def create(cls) -> \"Builder\":\n",    // 4
                "        return cls()\n",                   // 5
                "    def named(self, n) -> \"Builder\":\n", // 6
                "        return self\n",                    // 7
                "    def build(self) -> Schema:\n",         // 8
                "        return Schema()\n",                // 9
                "    @property\n",                          // 10
                "    def schema(self) -> Schema:\n",        // 11
                "        return Schema()\n",                // 12
            ),
        ),
        (
            "app.py",
            concat!(
                "from pkg import make_schema, Maker\n",        // 1
                "def main():\n",                               // 2
                "    s = make_schema()\n",                     // 3
                "    s.cast(1)\n",                             // 4
                "    b = Maker.create().named('x').build()\n", // 5
                "    b.cast(2)\n",                             // 6
                "    s.strict().cast(3)\n",                    // 7
                "    Maker().schema.cast(4)\n",                // 8
                "    m = Maker()\n",                           // 9
                "    m.schema.cast(5)\n",                      // 10
                "\n",                                          // 11
            ),
        ),
    ]);
    let idx = index(&repo);
    for line in [4, 6, 7, 8, 10] {
        assert_eq!(
            def_of(&idx, &repo, "app.py", line, "cast"),
            "pkg/schema.py:4",
            "line {line}"
        );
    }
    let refs = idx
        .references_at(None, Some(&pos(&repo, "pkg/schema.py", 4, "cast")))
        .unwrap();
    let got = resolved(&refs);
    for line in [4, 6, 7, 8, 10] {
        assert!(
            got.contains(&format!("app.py:{line}")),
            "line {line}: {got:?}"
        );
    }
}

#[test]
fn rust_facade_crates_reexport_their_siblings_under_other_names() {
    let repo = TestRepo::with_files(&[
        ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
        (
            "crates/grep/Cargo.toml",
            "[package]\nname = \"grep\"\n[dependencies]\ngrep-matcher = { path = \"../matcher\" }\ngrep-searcher = { path = \"../searcher\" }\n",
        ),
        (
            "crates/grep/src/lib.rs",
            "pub extern crate grep_matcher as matcher;\npub use grep_searcher as searcher;\n",
        ),
        (
            "crates/matcher/Cargo.toml",
            "[package]\nname = \"grep-matcher\"\n",
        ),
        (
            "crates/matcher/src/lib.rs",
            "mod interval;\npub use crate::interval::Match;\npub trait Matcher { fn find(&self); }\n",
        ),
        (
            "crates/matcher/src/interval.rs",
            "pub struct Match { start: usize }\n",
        ),
        (
            "crates/searcher/Cargo.toml",
            "[package]\nname = \"grep-searcher\"\n",
        ),
        (
            "crates/searcher/src/lib.rs",
            "pub mod sink;\npub use sink::Sink;\n",
        ),
        (
            "crates/searcher/src/sink.rs",
            "pub trait Sink { fn matched(&mut self); }\n",
        ),
        (
            "crates/app/Cargo.toml",
            "[package]\nname = \"app\"\n[dependencies]\ngrep = { path = \"../grep\" }\n",
        ),
        (
            "crates/app/src/main.rs",
            concat!(
                "use grep::matcher::{Match, Matcher};\n",           // 1
                "use grep::searcher::sink::Sink;\n",                // 2
                "fn main() {\n",                                    // 3
                "    let m: Option<Match> = None;\n",               // 4
                "    let _ = grep::matcher::Match { start: 0 };\n", // 5
                "}\n",                                              // 6
            ),
        ),
    ]);
    let idx = index(&repo);
    let main = "crates/app/src/main.rs";
    let m = "crates/matcher/src/interval.rs:1";
    assert_eq!(def_of(&idx, &repo, main, 1, "Match"), m);
    assert_eq!(def_of(&idx, &repo, main, 4, "Match"), m);
    assert_eq!(def_of(&idx, &repo, main, 5, "Match"), m);
    assert_eq!(
        def_of(&idx, &repo, main, 1, "Matcher"),
        "crates/matcher/src/lib.rs:3"
    );
    assert_eq!(
        def_of(&idx, &repo, main, 2, "Sink"),
        "crates/searcher/src/sink.rs:1"
    );
}

#[test]
fn typescript_barrels_reexport_namespaces_and_renamed_names() {
    let repo = TestRepo::with_files(&[
        (
            "src/index.ts",
            "export * from './a';\nexport * as util from './util';\nexport { default as Thing } from './thing';\nexport { helper as aid } from './util';\n",
        ),
        ("src/a.ts", "export * from './deep/b';\n"),
        ("src/deep/b.ts", "export function deep(): void {}\n"),
        ("src/util.ts", "export function helper(): void {}\n"),
        (
            "src/thing.ts",
            "export default class Thing {\n  go(): void {}\n}\n",
        ),
        (
            "src/use.ts",
            concat!(
                "import { deep, util, Thing, aid } from './index';\n", // 1
                "deep();\n",                                           // 2
                "util.helper();\n",                                    // 3
                "new Thing().go();\n",                                 // 4
                "aid();\n",                                            // 5
            ),
        ),
    ]);
    let idx = index(&repo);
    let u = "src/use.ts";
    assert_eq!(def_of(&idx, &repo, u, 2, "deep"), "src/deep/b.ts:1");
    assert_eq!(def_of(&idx, &repo, u, 3, "helper"), "src/util.ts:1");
    assert_eq!(def_of(&idx, &repo, u, 4, "go"), "src/thing.ts:2");
    assert_eq!(def_of(&idx, &repo, u, 5, "aid"), "src/util.ts:1");
}

#[test]
fn python_implementations_are_subclasses_resolved_through_imports() {
    let repo = TestRepo::with_files(&[
        ("a/__init__.py", ""),
        (
            "a/base.py",
            "class Handler:\n    def handle(self):\n        pass\n",
        ),
        ("b/__init__.py", ""),
        (
            "b/base.py",
            "class Handler:\n    def handle(self):\n        pass\n",
        ),
        (
            "a/impl.py",
            "from a.base import Handler\nclass Mine(Handler):\n    def handle(self):\n        pass\n",
        ),
        (
            "b/impl.py",
            "from b import base\nclass Theirs(base.Handler):\n    def handle(self):\n        pass\n",
        ),
        (
            "c.py",
            "from a.base import Handler as H\nclass Aliased(H):\n    pass\n",
        ),
        // A base of the same name from outside the repository is no subclass of ours.
        (
            "d.py",
            "from logging import Handler\nclass Logs(Handler):\n    pass\n",
        ),
        (
            "e.py",
            "import logging\nclass Logs2(logging.Handler):\n    pass\n",
        ),
    ]);
    let idx = index(&repo);
    let impls = idx
        .implementations_at(None, Some(&pos(&repo, "a/base.py", 1, "Handler")))
        .unwrap();
    assert_eq!(
        crate::nav::places(&impls),
        vec!["a/impl.py:2".to_string(), "c.py:2".to_string()],
        "{impls:?}"
    );
    let impls = idx
        .implementations_at(None, Some(&pos(&repo, "b/base.py", 1, "Handler")))
        .unwrap();
    assert_eq!(
        crate::nav::places(&impls),
        vec!["b/impl.py:2".to_string()],
        "{impls:?}"
    );
}

#[test]
fn receivers_assigned_from_a_typed_name_take_its_type() {
    let repo = TestRepo::with_files(&[
        (
            "app.py",
            concat!(
                "class Session:\n",                            // 1
                "    def send(self):\n",                       // 2
                "        pass\n",                              // 3
                "class Other:\n",                              // 4
                "    def send(self):\n",                       // 5
                "        pass\n",                              // 6
                "class Client:\n",                             // 7
                "    def __init__(self, session: Session):\n", // 8
                "        self.session = session\n",            // 9
                "    def go(self):\n",                         // 10
                "        self.session.send()\n",               // 11
                "def f(s: Session):\n",                        // 12
                "    t = s\n",                                 // 13
                "    t.send()\n",                              // 14
            ),
        ),
        (
            "src/app.ts",
            concat!(
                "class Session {\n",                         // 1
                "  send(): void {}\n",                       // 2
                "}\n",                                       // 3
                "class Other {\n",                           // 4
                "  send(): void {}\n",                       // 5
                "}\n",                                       // 6
                "class Client {\n",                          // 7
                "  private session: Session | undefined;\n", // 8
                "  constructor(session: Session) {\n",       // 9
                "    this.session = session;\n",             // 10
                "  }\n",                                     // 11
                "  go(s: Session): void {\n",                // 12
                "    const t = s;\n",                        // 13
                "    t.send();\n",                           // 14
                "  }\n",                                     // 15
                "}\n",                                       // 16
            ),
        ),
        (
            "src/lib.rs",
            concat!(
                "pub struct Session;\n",                    // 1
                "impl Session { pub fn send(&self) {} }\n", // 2
                "pub struct Other;\n",                      // 3
                "impl Other { pub fn send(&self) {} }\n",   // 4
                "pub fn f(s: &Session) {\n",                // 5
                "    let t = s;\n",                         // 6
                "    t.send();\n",                          // 7
                "}\n",                                      // 8
            ),
        ),
    ]);
    let idx = index(&repo);
    assert_eq!(def_of(&idx, &repo, "app.py", 11, "send"), "app.py:2");
    assert_eq!(def_of(&idx, &repo, "app.py", 14, "send"), "app.py:2");
    assert_eq!(
        def_of(&idx, &repo, "src/app.ts", 14, "send"),
        "src/app.ts:2"
    );
    assert_eq!(def_of(&idx, &repo, "src/lib.rs", 7, "send"), "src/lib.rs:2");
}

/// Returns (line, target) of each import edge of `path`.
fn edges(idx: &git_orchestra::nav::Index, path: &str) -> Vec<(u32, Option<String>)> {
    idx.imports_of(path)
        .unwrap()
        .into_iter()
        .map(|e| (e.line, e.target))
        .collect()
}

#[test]
fn typescript_path_aliases_with_wildcards_and_extends_resolve() {
    let repo = TestRepo::with_files(&[
        (
            "tsconfig.base.json",
            "{\n  // shared\n  \"compilerOptions\": {\n    \"baseUrl\": \".\",\n    \"paths\": { \"@lib/*\": [\"packages/lib/src/*\"], \"~util\": [\"packages/util/index.ts\"] }\n  }\n}\n",
        ),
        (
            "tsconfig.json",
            "{ \"extends\": \"./tsconfig.base.json\" }\n",
        ),
        (
            "packages/lib/src/math/add.ts",
            "export function add(a: number, b: number): number { return a + b; }\n",
        ),
        (
            "packages/util/index.ts",
            "export function util(): void {}\n",
        ),
        (
            "packages/app/main.ts",
            "import { add } from '@lib/math/add';\nimport { util } from '~util';\nadd(1, 2);\nutil();\n",
        ),
    ]);
    let idx = index(&repo);
    let m = "packages/app/main.ts";
    assert_eq!(
        def_of(&idx, &repo, m, 3, "add"),
        "packages/lib/src/math/add.ts:1"
    );
    assert_eq!(
        def_of(&idx, &repo, m, 4, "util"),
        "packages/util/index.ts:1"
    );
    let e = edges(&idx, m);
    assert_eq!(
        e,
        vec![
            (1, Some("packages/lib/src/math/add.ts".into())),
            (2, Some("packages/util/index.ts".into()))
        ]
    );
}

#[test]
fn instances_made_by_cls_default_and_clone_are_of_their_type() {
    let repo = TestRepo::with_files(&[
        (
            "app.py",
            concat!(
                "class Config:\n",       // 1
                "    def load(self):\n", // 2
                "        pass\n",        // 3
                "    @classmethod\n",    // 4
                "    def fresh(cls):\n", // 5
                "        c = cls()\n",   // 6
                "        c.load()\n",    // 7
                "        return c\n",    // 8
                "class Other:\n",        // 9
                "    def load(self):\n", // 10
                "        pass\n",        // 11
            ),
        ),
        (
            "src/lib.rs",
            concat!(
                "#[derive(Default, Clone)]\n",             // 1
                "pub struct Config;\n",                    // 2
                "impl Config { pub fn load(&self) {} }\n", // 3
                "pub struct Other;\n",                     // 4
                "impl Other { pub fn load(&self) {} }\n",  // 5
                "pub fn f() {\n",                          // 6
                "    let c = Config::default();\n",        // 7
                "    c.load();\n",                         // 8
                "    let d = c.clone();\n",                // 9
                "    d.load();\n",                         // 10
                "}\n",                                     // 11
            ),
        ),
    ]);
    let idx = index(&repo);
    assert_eq!(def_of(&idx, &repo, "app.py", 7, "load"), "app.py:2");
    assert_eq!(def_of(&idx, &repo, "src/lib.rs", 8, "load"), "src/lib.rs:3");
    assert_eq!(
        def_of(&idx, &repo, "src/lib.rs", 10, "load"),
        "src/lib.rs:3"
    );
}

#[test]
fn typescript_non_null_assertions_keep_the_receiver_typed() {
    let repo = TestRepo::with_files(&[(
        "src/a.ts",
        concat!(
            "class Session {\n",                      // 1
            "  send(): void {}\n",                    // 2
            "}\n",                                    // 3
            "class Other {\n",                        // 4
            "  send(): void {}\n",                    // 5
            "}\n",                                    // 6
            "class Client {\n",                       // 7
            "  session?: Session;\n",                 // 8
            "  go(s: Session | undefined): void {\n", // 9
            "    this.session!.send();\n",            // 10
            "    s!.send();\n",                       // 11
            "  }\n",                                  // 12
            "}\n",                                    // 13
        ),
    )]);
    let idx = index(&repo);
    assert_eq!(def_of(&idx, &repo, "src/a.ts", 10, "send"), "src/a.ts:2");
    assert_eq!(def_of(&idx, &repo, "src/a.ts", 11, "send"), "src/a.ts:2");
}

#[test]
fn typescript_declared_and_private_fields_type_their_receivers() {
    let repo = TestRepo::with_files(&[(
        "src/a.ts",
        concat!(
            "class Cache {\n",                                  // 1
            "  find(): void {}\n",                              // 2
            "}\n",                                              // 3
            "class Other {\n",                                  // 4
            "  find(): void {}\n",                              // 5
            "}\n",                                              // 6
            "class Client {\n",                                 // 7
            "  #cache: Cache;\n",                               // 8
            "  store: Cache;\n",                                // 9
            "  constructor(config: { cache?: Cache }) {\n",     // 10
            "    this.#cache = config.cache || new Cache();\n", // 11
            "    this.store = config.cache ?? new Cache();\n",  // 12
            "  }\n",                                            // 13
            "  go(): void {\n",                                 // 14
            "    this.#cache.find();\n",                        // 15
            "    this.store.find();\n",                         // 16
            "  }\n",                                            // 17
            "}\n",                                              // 18
        ),
    )]);
    let idx = index(&repo);
    assert_eq!(def_of(&idx, &repo, "src/a.ts", 15, "find"), "src/a.ts:2");
    assert_eq!(def_of(&idx, &repo, "src/a.ts", 16, "find"), "src/a.ts:2");
}

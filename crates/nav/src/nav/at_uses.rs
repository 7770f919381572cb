//! Unit tests of navigation asked at a use: small repositories of a few snippets, each question
//! asked at a token's position as `--from PATH:LINE:COL` asks it, each answer the one the
//! language's own tools give (receivers typed by constructors, factories, builders and locals;
//! references found through such receivers; re-exports followed).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{At, Index, Location, Resolution};

/// A temporary committed repository and its refreshed index.
pub(super) struct Repo {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    pub(super) index: Index,
}

fn git(dir: &std::path::Path, args: &[&str]) {
    orchestra_git::git::testing::git(dir, args);
}

/// Returns an indexed repository holding `files`.
pub(super) fn repo(files: &[(&str, &str)]) -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "files"]);
    let mut index = Index::open_with_cache(&root, &tmp.path().join("nav.db")).unwrap();
    index.refresh().unwrap();
    Repo {
        _tmp: tmp,
        root,
        index,
    }
}

impl Repo {
    /// Returns the position of the `nth` (0-based) whole-word `token` on `line` of `path`.
    pub(super) fn at(&self, path: &str, line: u32, token: &str, nth: usize) -> At {
        let text = std::fs::read_to_string(self.root.join(path)).unwrap();
        let l = text.lines().nth(line as usize - 1).unwrap();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let col = l
            .match_indices(token)
            .map(|(i, _)| i)
            .filter(|&i| {
                !word(l[..i].chars().next_back()) && !word(l[i + token.len()..].chars().next())
            })
            .nth(nth)
            .unwrap_or_else(|| panic!("`{token}` is not on {path}:{line}"));
        At {
            path: path.to_string(),
            line,
            col: Some(col as u32 + 1),
        }
    }

    /// Returns the definitions of the token, as `path:line`, each marked `?` when only a
    /// candidate.
    pub(super) fn def(&self, path: &str, line: u32, token: &str) -> Vec<String> {
        let at = self.at(path, line, token, 0);
        let locs = self.index.definition_at(Some(token), Some(&at)).unwrap();
        places(&locs)
    }

    /// Returns the resolved references of the definition named `token` on `line` of `path`.
    pub(super) fn refs(&self, path: &str, line: u32, token: &str) -> Vec<String> {
        let at = self.at(path, line, token, 0);
        let locs = self.index.references_at(Some(token), Some(&at)).unwrap();
        let resolved: Vec<Location> = locs
            .into_iter()
            .filter(|l| l.resolution == Resolution::Resolved)
            .collect();
        places(&resolved)
    }
}

pub(super) fn places(locs: &[Location]) -> Vec<String> {
    locs.iter()
        .map(|l| {
            let mark = if l.resolution == Resolution::Resolved {
                ""
            } else {
                "?"
            };
            format!("{}:{}{mark}", l.path, l.line)
        })
        .collect()
}

#[test]
fn python_locals_assigned_from_a_typed_receivers_method_are_typed() {
    let r = repo(&[(
        "m.py",
        concat!(
            "class Child:\n",                  // 1
            "    def run(self):\n",            // 2
            "        pass\n",                  // 3
            "class Other:\n",                  // 4
            "    def run(self):\n",            // 5
            "        pass\n",                  // 6
            "class Parent:\n",                 // 7
            "    def child(self) -> Child:\n", // 8
            "        return Child()\n",        // 9
            "def main(p: Parent):\n",          // 10
            "    c = p.child()\n",             // 11
            "    c.run()\n",                   // 12
            "    with Parent() as q:\n",       // 13
            "        q.child().run()\n",       // 14
        ),
    )]);
    assert_eq!(r.def("m.py", 12, "run"), ["m.py:2"]);
    assert_eq!(r.def("m.py", 14, "run"), ["m.py:2"]);
    assert_eq!(r.refs("m.py", 2, "run"), ["m.py:12", "m.py:14"]);
}

#[test]
fn typescript_chains_through_private_fields_over_several_lines_are_typed() {
    let r = repo(&[
        (
            "src/cache.ts",
            concat!(
                "export class QueryCache {\n",               // 1
                "  build(): void {}\n",                      // 2
                "  notify(): void {}\n",                     // 3
                "}\n",                                       // 4
                "export class MutationCache {\n",            // 5
                "  build(): void {}\n",                      // 6
                "  notify(): void {}\n",                     // 7
                "}\n",                                       // 8
                "export class QueryClient {\n",              // 9
                "  #queryCache: QueryCache\n",               // 10
                "  constructor() {\n",                       // 11
                "    this.#queryCache = new QueryCache()\n", // 12
                "  }\n",                                     // 13
                "  getQueryCache(): QueryCache {\n",         // 14
                "    return this.#queryCache\n",             // 15
                "  }\n",                                     // 16
                "  clear(): void {\n",                       // 17
                "    const queryCache = this.#queryCache\n", // 18
                "    queryCache.notify()\n",                 // 19
                "  }\n",                                     // 20
                "}\n",                                       // 21
            ),
        ),
        (
            "src/observer.ts",
            concat!(
                "import { QueryClient } from './cache'\n",    // 1
                "export class Observer {\n",                  // 2
                "  #client: QueryClient\n",                   // 3
                "  constructor(client: QueryClient) {\n",     // 4
                "    this.#client = client\n",                // 5
                "  }\n",                                      // 6
                "  update(client: QueryClient): void {\n",    // 7
                "    this.#client.getQueryCache().build()\n", // 8
                "    client\n",                               // 9
                "      .getQueryCache()\n",                   // 10
                "      .notify()\n",                          // 11
                "  }\n",                                      // 12
                "}\n",                                        // 13
            ),
        ),
    ]);
    let (c, o) = ("src/cache.ts", "src/observer.ts");
    assert_eq!(r.def(o, 8, "build"), [format!("{c}:2")]);
    assert_eq!(r.def(o, 11, "notify"), [format!("{c}:3")]);
    assert_eq!(r.def(c, 19, "notify"), [format!("{c}:3")]);
    let refs = r.refs(c, 3, "notify");
    for line in [format!("{c}:19"), format!("{o}:11")] {
        assert!(refs.contains(&line), "{line}: {refs:?}");
    }
    assert!(r.refs(c, 2, "build").contains(&format!("{o}:8")));
}

#[test]
fn python_locals_assigned_from_an_attribute_take_its_type() {
    let r = repo(&[(
        "m.py",
        concat!(
            "class Session:\n",                            // 1
            "    def send(self):\n",                       // 2
            "        pass\n",                              // 3
            "class Other:\n",                              // 4
            "    def send(self):\n",                       // 5
            "        pass\n",                              // 6
            "class Client:\n",                             // 7
            "    def __init__(self):\n",                   // 8
            "        self.session: Session = Session()\n", // 9
            "    def go(self):\n",                         // 10
            "        session = self.session\n",            // 11
            "        session.send()\n",                    // 12
        ),
    )]);
    assert_eq!(r.def("m.py", 12, "send"), ["m.py:2"]);
    assert!(r.refs("m.py", 2, "send").contains(&"m.py:12".to_string()));
}

#[test]
fn rust_locals_borrowing_a_field_take_its_type() {
    let r = repo(&[(
        "src/lib.rs",
        concat!(
            "pub struct Cache;\n",                   // 1
            "impl Cache { pub fn get(&self) {} }\n", // 2
            "pub struct Other;\n",                   // 3
            "impl Other { pub fn get(&self) {} }\n", // 4
            "pub struct Client { cache: Cache }\n",  // 5
            "impl Client {\n",                       // 6
            "    pub fn run(&mut self) {\n",         // 7
            "        let c = &self.cache;\n",        // 8
            "        c.get();\n",                    // 9
            "        let d = &mut self.cache;\n",    // 10
            "        d.get();\n",                    // 11
            "    }\n",                               // 12
            "}\n",                                   // 13
        ),
    )]);
    let f = "src/lib.rs";
    assert_eq!(r.def(f, 9, "get"), [format!("{f}:2")]);
    assert_eq!(r.def(f, 11, "get"), [format!("{f}:2")]);
    let refs = r.refs(f, 2, "get");
    assert!(
        refs.contains(&format!("{f}:9")) && refs.contains(&format!("{f}:11")),
        "{refs:?}"
    );
}

#[test]
fn elements_of_declared_collections_are_typed_in_loops_and_callbacks() {
    let r = repo(&[
        (
            "src/obs.ts",
            concat!(
                "export class Observer {\n",                     // 1
                "  destroy(): void {}\n",                        // 2
                "}\n",                                           // 3
                "export class Other {\n",                        // 4
                "  destroy(): void {}\n",                        // 5
                "}\n",                                           // 6
                "export class Many {\n",                         // 7
                "  #observers: Array<Observer> = []\n",          // 8
                "  clear(list: Observer[]): void {\n",           // 9
                "    this.#observers.forEach((observer) => {\n", // 10
                "      observer.destroy()\n",                    // 11
                "    })\n",                                      // 12
                "    list.map(o => o.destroy())\n",              // 13
                "    for (const each of this.#observers) {\n",   // 14
                "      each.destroy()\n",                        // 15
                "    }\n",                                       // 16
                "  }\n",                                         // 17
                "}\n",                                           // 18
            ),
        ),
        (
            "m.py",
            concat!(
                "class Item:\n",                                // 1
                "    def run(self):\n",                         // 2
                "        pass\n",                               // 3
                "class Other:\n",                               // 4
                "    def run(self):\n",                         // 5
                "        pass\n",                               // 6
                "class Box:\n",                                 // 7
                "    def __init__(self, items: list[Item]):\n", // 8
                "        self.items: list[Item] = items\n",     // 9
                "    def go(self, more: t.Sequence[Item]):\n",  // 10
                "        for item in self.items:\n",            // 11
                "            item.run()\n",                     // 12
                "        [m.run() for m in more]\n",            // 13
            ),
        ),
        (
            "src/lib.rs",
            concat!(
                "pub struct Matcher;\n",                       // 1
                "impl Matcher { pub fn find(&self) {} }\n",    // 2
                "pub struct Other;\n",                         // 3
                "impl Other { pub fn find(&self) {} }\n",      // 4
                "pub struct Set { matchers: Vec<Matcher> }\n", // 5
                "impl Set {\n",                                // 6
                "    pub fn run(&self, more: &[Matcher]) {\n", // 7
                "        for m in &self.matchers {\n",         // 8
                "            m.find();\n",                     // 9
                "        }\n",                                 // 10
                "        for n in more.iter() {\n",            // 11
                "            n.find();\n",                     // 12
                "        }\n",                                 // 13
                "    }\n",                                     // 14
                "}\n",                                         // 15
            ),
        ),
    ]);
    let ts = "src/obs.ts";
    for (line, token) in [(11, "destroy"), (13, "destroy"), (15, "destroy")] {
        assert_eq!(r.def(ts, line, token), [format!("{ts}:2")], "line {line}");
    }
    let refs = r.refs(ts, 2, "destroy");
    for line in [11, 13, 15] {
        assert!(refs.contains(&format!("{ts}:{line}")), "{line}: {refs:?}");
    }
    assert_eq!(r.def("m.py", 12, "run"), ["m.py:2"]);
    assert_eq!(r.def("m.py", 13, "run"), ["m.py:2"]);
    let rs = "src/lib.rs";
    assert_eq!(r.def(rs, 9, "find"), [format!("{rs}:2")]);
    assert_eq!(r.def(rs, 12, "find"), [format!("{rs}:2")]);
}

#[test]
fn a_loop_over_a_long_expression_still_binds_its_variable() {
    let long = format!(
        "make({})",
        (0..40)
            .map(|i| format!("a{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let text = format!(
        concat!(
            "class Item:\n",        // 1
            "    def run(self):\n", // 2
            "        pass\n",       // 3
            "class Other:\n",       // 4
            "    def run(self):\n", // 5
            "        pass\n",       // 6
            "x = Item()\n",         // 7
            "def go():\n",          // 8
            "    for x in {}:\n",   // 9
            "        x.run()\n",    // 10
        ),
        long
    );
    let r = repo(&[("m.py", &text)]);
    assert_eq!(r.def("m.py", 10, "run"), ["m.py:2?", "m.py:5?"]);
}

#[test]
fn values_got_from_declared_maps_are_typed() {
    let r = repo(&[
        (
            "src/map.ts",
            concat!(
                "export class Entry {\n",                      // 1
                "  get(): number { return 1 }\n",              // 2
                "}\n",                                         // 3
                "export class Other {\n",                      // 4
                "  get(): number { return 2 }\n",              // 5
                "}\n",                                         // 6
                "export class Store {\n",                      // 7
                "  values_: Map<string, Entry> = new Map()\n", // 8
                "  read(key: string): number {\n",             // 9
                "    const entry = this.values_.get(key)\n",   // 10
                "    entry.get()\n",                           // 11
                "    return this.values_.get(key)!.get()\n",   // 12
                "  }\n",                                       // 13
                "}\n",                                         // 14
            ),
        ),
        (
            "src/lib.rs",
            concat!(
                "use std::collections::HashMap;\n",                       // 1
                "pub struct Entry;\n",                                    // 2
                "impl Entry { pub fn load(&self) {} }\n",                 // 3
                "pub struct Other;\n",                                    // 4
                "impl Other { pub fn load(&self) {} }\n",                 // 5
                "pub struct Store { entries: HashMap<String, Entry> }\n", // 6
                "impl Store {\n",                                         // 7
                "    pub fn read(&self, k: &str) -> Option<()> {\n",      // 8
                "        let e = self.entries.get(k)?;\n",                // 9
                "        e.load();\n",                                    // 10
                "        Some(())\n",                                     // 11
                "    }\n",                                                // 12
                "}\n",                                                    // 13
            ),
        ),
    ]);
    let ts = "src/map.ts";
    assert_eq!(r.def(ts, 11, "get"), [format!("{ts}:2")]);
    let at = r.at(ts, 12, "get", 1);
    let locs = r.index.definition_at(Some("get"), Some(&at)).unwrap();
    assert_eq!(places(&locs), [format!("{ts}:2")]);
    let rs = "src/lib.rs";
    assert_eq!(r.def(rs, 10, "load"), [format!("{rs}:3")]);
}

#[test]
fn a_call_prefers_the_method_and_a_read_the_field_of_the_same_name() {
    let r = repo(&[(
        "src/lib.rs",
        concat!(
            "pub struct Map { keys: Vec<u8> }\n",                // 1
            "impl Map {\n",                                      // 2
            "    pub fn keys(&self) -> usize { 0 }\n",           // 3
            "}\n",                                               // 4
            "pub struct Cmd { map: Map }\n",                     // 5
            "impl Cmd {\n",                                      // 6
            "    pub fn get_map(&self) -> &Map { &self.map }\n", // 7
            "}\n",                                               // 8
            "pub fn run(c: &Cmd, m: &Map) -> usize {\n",         // 9
            "    let n = m.keys.len();\n",                       // 10
            "    m.keys();\n",                                   // 11
            "    c\n",                                           // 12
            "        .get_map()\n",                              // 13
            "        .keys()\n",                                 // 14
            "}\n",                                               // 15
            "pub fn path() {\n",                                 // 16
            "    let f = Map::keys;\n",                          // 17
            "}\n",                                               // 18
        ),
    )]);
    let f = "src/lib.rs";
    // A path never names a field.
    assert_eq!(
        r.def(f, 17, "keys").first().map(String::as_str),
        Some("src/lib.rs:3")
    );
    // A call through a dot is the method: calling a field needs `(m.keys)()`.
    assert_eq!(r.def(f, 11, "keys"), ["src/lib.rs:3"]);
    assert_eq!(r.def(f, 14, "keys"), ["src/lib.rs:3"]);
    // A read is the field first.
    assert_eq!(
        r.def(f, 10, "keys").first().map(String::as_str),
        Some("src/lib.rs:1")
    );
}

#[test]
fn python_implementations_are_the_subclasses_of_that_class_not_of_a_namesake() {
    let r = repo(&[
        ("pkg/__init__.py", "from .b import Base as BBase\n"),
        ("pkg/a.py", "class Base:\n    pass\n"),
        ("pkg/b.py", "class Base:\n    pass\n"),
        (
            "pkg/c.py",
            "from .b import Base\nclass C(Base):\n    pass\n",
        ),
        ("pkg/d.py", "from . import a\nclass D(a.Base):\n    pass\n"),
        (
            "pkg/e.py",
            "import pkg.b as bb\nclass E(bb.Base):\n    pass\n",
        ),
        (
            "pkg/f.py",
            "from pkg.a import Base as A\nclass F(A):\n    pass\n",
        ),
        (
            "pkg/g.py",
            "from pkg import BBase\nclass G(BBase):\n    pass\n",
        ),
        ("pkg/h.py", "from .a import *\nclass H(Base):\n    pass\n"),
    ]);
    let impls = |path: &str| {
        let at = r.at(path, 1, "Base", 0);
        let locs = r.index.implementations_at(Some("Base"), Some(&at)).unwrap();
        let mut got = places(&locs);
        got.sort();
        got
    };
    assert_eq!(
        impls("pkg/a.py"),
        ["pkg/d.py:2", "pkg/f.py:2", "pkg/h.py:2"]
    );
    assert_eq!(
        impls("pkg/b.py"),
        ["pkg/c.py:2", "pkg/e.py:2", "pkg/g.py:2"]
    );
}

#[test]
fn rust_bindings_of_variant_and_tuple_patterns_take_the_fields_type() {
    let r = repo(&[(
        "src/lib.rs",
        concat!(
            "pub struct VacantEntry;\n",                                    // 1
            "impl VacantEntry { pub fn key(&self) {} }\n",                  // 2
            "pub struct OccupiedEntry;\n",                                  // 3
            "impl OccupiedEntry { pub fn key(&self) {} }\n",                // 4
            "pub enum Entry<'a> {\n",                                       // 5
            "    Vacant(VacantEntry),\n",                                   // 6
            "    Occupied(u8, &'a OccupiedEntry),\n",                       // 7
            "}\n",                                                          // 8
            "impl<'a> Entry<'a> {\n",                                       // 9
            "    pub fn key(&self) {\n",                                    // 10
            "        match self {\n",                                       // 11
            "            Entry::Vacant(e) => e.key(),\n",                   // 12
            "            Self::Occupied(_, e) => e.key(),\n",               // 13
            "        }\n",                                                  // 14
            "    }\n",                                                      // 15
            "}\n",                                                          // 16
            "pub fn split(s: &str) -> Result<(u8, OccupiedEntry), ()> {\n", // 17
            "    Err(())\n",                                                // 18
            "}\n",                                                          // 19
            "pub fn run(s: &str, e: Entry) -> Result<(), ()> {\n",          // 20
            "    let (n, o) = split(s)?;\n",                                // 21
            "    o.key();\n",                                               // 22
            "    if let Entry::Vacant(v) = e {\n",                          // 23
            "        v.key();\n",                                           // 24
            "    }\n",                                                      // 25
            "    Ok(())\n",                                                 // 26
            "}\n",                                                          // 27
        ),
    )]);
    let f = "src/lib.rs";
    assert_eq!(r.def(f, 12, "key"), ["src/lib.rs:2"]);
    assert_eq!(r.def(f, 13, "key"), ["src/lib.rs:4"]);
    assert_eq!(r.def(f, 22, "key"), ["src/lib.rs:4"]);
    assert_eq!(r.def(f, 24, "key"), ["src/lib.rs:2"]);
}

#[test]
fn rust_chains_on_a_test_helpers_value_take_its_return_type() {
    let r = repo(&[(
        "src/lib.rs",
        concat!(
            "pub struct Parser;\n",                                               // 1
            "impl Parser { pub fn parse(&self) {} }\n",                           // 2
            "pub struct ParserI<'s, P> { p: &'s P }\n",                           // 3
            "impl<'s, P> ParserI<'s, P> {\n",                                     // 4
            "    fn parser(&self) -> &Parser { self.p }\n",                       // 5
            "    fn parse(&self) {}\n",                                           // 6
            "}\n",                                                                // 7
            "#[cfg(test)]\n",                                                     // 8
            "mod tests {\n",                                                      // 9
            "    use super::*;\n",                                                // 10
            "    fn parser(pattern: &str) -> ParserI<'_, Parser> {\n",            // 11
            "        todo!()\n",                                                  // 12
            "    }\n",                                                            // 13
            "    #[test]\n",                                                      // 14
            "    fn t() {\n",                                                     // 15
            "        parser(\"x\").parse();\n",                                   // 16
            "        parser(r\"\\(\\)\\[\\]\").parse();\n",                       // 17
            "        assert_eq!(parser(\"(?P<~\").parse(), ());\n",               // 18
            "        assert!(Some(ParserI::new(&Parser).parser()).is_some());\n", // 19
            "    }\n",                                                            // 20
            "}\n",                                                                // 21
            "impl<'s> ParserI<'s, Parser> {\n",                                   // 22
            "    fn new(p: &'s Parser) -> Self { ParserI { p } }\n",              // 23
            "}\n",                                                                // 24
        ),
    )]);
    let f = "src/lib.rs";
    assert_eq!(r.def(f, 16, "parse"), ["src/lib.rs:6"]);
    assert_eq!(r.def(f, 17, "parse"), ["src/lib.rs:6"]);
    // Inside a macro's arguments (token trees), the receiver is the whole call before the dot.
    assert_eq!(r.def(f, 18, "parse"), ["src/lib.rs:6"]);
    assert_eq!(r.def(f, 19, "parser"), ["src/lib.rs:5"]);
}

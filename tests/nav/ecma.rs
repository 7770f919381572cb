//! TypeScript and JavaScript: named and aliased imports, `export *` and `export {x as y}`
//! chains, default exports, namespace imports, classes and interfaces.

use crate::nav::{index, places, resolved};
use crate::support::TestRepo;

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        (
            "src/core/client.ts",
            concat!(
                "export interface Transport { send(msg: string): void }\n", // 1
                "export class Client implements Transport {\n",             // 2
                "  send(msg: string): void { this.log(msg); }\n",           // 3
                "  log(msg: string) {}\n",                                  // 4
                "}\n",                                                      // 5
                "export function create(): Client { return new Client(); }\n", // 6
                "export default create;\n",                                 // 7
            ),
        ),
        (
            "src/core/index.ts",
            "export * from './client';\nexport { create as makeClient } from './client';\n",
        ),
        (
            "src/app.ts",
            concat!(
                "import { Client as C, makeClient } from './core';\n", // 1
                "import build from './core/client';\n",                // 2
                "import * as core from './core/index';\n",             // 3
                "export function run() {\n",                           // 4
                "  const c = new C();\n",                              // 5
                "  makeClient();\n",                                   // 6
                "  build();\n",                                        // 7
                "  core.create();\n",                                  // 8
                "  c.send('x');\n",                                    // 9
                "}\n",                                                 // 10
                "class Sub extends C {}\n",                            // 11
            ),
        ),
        (
            "web/util.js",
            "function stringCreate(s) { return create(s); }\nfunction create(s) { return s; }\nmodule.exports = { stringCreate };\n",
        ),
        (
            "web/main.js",
            "const { stringCreate } = require('./util');\nstringCreate('a');\n",
        ),
    ])
}

#[test]
fn aliases_export_star_and_renamed_reexports_resolve() {
    let repo = repo();
    let idx = index(&repo);
    assert_eq!(
        resolved(&idx.definition("C", Some(("src/app.ts", 5))).unwrap()),
        vec!["src/core/client.ts:2"]
    );
    assert_eq!(
        resolved(
            &idx.definition("makeClient", Some(("src/app.ts", 6)))
                .unwrap()
        ),
        vec!["src/core/client.ts:6"]
    );
    assert_eq!(
        resolved(&idx.definition("build", Some(("src/app.ts", 7))).unwrap()),
        vec!["src/core/client.ts:6"]
    );
    assert_eq!(
        resolved(&idx.definition("create", Some(("src/app.ts", 8))).unwrap()),
        vec!["src/core/client.ts:6"]
    );
}

#[test]
fn references_and_callers_follow_the_chains() {
    let repo = repo();
    let idx = index(&repo);
    let callers = resolved(&idx.callers("create").unwrap());
    // `create` in web/util.js is a different function: only the TS call sites count.
    assert!(
        callers.contains(&"src/app.ts:6".into())
            && callers.contains(&"src/app.ts:7".into())
            && callers.contains(&"src/app.ts:8".into()),
        "{callers:?}"
    );
    let log = resolved(&idx.callers("Client.log").unwrap());
    assert_eq!(log, vec!["src/core/client.ts:3"]);
    let js = resolved(&idx.callers("stringCreate").unwrap());
    assert_eq!(js, vec!["web/main.js:2"]);
    let chain = idx.callees("stringCreate").unwrap();
    assert_eq!(
        resolved(&chain),
        vec!["web/util.js:2"],
        "string → stringCreate → create"
    );
}

#[test]
fn implementations_cover_implements_and_extends() {
    let repo = repo();
    let idx = index(&repo);
    // The class extending the implementing class implements it too, as the language service
    // answers.
    let impls = places(&idx.implementations("Transport").unwrap());
    assert_eq!(impls, vec!["src/app.ts:11", "src/core/client.ts:2"]);
    let subs = resolved(&idx.implementations("Client").unwrap());
    assert_eq!(subs, vec!["src/app.ts:11"]);
    let importers: Vec<String> = idx
        .importers_of("src/core/client.ts")
        .unwrap()
        .iter()
        .map(|e| e.path.clone())
        .collect();
    assert!(
        importers.contains(&"src/core/index.ts".into()) && importers.contains(&"src/app.ts".into()),
        "{importers:?}"
    );
}

#[test]
fn tsx_and_jsx_components_are_indexed() {
    let repo = TestRepo::with_files(&[
        (
            "ui/Button.tsx",
            "export interface Props { label: string }\nexport function Button(p: Props) { return <button>{p.label}</button>; }\n",
        ),
        (
            "ui/App.tsx",
            "import { Button } from './Button';\nexport const App = () => <Button label=\"x\" />;\n",
        ),
        (
            "web/Old.jsx",
            "import { Button } from '../ui/Button';\nexport function Old() { return <Button label=\"y\" />; }\n",
        ),
    ]);
    let idx = index(&repo);
    let refs = resolved(&idx.references("Button").unwrap());
    assert!(refs.contains(&"ui/App.tsx:2".to_string()), "{refs:?}");
    assert!(refs.contains(&"web/Old.jsx:2".to_string()), "{refs:?}");
    let outline = idx.outline("ui/Button.tsx").unwrap();
    assert!(
        outline
            .iter()
            .any(|i| i.name == "Props" && i.kind == "interface"),
        "{outline:?}"
    );
}

#[test]
fn generic_parameters_resolve_to_their_declaration() {
    let repo = TestRepo::with_files(&[(
        "src/gen.ts",
        concat!(
            "export class T {}\n",                                                     // 1
            "export function id<T>(x: T): T {\n",                                      // 2
            "  const y: T = x;\n",                                                     // 3
            "  return y;\n",                                                           // 4
            "}\n",                                                                     // 5
            "export class Box<T> {\n",                                                 // 6
            "  constructor(public v: T) {}\n",                                         // 7
            "  map<U>(f: (v: T) => U): Box<U> { return new Box(f(this.v)); }\n",       // 8
            "}\n",                                                                     // 9
            "export interface Source<T> {\n",                                          // 10
            "  next(): T;\n",                                                          // 11
            "}\n",                                                                     // 12
            "export function plain(t: T): T { return t; }\n",                          // 13
            "export type Elem<A> = A extends Array<infer E extends T> ? E : never;\n", // 14
            "export type Keys<O> = { [K in keyof O]: O[K] };\n",                       // 15
        ),
    )]);
    let idx = index(&repo);
    let def =
        |name: &str, line| resolved(&idx.definition(name, Some(("src/gen.ts", line))).unwrap());
    assert_eq!(def("T", 2), vec!["src/gen.ts:2"]);
    assert_eq!(def("T", 3), vec!["src/gen.ts:2"]);
    assert_eq!(def("T", 7), vec!["src/gen.ts:6"]);
    assert_eq!(def("T", 8), vec!["src/gen.ts:6"]);
    assert_eq!(def("U", 8), vec!["src/gen.ts:8"]);
    assert_eq!(def("T", 11), vec!["src/gen.ts:10"]);
    // Outside generic declarations `T` is the class (also as an `infer` constraint).
    assert_eq!(def("T", 13), vec!["src/gen.ts:1"]);
    assert_eq!(def("T", 14), vec!["src/gen.ts:1"]);
    // `infer E` and mapped `[K in …]` declare parameters as well.
    assert_eq!(def("E", 14), vec!["src/gen.ts:14"]);
    assert_eq!(def("K", 15), vec!["src/gen.ts:15"]);
    assert_eq!(
        places(&idx.definition("T", None).unwrap()),
        vec!["src/gen.ts:1"]
    );
    let mut refs = places(&idx.references("T").unwrap());
    refs.dedup();
    assert_eq!(refs, vec!["src/gen.ts:13", "src/gen.ts:14"]);
}

#[test]
fn infer_inside_an_object_type_and_enum_members_are_definitions() {
    let repo = TestRepo::with_files(&[(
        "src/meta.ts",
        concat!(
            "export type Meta<C> = C extends {\n", // 1
            "  meta: infer M\n",                   // 2
            "}\n",                                 // 3
            "  ? M\n",                             // 4
            "  : unknown\n",                       // 5
            "export enum Mode {\n",                // 6
            "  NONE,\n",                           // 7
            "  LOG = 2,\n",                        // 8
            "}\n",                                 // 9
            "export const m = Mode.LOG;\n",        // 10
        ),
    )]);
    let idx = index(&repo);
    let def =
        |name: &str, line| resolved(&idx.definition(name, Some(("src/meta.ts", line))).unwrap());
    // `M` is bound by `infer` in the property `meta` and used outside it.
    assert_eq!(def("M", 4), vec!["src/meta.ts:2"]);
    assert_eq!(def("NONE", 7), vec!["src/meta.ts:7"]);
    assert_eq!(def("LOG", 10), vec!["src/meta.ts:8"]);
}

#[test]
fn generic_parameters_of_sibling_call_signatures_are_each_their_own() {
    let repo = TestRepo::with_files(&[(
        "src/make.ts",
        concat!(
            "export interface Maker {\n",      // 1
            "  <S>(seed: S): S;\n",            // 2
            "  <\n",                           // 3
            "    S,\n",                        // 4
            "    K extends string,\n",         // 5
            "  >(seed: S, key: K): [S, K];\n", // 6
            "}\n",                             // 7
        ),
    )]);
    let idx = index(&repo);
    let def =
        |name: &str, line| resolved(&idx.definition(name, Some(("src/make.ts", line))).unwrap());
    assert_eq!(def("S", 2), vec!["src/make.ts:2"]);
    assert_eq!(def("S", 6), vec!["src/make.ts:4"]);
    assert_eq!(def("K", 6), vec!["src/make.ts:5"]);
}

#[test]
fn import_and_export_aliases_resolve_to_the_original() {
    let repo = TestRepo::with_files(&[
        (
            "src/lib.ts",
            concat!(
                "function make(): number { return 1; }\n",   // 1
                "export { make as build };\n",               // 2
                "export function parse(s: string): void;\n", // 3
                "export function parse(n: number): void;\n", // 4
                "export function parse(x: unknown) {}\n",    // 5
            ),
        ),
        (
            "src/use.ts",
            concat!(
                "import { build as b, parse as p } from './lib';\n", // 1
                "import { build } from './lib';\n",                  // 2
                "export const n = b() + build();\n",                 // 3
                "p('x');\n",                                         // 4
            ),
        ),
    ]);
    let idx = index(&repo);
    for name in ["b", "build"] {
        assert_eq!(
            resolved(&idx.definition(name, Some(("src/use.ts", 3))).unwrap()),
            vec!["src/lib.ts:1"],
            "{name}"
        );
    }
    // An overloaded function through an alias: every declaration, and the first one first.
    let p = idx.definition("p", Some(("src/use.ts", 4))).unwrap();
    assert_eq!(
        resolved(&p),
        vec!["src/lib.ts:3", "src/lib.ts:4", "src/lib.ts:5"]
    );
    assert_eq!(p[0].line, 3);
    // References to one overload are references to all, its sibling declarations included.
    let id = idx.def_at("src/lib.ts", 3).unwrap();
    let mut refs = resolved(&idx.references_of(id));
    refs.dedup();
    assert_eq!(
        refs,
        vec![
            "src/lib.ts:3",
            "src/lib.ts:4",
            "src/lib.ts:5",
            "src/use.ts:1",
            "src/use.ts:4"
        ]
    );
    let mut callers = resolved(&idx.callers("make").unwrap());
    callers.dedup();
    assert_eq!(callers, vec!["src/use.ts:3"]);
}

#[test]
fn jsdoc_links_are_references() {
    let repo = TestRepo::with_files(&[
        (
            "src/ops.ts",
            "export function mergeMap() {}\nexport function concatMap() {}\n",
        ),
        (
            "src/use.ts",
            concat!(
                "import { mergeMap } from './ops';\n", // 1
                "/**\n",                               // 2
                " * Like {@link mergeMap}, not {@link https://example.com}.\n", // 3
                " * @see mergeMap\n",                  // 4
                " */\n",                               // 5
                "export const run = () => mergeMap();\n", // 6
                "// {@link concatMap} is unrelated here\n", // 7
            ),
        ),
        (
            "web/util.js",
            "/** Calls {@link helper}. */\nfunction run() { helper(); }\nfunction helper() {}\n",
        ),
    ]);
    let idx = index(&repo);
    let refs = idx.references("mergeMap").unwrap();
    let mut lines = resolved(&refs);
    lines.dedup();
    assert_eq!(
        lines,
        vec![
            "src/use.ts:1",
            "src/use.ts:3",
            "src/use.ts:4",
            "src/use.ts:6"
        ]
    );
    let doc = refs.iter().find(|l| l.line == 3).unwrap();
    assert_eq!((doc.kind.as_str(), doc.col), ("doc", 16));
    // Doc links are not calls.
    assert_eq!(
        resolved(&idx.callers("mergeMap").unwrap()),
        vec!["src/use.ts:6"]
    );
    // JavaScript too.
    assert_eq!(
        resolved(&idx.references("helper").unwrap()),
        vec!["web/util.js:1", "web/util.js:2"]
    );
    // A link to a name the file does not bind is prose, not a reference.
    let concat = places(&idx.references("concatMap").unwrap());
    assert!(concat.is_empty(), "{concat:?}");
}

#[test]
fn a_name_imported_from_a_package_is_defined_by_its_import() {
    let repo = TestRepo::with_files(&[(
        "src/slice.ts",
        "import type { Action } from 'redux';\n\nexport function reduce(a: Action): Action {\n  return a;\n}\n",
    )]);
    let idx = crate::nav::index(&repo);
    let defs = idx.definition("Action", Some(("src/slice.ts", 3))).unwrap();
    assert_eq!(defs.len(), 1, "{defs:?}");
    assert_eq!(
        (defs[0].path.as_str(), defs[0].line, defs[0].kind.as_str()),
        ("src/slice.ts", 1, "import")
    );
    assert!(defs[0].signature.contains("redux"), "{defs:?}");
}

#[test]
fn a_name_in_a_multi_line_import_is_referenced_on_its_own_line() {
    let repo = TestRepo::with_files(&[
        (
            "src/draft.ts",
            "export function isDraft(x: unknown): boolean {\n  return !!x;\n}\nexport function freeze(x: unknown) {\n  return x;\n}\n",
        ),
        (
            "src/main.ts",
            "import {\n  freeze,\n  isDraft,\n} from \"./draft\";\n\nexport const ok = isDraft(freeze(1));\n",
        ),
        ("pkg/flags.py", "def enabled():\n    return True\n"),
        (
            "pkg/use.py",
            "from .flags import (\n    enabled,\n)\n\nON = enabled()\n",
        ),
    ]);
    let idx = index(&repo);
    let refs = idx.references("isDraft").unwrap();
    assert_eq!(
        places(&refs),
        vec!["src/main.ts:3", "src/main.ts:6"],
        "{refs:?}"
    );
    let refs = idx.references("enabled").unwrap();
    assert_eq!(
        places(&refs),
        vec!["pkg/use.py:2", "pkg/use.py:5"],
        "{refs:?}"
    );
}

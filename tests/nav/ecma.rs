//! TypeScript and JavaScript: named and aliased imports, `export *` and `export {x as y}`
//! chains, default exports, namespace imports, classes and interfaces.

use crate::support::TestRepo;
use crate::{index, places, resolved};

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
    let impls = places(&idx.implementations("Transport").unwrap());
    assert_eq!(impls, vec!["src/core/client.ts:2"]);
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

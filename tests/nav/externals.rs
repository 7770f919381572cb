//! Uses that belong to code outside the repository or to another kind of name are not
//! references to a namesake here: a member of an imported outside module (`re.compile`,
//! `os.close`), a builtin called by a bare name where the repository only has a method of that
//! name, a method a class inherits from an outside base (`self.get` on a `MutableMapping`,
//! `super().get`), and a value of an inline constructor call is typed like a variable's.

use crate::nav::{at, def_at, index, line_of, places, resolved};

const SHAPES: &str = "src/shapes/core.py";
const PATTERNS: &str = "src/shapes/patterns.py";

fn repo() -> crate::support::TestRepo {
    crate::support::TestRepo::with_files(&[
        (
            "src/shapes/__init__.py",
            "from .core import Greeter, Store\n",
        ),
        (
            SHAPES,
            concat!(
                "import os\n",
                "from collections.abc import MutableMapping\n",
                "\n",
                "\n",
                "class Greeter:\n",
                "    def greet(self, who):\n",
                "        return f\"hi {who}\"\n",
                "\n",
                "    def compile(self):\n",
                "        return compile(\"1\", \"<x>\", \"eval\")\n",
                "\n",
                "    def close(self, fd):\n",
                "        os.close(fd)\n",
                "\n",
                "    def keys(self):\n",
                "        return []\n",
                "\n",
                "\n",
                "class Store(MutableMapping):\n",
                "    def get(self, key, default=None):\n",
                "        return super().get(key, default)\n",
                "\n",
                "    def size(self):\n",
                "        return len(self)\n",
                "\n",
                "    def peek(self, key):\n",
                "        return self.get(key)\n",
                "\n",
                "\n",
                "class Cache(Store):\n",
                "    def first(self):\n",
                "        return self.keys()\n",
            ),
        ),
        (
            PATTERNS,
            concat!(
                "import re\n",
                "\n",
                "from .core import Greeter\n",
                "\n",
                "WORD = re.compile(r\"\\w+\")\n",
                "\n",
                "\n",
                "def hello():\n",
                "    return Greeter().greet(\"you\")\n",
                "\n",
                "\n",
                "def build():\n",
                "    return Greeter().compile()\n",
            ),
        ),
        (
            "tests/test_store.py",
            concat!(
                "from shapes import Store\n",
                "\n",
                "\n",
                "def test_get():\n",
                "    assert Store().get(\"k\") is None\n",
                "    assert Store().keys() is not None\n",
            ),
        ),
    ])
}

#[test]
fn an_inline_constructor_call_types_its_receiver() {
    let repo = repo();
    let idx = index(&repo);
    // `Greeter().greet("you")`: the method of the class called, resolved.
    assert_eq!(
        def_at(&idx, &at(&repo, PATTERNS, "Greeter().greet(", "greet")),
        line_of(&repo, SHAPES, "def greet(self")
    );
    assert_eq!(
        def_at(
            &idx,
            &at(&repo, "tests/test_store.py", "Store().get(", "get")
        ),
        line_of(&repo, SHAPES, "def get(self")
    );
    // References to `Greeter.greet` count the inline call as resolved.
    let greet = at(&repo, SHAPES, "def greet(", "greet");
    let refs = idx.references_at(None, Some(&greet)).unwrap();
    assert_eq!(
        resolved(&refs),
        vec![line_of(&repo, PATTERNS, "Greeter().greet(")]
    );
}

#[test]
fn members_of_outside_modules_and_builtins_are_not_namesakes_here() {
    let repo = repo();
    let idx = index(&repo);
    // `Greeter.compile`: used once through `Greeter()`; neither `re.compile` nor the builtin
    // `compile(…)` in its own body is a reference to it, not even a candidate.
    let compile = at(&repo, SHAPES, "def compile(", "compile");
    let refs = idx.references_at(None, Some(&compile)).unwrap();
    assert_eq!(
        places(&refs),
        vec![line_of(&repo, PATTERNS, "Greeter().compile()")],
        "{refs:?}"
    );
    // `os.close(fd)` is not `Greeter.close`.
    let close = at(&repo, SHAPES, "def close(", "close");
    let refs = idx.references_at(None, Some(&close)).unwrap();
    assert!(refs.is_empty(), "{refs:?}");
}

#[test]
fn methods_inherited_from_an_outside_base_are_not_the_class_own() {
    let repo = repo();
    let idx = index(&repo);
    // `super().get(…)` inside `Store.get` and `self.get` … are `MutableMapping`'s and
    // `Store.get`'s: `super()` never names the method it is called from.
    let get = at(&repo, SHAPES, "def get(", "get");
    let refs = idx.references_at(None, Some(&get)).unwrap();
    let all = places(&refs);
    assert!(
        !all.contains(&line_of(&repo, SHAPES, "return super().get(")),
        "{all:?}"
    );
    assert!(
        resolved(&refs).contains(&line_of(&repo, SHAPES, "return self.get(key)")),
        "{refs:?}"
    );
    // `self.keys()` in a subclass of a class with an outside base, and `Store().keys()`: the
    // mapping's, not a candidate for `Greeter.keys`.
    let keys = at(&repo, SHAPES, "def keys(", "keys");
    let refs = idx.references_at(None, Some(&keys)).unwrap();
    assert!(refs.is_empty(), "{refs:?}");
    let p = at(&repo, SHAPES, "return self.keys()", "keys");
    let locs = idx.definition_at(None, Some(&p)).unwrap_or_default();
    assert!(locs.iter().all(|l| l.kind == "import"), "{locs:?}");
}

#[test]
fn typescript_inline_constructors_and_outside_modules() {
    let repo = crate::support::TestRepo::with_files(&[
        (
            "src/greeter.ts",
            concat!(
                "export class Greeter {\n",
                "  greet(who: string): string {\n",
                "    return `hi ${who}`;\n",
                "  }\n",
                "  join(parts: string[]): string {\n",
                "    return `${parts.length}`;\n",
                "  }\n",
                "}\n",
            ),
        ),
        (
            "src/main.ts",
            concat!(
                "import * as path from \"path\";\n",
                "import { Greeter } from \"./greeter\";\n",
                "\n",
                "export function main(): string {\n",
                "  const where = path.join(\"a\", \"b\");\n",
                "  return new Greeter().greet(where);\n",
                "}\n",
            ),
        ),
    ]);
    let idx = index(&repo);
    assert_eq!(
        def_at(
            &idx,
            &at(&repo, "src/main.ts", "new Greeter().greet(", "greet")
        ),
        "src/greeter.ts:2"
    );
    let join = at(&repo, "src/greeter.ts", "join(parts", "join");
    let refs = idx.references_at(None, Some(&join)).unwrap();
    assert!(refs.is_empty(), "{refs:?}");
}

#[test]
fn a_receiver_annotated_with_an_outside_type_is_not_a_namesake_here() {
    let repo = crate::support::TestRepo::with_files(&[
        (
            "pkg/paths.py",
            concat!(
                "import typing as t\n",
                "from decimal import Decimal\n",
                "\n",
                "\n",
                "class Path:\n",
                "    def split(self):\n",
                "        return []\n",
                "\n",
                "    def quantize(self):\n",
                "        return self\n",
                "\n",
                "\n",
                "def parts(text: str, amount: Decimal, p: Path, x: t.Any):\n",
                "    \"\"\"Splits.\"\"\"\n",
                "    amount.quantize()\n",
                "    p.split()\n",
                "    x.split()\n",
                "    return text.split(\"/\")\n",
            ),
        ),
        ("pkg/__init__.py", ""),
        (
            "pkg/more.py",
            concat!(
                "import typing as t\n",
                "\n",
                "from . import paths\n",
                "\n",
                "\n",
                "def walk(paths: t.Iterable[paths.Path]) -> int:\n",
                "    return len(paths)\n",
            ),
        ),
        (
            "src/names.ts",
            concat!(
                "export class Words {\n",
                "  split(): string[] {\n",
                "    return [];\n",
                "  }\n",
                "}\n",
                "export function cut(text: string, many: string[], w: Words): number {\n",
                "  text.split(\",\");\n",
                "  many.map((m) => m);\n",
                "  return w.split().length;\n",
                "}\n",
            ),
        ),
    ]);
    let idx = index(&repo);
    // `text: str` and `amount: Decimal` (imported from outside) are not `Path`'s; `p: Path`
    // is, resolved; `x: t.Any` stays a candidate.
    let split = at(&repo, "pkg/paths.py", "def split(", "split");
    let refs = idx.references_at(None, Some(&split)).unwrap();
    assert_eq!(resolved(&refs), vec!["pkg/paths.py:16"], "{refs:?}");
    assert_eq!(
        places(&refs),
        vec!["pkg/paths.py:16", "pkg/paths.py:17"],
        "{refs:?}"
    );
    let quantize = at(&repo, "pkg/paths.py", "def quantize(", "quantize");
    assert!(idx.references_at(None, Some(&quantize)).unwrap().is_empty());
    // A parameter named like a module keeps the module's meaning in its own annotation.
    let p = at(&repo, "pkg/more.py", "paths.Path", "Path");
    assert_eq!(
        def_at(&idx, &p),
        line_of(&repo, "pkg/paths.py", "class Path")
    );
    let split = at(&repo, "src/names.ts", "  split()", "split");
    let refs = idx.references_at(None, Some(&split)).unwrap();
    assert_eq!(places(&refs), vec!["src/names.ts:9"], "{refs:?}");
}

#[test]
fn a_name_of_an_outside_module_is_answered_by_its_uses_here() {
    let repo = repo();
    let idx = index(&repo);
    // `re.compile`: the use through `import re`, not the builtin nor `Greeter.compile`.
    let refs = idx.references("re.compile").unwrap();
    assert_eq!(
        places(&refs),
        vec![line_of(&repo, PATTERNS, "WORD = re.compile(")],
        "{refs:?}"
    );
    assert!(
        refs.iter()
            .all(|r| r.signature == "from re, outside the repository")
    );
    assert_eq!(
        places(&idx.callers("os.close").unwrap()),
        vec![line_of(&repo, SHAPES, "os.close(fd)")]
    );
    // A name imported from an outside module: its import and its uses.
    let refs = idx.references("collections.abc.MutableMapping").unwrap();
    assert_eq!(
        places(&refs),
        vec![
            line_of(&repo, SHAPES, "class Store(MutableMapping)"),
            line_of(&repo, SHAPES, "from collections.abc import MutableMapping"),
        ],
        "{refs:?}"
    );
    // A module nothing here uses, and a bare name of nothing here, are still unknown.
    for unknown in ["json.dumps", "dumps"] {
        let err = idx.references(unknown).unwrap_err().to_string();
        assert!(err.contains("no symbol named"), "{err}");
    }
}

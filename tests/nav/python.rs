//! Python: aliases, relative imports, `__init__` re-exports, shadowing, methods by class.

use crate::nav::{index, places, resolved};
use crate::support::TestRepo;

fn repo() -> TestRepo {
    TestRepo::with_files(&[
        (
            "pkg/__init__.py",
            "from .config import Config as Config\nfrom . import util\n",
        ),
        (
            "pkg/config.py",
            "class Config:\n    def load(self):\n        return self.parse()\n\n    def parse(self):\n        return 1\n",
        ),
        ("pkg/util.py", "def helper():\n    return 2\n"),
        (
            "app.py",
            concat!(
                "from pkg import Config as Cfg, util\n", // 1
                "import pkg.config as pc\n",             // 2
                "\n",                                    // 3
                "def main():\n",                         // 4
                "    c = Cfg()\n",                       // 5
                "    c.load()\n",                        // 6
                "    util.helper()\n",                   // 7
                "    return pc.Config\n",                // 8
                "\n",                                    // 9
                "def shadow():\n",                       // 10
                "    class Config(Cfg):\n",              // 11
                "        pass\n",                        // 12
                "    return Config()\n",                 // 13
                "\n",                                    // 14
                "def param(Cfg):\n",                     // 15
                "    return Cfg()\n",                    // 16
            ),
        ),
    ])
}

#[test]
fn alias_through_init_reexport_resolves_to_the_class() {
    let repo = repo();
    let idx = index(&repo);
    let defs = idx.definition("Cfg", Some(("app.py", 5))).unwrap();
    assert_eq!(resolved(&defs), vec!["pkg/config.py:1"]);
}

#[test]
fn module_alias_and_submodule_import_resolve() {
    let repo = repo();
    let idx = index(&repo);
    assert_eq!(
        resolved(&idx.definition("helper", Some(("app.py", 7))).unwrap()),
        vec!["pkg/util.py:1"]
    );
    assert_eq!(
        resolved(&idx.definition("Config", Some(("app.py", 8))).unwrap()),
        vec!["pkg/config.py:1"]
    );
}

#[test]
fn local_class_shadows_the_imported_one_and_parameters_shadow_globals() {
    let repo = repo();
    let idx = index(&repo);
    // `Config()` on line 13 is the local subclass, not pkg.config.Config.
    assert_eq!(
        resolved(&idx.definition("Config", Some(("app.py", 13))).unwrap()),
        vec!["app.py:11"]
    );
    // The base `Cfg` on line 11 is still the imported class; the local class is not a target
    // of an unqualified lookup.
    let refs = resolved(&idx.references("Config").unwrap());
    assert!(refs.contains(&"app.py:11".to_string()), "{refs:?}");
    assert!(refs.contains(&"app.py:5".to_string()), "{refs:?}");
    // `Cfg()` on line 16 is the parameter: no reference to the class there.
    assert!(!refs.contains(&"app.py:16".to_string()), "{refs:?}");
    assert!(!refs.contains(&"app.py:13".to_string()), "{refs:?}");
}

#[test]
fn self_method_calls_resolve_by_class_and_callers_callees_follow() {
    let repo = repo();
    let idx = index(&repo);
    let callers = idx.callers("Config.parse").unwrap();
    assert_eq!(resolved(&callers), vec!["pkg/config.py:3"]);
    assert_eq!(callers[0].container.as_deref(), Some("Config.load"));
    let callees = idx.callees("main").unwrap();
    let names: Vec<&str> = callees.iter().map(|l| l.name.as_str()).collect();
    assert!(
        names.contains(&"helper") && names.contains(&"Config"),
        "{names:?}"
    );
    // `c = Cfg()` types `c`: `c.load()` is Config's.
    assert!(
        callees
            .iter()
            .any(|l| l.name == "load" && l.resolution == git_orchestra::nav::Resolution::Resolved),
        "{callees:?}"
    );
}

#[test]
fn imports_importers_outline_and_impls() {
    let repo = repo();
    let idx = index(&repo);
    let imports = idx.imports_of("app.py").unwrap();
    let targets: Vec<Option<&str>> = imports.iter().map(|e| e.target.as_deref()).collect();
    assert!(targets.contains(&Some("pkg/config.py")), "{imports:?}");
    assert!(targets.contains(&Some("pkg/util.py")), "{imports:?}");
    let importers = idx.importers_of("pkg/config.py").unwrap();
    let from: Vec<&str> = importers.iter().map(|e| e.path.as_str()).collect();
    assert!(
        from.contains(&"app.py") && from.contains(&"pkg/__init__.py"),
        "{from:?}"
    );
    let outline = idx.outline("pkg/config.py").unwrap();
    let items: Vec<(String, String, u32)> = outline
        .iter()
        .map(|i| (i.kind.clone(), i.name.clone(), i.depth))
        .collect();
    assert_eq!(
        items,
        vec![
            ("class".into(), "Config".into(), 0),
            ("method".into(), "load".into(), 1),
            ("method".into(), "parse".into(), 1)
        ]
    );
    let impls = idx.implementations("Config").unwrap();
    assert!(
        places(&impls).contains(&"app.py:11".to_string()),
        "{impls:?}"
    );
}

#[test]
fn imports_are_labelled_re_exports_only_where_a_package_re_exports() {
    let repo = repo();
    let idx = index(&repo);
    let label = |path: &str| {
        git_orchestra::nav::render_imports("imports", &idx.imports_of(path).unwrap(), 8_000, false)
            .text
    };
    let app = label("app.py");
    assert!(!app.contains("re-export"), "{app}");
    let init = label("pkg/__init__.py");
    assert!(
        init.contains("pkg/__init__.py:1 Config from .config (re-export) -> pkg/config.py"),
        "{init}"
    );
    let repo = TestRepo::with_files(&[(
        "tool.py",
        "import sys\n\ndef main():\n    return sys.argv\n",
    )]);
    let idx = index(&repo);
    let text = git_orchestra::nav::render_imports(
        "imports of tool.py",
        &idx.imports_of("tool.py").unwrap(),
        8_000,
        false,
    )
    .text;
    assert_eq!(
        text,
        "imports of tool.py: 1 result\ntool.py:1 sys -> (external)\n"
    );
}

/// A package in the shapes of itsdangerous and werkzeug: a generic base class, overloads, an
/// import line naming what the file later defines again.
fn generic_repo() -> TestRepo {
    TestRepo::with_files(&[
        ("pkg/__init__.py", ""),
        (
            "pkg/base.py",
            concat!(
                "import typing as t\n",                   // 1
                "T = t.TypeVar(\"T\")\n",                 // 2
                "class Serializer(t.Generic[T]):\n",      // 3
                "    def load_payload(self, payload):\n", // 4
                "        return payload\n",               // 5
            ),
        ),
        ("pkg/_funcs.py", "def asdict(inst):\n    return {}\n"),
        (
            "pkg/url_safe.py",
            concat!(
                "from .base import Serializer\n",                 // 1
                "from ._funcs import asdict as _asdict\n",        // 2
                "class URLSafe(Serializer[str]):\n",              // 3
                "    def load_payload(self, payload):\n",         // 4
                "        return super().load_payload(payload)\n", // 5
                "def asdict(inst):\n",                            // 6
                "    return _asdict(inst)\n",                     // 7
            ),
        ),
        (
            "pkg/_internal.py",
            concat!(
                "import typing as t\n",                    // 1
                "@t.overload\n",                           // 2
                "def _dt_as_utc(dt: None) -> None: ...\n", // 3
                "@t.overload\n",                           // 4
                "def _dt_as_utc(dt: int) -> int: ...\n",   // 5
                "def _dt_as_utc(dt):\n",                   // 6
                "    return dt\n",                         // 7
            ),
        ),
        (
            "pkg/http.py",
            "from ._internal import _dt_as_utc\n\ndef f(x):\n    return _dt_as_utc(x)\n",
        ),
    ])
}

#[test]
fn generic_bases_overloads_and_import_lines_resolve_as_python_binds_them() {
    let repo = generic_repo();
    let idx = index(&repo);
    // `class URLSafe(Serializer[str])`: `super()` reaches the generic base.
    let defs = idx
        .definition("load_payload", Some(("pkg/url_safe.py", 5)))
        .unwrap();
    assert_eq!(resolved(&defs), vec!["pkg/base.py:4"]);
    // The name is bound to the last definition: the implementation after the overloads.
    let defs = idx
        .definition("_dt_as_utc", Some(("pkg/http.py", 4)))
        .unwrap();
    assert_eq!(places(&defs), vec!["pkg/_internal.py:6"]);
    // On the import line, `asdict` is the imported function, not the file's own `asdict`.
    let defs = idx
        .definition("asdict", Some(("pkg/url_safe.py", 2)))
        .unwrap();
    assert_eq!(resolved(&defs), vec!["pkg/_funcs.py:1"]);
}

#[test]
fn references_of_an_overload_are_those_of_the_whole_group() {
    let repo = generic_repo();
    let idx = index(&repo);
    // Asked at the first `@overload` signature, the call binds to the implementation: one
    // symbol.
    let id = idx.def_at("pkg/_internal.py", 3).unwrap();
    let refs = places(&idx.references_of(id));
    assert!(refs.contains(&"pkg/http.py:4".to_string()), "{refs:?}");
    assert!(refs.contains(&"pkg/_internal.py:6".to_string()), "{refs:?}");
}

#[test]
fn names_of_a_class_body_bind_uses_in_that_body_not_in_its_methods() {
    let repo = TestRepo::with_files(&[(
        "pkg/vals.py",
        concat!(
            "def fail(*args):\n",
            "    raise ValueError(args)\n",
            "\n",
            "\n",
            "class Missing:\n",
            "    def fail(self, *args):\n",
            "        raise TypeError(args)\n",
            "\n",
            "    __add__ = __radd__ = fail\n",
            "    __sub__ = fail\n",
            "\n",
            "    def other(self):\n",
            "        return fail()\n",
            "\n",
            "    @property\n",
            "    def size(self):\n",
            "        return 0\n",
            "\n",
            "    @size.setter\n",
            "    def size(self, value):\n",
            "        pass\n",
        ),
    )]);
    let idx = index(&repo);
    // References to the method: the two aliases in the class body, resolved.
    let method = crate::nav::at(&repo, "pkg/vals.py", "    def fail(self", "fail");
    let refs = idx.references_at(None, Some(&method)).unwrap();
    assert_eq!(
        resolved(&refs),
        vec!["pkg/vals.py:10", "pkg/vals.py:9"],
        "{refs:?}"
    );
    // Inside a method the bare name is the module's function.
    let p = crate::nav::at(&repo, "pkg/vals.py", "return fail()", "fail");
    assert_eq!(crate::nav::def_at(&idx, &p), "pkg/vals.py:1");
    // The class body runs in order: `@size.setter` reads the getter bound above it.
    let p = crate::nav::at(&repo, "pkg/vals.py", "@size.setter", "size");
    assert_eq!(crate::nav::def_at(&idx, &p), "pkg/vals.py:16");
}

/// Returns the imports of `path` as (module as written, file it reaches or "").
fn import_edges(idx: &git_orchestra::nav::Index, path: &str) -> Vec<(String, String)> {
    idx.imports_of(path)
        .unwrap()
        .into_iter()
        .map(|e| (e.module, e.target.unwrap_or_default()))
        .collect()
}

/// An absolute import names a top-level module: `import typing` inside a package holding a
/// `typing.py` is the standard library's, as Python 3 resolves it; a package's own module is
/// reached by its full name or relatively. `from __future__ import …` is an import too, and
/// never a re-export.
#[test]
fn absolute_imports_do_not_resolve_to_a_packages_own_namesake_module() {
    let repo = TestRepo::with_files(&[
        (
            "src/pkg/__init__.py",
            "from __future__ import annotations\nfrom .app import App\n",
        ),
        (
            "src/pkg/typing.py",
            "import typing\nHook = typing.Callable\n",
        ),
        (
            "src/pkg/app.py",
            "import typing\nimport json\nfrom . import typing as ft\nfrom pkg.typing import Hook\n\nclass App:\n    pass\n",
        ),
        ("src/pkg/json/__init__.py", "X = 1\n"),
        ("tests/helpers.py", "def helper():\n    pass\n"),
        ("tests/test_app.py", "import helpers\nfrom pkg import App\n"),
    ]);
    let idx = index(&repo);
    let edges = |path: &str| import_edges(&idx, path);
    assert_eq!(
        edges("src/pkg/app.py"),
        vec![
            ("typing".into(), String::new()),
            ("json".into(), String::new()),
            (".".into(), "src/pkg/typing.py".into()),
            ("pkg.typing".into(), "src/pkg/typing.py".into()),
        ]
    );
    assert_eq!(
        edges("src/pkg/typing.py"),
        vec![("typing".into(), String::new())]
    );
    // A test's directory is on the search path: its neighbours import by their own names.
    assert_eq!(
        edges("tests/test_app.py"),
        vec![
            ("helpers".into(), "tests/helpers.py".into()),
            ("pkg".into(), "src/pkg/__init__.py".into()),
        ]
    );
    let init = idx.imports_of("src/pkg/__init__.py").unwrap();
    assert_eq!(init[0].module, "__future__");
    assert!(init[0].target.is_none() && !init[0].reexport, "{init:?}");
    assert!(init[1].reexport, "{init:?}");
}

/// A class named like the outside base it extends under an alias is not its own subclass.
#[test]
fn a_class_is_never_its_own_implementation() {
    let repo = TestRepo::with_files(&[(
        "app/templating.py",
        "from jinja2 import Environment as BaseEnvironment\n\n\nclass Environment(BaseEnvironment):\n    pass\n\n\nclass Sandboxed(Environment):\n    pass\n",
    )]);
    let idx = index(&repo);
    assert_eq!(
        places(&idx.implementations("Environment").unwrap()),
        vec!["app/templating.py:8"]
    );
}

/// `import os, sys, helpers` imports every module it names, and binds each.
#[test]
fn an_import_of_several_modules_imports_each() {
    let repo = TestRepo::with_files(&[
        ("helpers.py", "def helper():\n    pass\n"),
        ("tool.py", "import os, sys, helpers\n\nhelpers.helper()\n"),
    ]);
    let idx = index(&repo);
    let edges = import_edges(&idx, "tool.py");
    assert_eq!(
        edges,
        vec![
            ("os".into(), String::new()),
            ("sys".into(), String::new()),
            ("helpers".into(), "helpers.py".into()),
        ]
    );
    assert_eq!(
        resolved(&idx.references("helper").unwrap()),
        vec!["tool.py:3"]
    );
}

/// `from . import sub` imports the submodule even where the file binds `sub` otherwise too
/// (`import _frozen as sub` first, the package's copy as a fallback).
#[test]
fn from_package_import_submodule_is_the_submodule_whatever_else_binds_the_name() {
    let repo = TestRepo::with_files(&[
        (
            "pkg/__init__.py",
            "try:\n    import _frozen as _bootstrap\nexcept ImportError:\n    from . import _bootstrap\n",
        ),
        ("pkg/_bootstrap.py", "def setup():\n    pass\n"),
    ]);
    let idx = index(&repo);
    let edges = import_edges(&idx, "pkg/__init__.py");
    assert_eq!(
        edges,
        vec![
            ("_frozen".into(), String::new()),
            (".".into(), "pkg/_bootstrap.py".into()),
        ]
    );
}

/// Glob imports in a cycle (`from .m1 import *` in `m0`, `from .m0 import *` in `m1`, …) are
/// walked once per module: the name is found through them, and the walk does not go round the
/// cycle to the depth limit (which took exponential time).
#[test]
fn glob_imports_in_a_cycle_resolve_once_around() {
    let mut files: Vec<(String, String)> = (0..8)
        .map(|i| {
            let (next, prev) = ((i + 1) % 8, (i + 7) % 8);
            let mut text = format!("from .m{next} import *\nfrom .m{prev} import *\n");
            if i == 5 {
                text.push_str("\ndef target():\n    pass\n");
            }
            (format!("pkg/m{i}.py"), text)
        })
        .collect();
    files.push(("pkg/__init__.py".into(), String::new()));
    files.push((
        "app.py".into(),
        "from pkg.m0 import target\n\ntarget()\n".into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = TestRepo::with_files(&refs);
    let idx = index(&repo);
    let started = std::time::Instant::now();
    assert_eq!(
        resolved(&idx.references("target").unwrap()),
        vec!["app.py:1", "app.py:3"]
    );
    // Going round the cycle took 24 s here; once around, well under a second.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn callers_as_text_name_the_function_each_call_is_in() {
    let repo = repo();
    let out = crate::support::orchestra(&repo.path, &["nav", "callers", "Config.parse"]);
    let text = crate::support::text(&out);
    assert!(out.status.success(), "{text}");
    // The caller is the answer: the compact listing keeps the function each call lies in.
    assert!(text.contains("pkg/config.py (in Config.load): 3"), "{text}");
}

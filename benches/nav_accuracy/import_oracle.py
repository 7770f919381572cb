"""Expected imports for the navigation accuracy harness, resolved by the interpreter's own
import machinery (`importlib`'s path finder and `resolve_name`), not by grep.

Usage: import_oracle.py REPO > expected.json

Every `import` and `from … import` statement of every Python file under REPO (parsed with
`ast`, at any depth) gives (module as written, file it resolves to): `import a.b` resolves
`a.b`; `from m import n` resolves to the submodule `m.n` when there is one, else to `m`. The
search path is the one a test or script run sees with the repository's projects installed in
development mode: the file's base directory (the first one up without an `__init__.py`, which
Python puts first for a script and pytest for a test), REPO and REPO/src, then every directory
holding a `pyproject.toml` or `setup.py` (and its `src/`). A file's package, for its relative
imports, is its path from the deepest of those roots holding it. A module found nowhere on
that path resolves to "" (outside the repository). Nothing is imported or executed.
"""
import ast
import importlib.machinery
import importlib.util
import json
import os
import sys

repo = os.path.abspath(sys.argv[1])


def with_src(d):
    return [d] + ([os.path.join(d, "src")] if os.path.isdir(os.path.join(d, "src")) else [])


roots = with_src(repo)
for dirpath, dirnames, filenames in os.walk(repo):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    if dirpath != repo and ("pyproject.toml" in filenames or "setup.py" in filenames):
        roots.extend(with_src(dirpath))


LOADERS = (
    (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
    (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
)


def find_in(fullname, locations):
    """What the path finder does for `fullname` over `locations`: the first regular module or
    package, else a namespace package made of every portion. Returns (file or None, the
    package's search locations or None), or None when nothing matches."""
    portions = []
    for loc in locations:
        spec = importlib.machinery.FileFinder(loc, *LOADERS).find_spec(fullname)
        if spec is None:
            continue
        if spec.loader is not None:
            return spec.origin, spec.submodule_search_locations
        portions.extend(spec.submodule_search_locations or [])
    return (None, portions) if portions else None


def find(dotted, path):
    """The file module `dotted` is loaded from on the search `path`, or None (outside it, or a
    namespace package, which has no file)."""
    locations, origin = path, None
    parts = dotted.split(".")
    for i in range(len(parts)):
        if not locations:
            return None
        found = find_in(".".join(parts[: i + 1]), locations)
        if found is None:
            return None
        origin, locations = found
    return origin if origin and os.path.isfile(origin) else None


def base_dir(path):
    """The first directory up from a file without an `__init__.py`."""
    d = os.path.dirname(path)
    while os.path.isfile(os.path.join(d, "__init__.py")) and d != repo:
        d = os.path.dirname(d)
    return d


def package_of(path):
    """The dotted package a file's relative imports start from: its directory's path from the
    deepest root holding it."""
    d = os.path.dirname(path)
    root = max((r for r in roots if d == r or d.startswith(r + os.sep)), key=len)
    return os.path.relpath(d, root).replace(os.sep, ".") if d != root else ""


def rel(p):
    return os.path.relpath(p, repo) if p and p.startswith(repo + os.sep) else ""


out = []
for dirpath, dirnames, filenames in os.walk(repo):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
    for name in sorted(filenames):
        if not name.endswith(".py"):
            continue
        path = os.path.join(dirpath, name)
        try:
            tree = ast.parse(open(path, "rb").read(), filename=path)
        except (SyntaxError, ValueError):
            continue
        package = package_of(path)
        search = [base_dir(path)] + roots
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    edges.add((a.name, rel(find(a.name, search))))
            elif isinstance(node, ast.ImportFrom):
                written = "." * node.level + (node.module or "")
                try:
                    full = importlib.util.resolve_name(written, package) if node.level else written
                except (ImportError, ValueError):
                    continue
                base = rel(find(full, search))
                for a in node.names:
                    sub = rel(find(full + "." + a.name, search)) if a.name != "*" else ""
                    edges.add((written, sub or base))
        if edges:
            out.append({"file": os.path.relpath(path, repo), "expected": sorted(edges)})

json.dump({"imports": out}, sys.stdout)

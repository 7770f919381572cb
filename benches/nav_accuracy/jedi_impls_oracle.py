"""Expected implementations (subclasses) for the Python sets, computed by jedi, not by grep.

Usage: jedi_impls_oracle.py REPO FILE... > expected.json

Every class of every Python file under REPO (stubs included; found with `ast`) has its bases resolved with
jedi's goto (imports followed), which gives the subclass edges inside REPO. Queries, by rule:
the classes of each FILE (at most 4, evenly spaced) and every class some other class names as
its base (at most 4 per file). A query's expected answer is every class whose bases lead to
it, directly or through other classes of REPO. The search path is REPO (and REPO/src), as the
jedi oracle's.
"""
import ast
import json
import os
import sys

import jedi

repo = os.path.abspath(sys.argv[1])
files = sys.argv[2:]
sys_path = [repo] + ([os.path.join(repo, "src")] if os.path.isdir(os.path.join(repo, "src")) else [])
project = jedi.Project(path=repo, sys_path=sys_path, smart_sys_path=False, load_unsafe_extensions=False)


def rel(p):
    p = str(p)
    return os.path.relpath(p, repo) if p.startswith(repo + os.sep) else None


def base_name_node(expr):
    """The name to resolve in a base expression: `B`, `mod.B`, `B[T]`, `mod.B[T]`."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute):
        return expr.end_lineno, expr.end_col_offset - len(expr.attr)
    if isinstance(expr, ast.Name):
        return expr.lineno, expr.col_offset
    return None


classes = {}  # (path, line) -> {"name", "col"}
subclasses = {}  # (path, line) of a base -> set of (path, line) of classes naming it
for dirpath, dirnames, filenames in os.walk(repo):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
    for name in sorted(filenames):
        if not name.endswith((".py", ".pyi")):
            continue
        path = os.path.join(dirpath, name)
        src = open(path, encoding="utf-8", errors="replace").read()
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        script = None
        lines = src.splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            # The class's own line is its name's (decorators come first).
            line = next((l for l in range(node.lineno, node.lineno + 5) if l <= len(lines) and ("class " + node.name) in lines[l - 1]), node.lineno)
            col = lines[line - 1].find("class " + node.name) + len("class ")
            here = (rel(path), line)
            classes[here] = {"name": node.name, "col": col + 1}
            for b in node.bases:
                pos = base_name_node(b)
                if pos is None:
                    continue
                script = script or jedi.Script(src, path=path, project=project)
                try:
                    got = script.goto(pos[0], pos[1], follow_imports=True)
                except Exception:
                    continue
                for g in got:
                    if g.type == "class" and g.module_path and rel(g.module_path):
                        subclasses.setdefault((rel(g.module_path), g.line), set()).add(here)


def all_subclasses(c):
    seen, todo = set(), [c]
    while todo:
        for s in subclasses.get(todo.pop(), ()):
            if s not in seen and s != c:
                seen.add(s)
                todo.append(s)
    return seen


sites, chosen = [], set()
for f in files:
    mine = sorted(k for k in classes if k[0] == f)
    for k in mine[:: max(1, len(mine) // 4)][:4]:
        chosen.add(k)
based = {}
for k in subclasses:
    if k in classes:
        based.setdefault(k[0], []).append(k)
for f in sorted(based):
    for k in sorted(based[f])[:4]:
        chosen.add(k)
for k in sorted(chosen):
    c = classes[k]
    sites.append({"file": k[0], "line": k[1], "col": c["col"], "name": c["name"], "expected": sorted(all_subclasses(k))})

json.dump({"impls": sites}, sys.stdout)

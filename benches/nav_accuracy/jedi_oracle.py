"""Expected answers for the navigation accuracy harness, computed by jedi (not by grep).

Usage: jedi_oracle.py REPO FILE... > expected.json

For each file: sampled name uses (calls, attribute and plain names) with jedi's goto
definitions, and top-level functions/classes with jedi's project-wide references. `uses`:
a second set of uses sampled evenly over the whole file (not its first bound names), where an
agent reading the code stands; the harness scores it per syntactic form. `use_refs`: jedi's
project-wide references at every other of those uses (up to 6 a file). Only answers
inside REPO count; the sys.path is REPO (and REPO/src), so imports resolve to the copied tree.
"""
import json
import os
import sys

import jedi

repo = os.path.abspath(sys.argv[1])
files = sys.argv[2:]
# A `src/` layout's packages import from `src`.
sys_path = [repo] + ([os.path.join(repo, "src")] if os.path.isdir(os.path.join(repo, "src")) else [])
project = jedi.Project(path=repo, sys_path=sys_path, smart_sys_path=False, load_unsafe_extensions=False)


def rel(p):
    p = str(p)
    return os.path.relpath(p, repo) if p.startswith(repo + os.sep) else None


defs, refs, uniform, use_refs = [], [], [], []
for f in files:
    path = os.path.join(repo, f)
    src = open(path, encoding="utf-8", errors="replace").read()
    script = jedi.Script(src, path=path, project=project)
    lines = src.splitlines()
    uses = [n for n in script.get_names(all_scopes=True, definitions=False, references=True)]
    # Deterministic sample: evenly spaced uses, kept when jedi binds them to a function or
    # class inside the repository; up to 12 per file.
    step = max(1, len(uses) // 150)
    found_here = 0
    for n in uses[::step]:
        if found_here >= 12:
            break
        try:
            got = script.goto(n.line, n.column, follow_imports=True)
        except Exception:
            continue
        exp = sorted({(rel(g.module_path), g.line) for g in got if g.module_path and rel(g.module_path) and g.type in ("function", "class")})
        if exp:
            found_here += 1
            defs.append({"file": f, "line": n.line, "col": n.column + 1, "name": n.name, "expected": exp})
    # Uniform over the file: evenly spaced candidates across all of its uses, up to 16 bound.
    found_here = 0
    first = len(uniform)
    for n in uses[:: max(1, len(uses) // 40)]:
        if found_here >= 16:
            break
        try:
            got = script.goto(n.line, n.column, follow_imports=True)
        except Exception:
            continue
        exp = sorted({(rel(g.module_path), g.line) for g in got if g.module_path and rel(g.module_path) and g.type in ("function", "class")})
        if exp:
            found_here += 1
            uniform.append({"file": f, "line": n.line, "col": n.column + 1, "name": n.name, "expected": exp})
    # References at every other of those uses (up to 6 a file): jedi's project-wide search is
    # slow.
    for u in uniform[first::2][:6]:
        try:
            found = script.get_references(u["line"], u["col"] - 1, scope="project")
        except Exception:
            continue
        exp = sorted({(rel(r.module_path), r.line) for r in found if r.module_path and rel(r.module_path)})
        if exp:
            use_refs.append({"file": f, "line": u["line"], "col": u["col"], "name": u["name"], "expected": exp})

    def is_def_line(d):
        text = lines[d.line - 1].lstrip() if 0 < d.line <= len(lines) else ""
        return text.startswith(("def ", "class ", "async def "))
    tops = [d for d in script.get_names(all_scopes=True, definitions=True) if d.type in ("function", "class") and is_def_line(d)]
    for d in tops[:: max(1, len(tops) // 4)][:4]:
        try:
            found = script.get_references(d.line, d.column, scope="project")
        except Exception:
            continue
        exp = sorted({(rel(r.module_path), r.line) for r in found if r.module_path and rel(r.module_path)})
        refs.append({"file": f, "line": d.line, "name": d.name, "expected": exp})

json.dump({"defs": defs, "refs": refs, "uses": uniform, "use_refs": use_refs}, sys.stdout)

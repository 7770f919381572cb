"""Expected answers for the Rust held-out sets, from rust-analyzer's LSIF dump (not from grep).

Usage: lsif_oracle.py REPO DUMP FILE... > expected.json

DUMP is the output of `rust-analyzer lsif REPO`: every range rust-analyzer resolved, each with
its definitions and references. For each FILE (a repository path), the same rule as the jedi
oracle: evenly spaced uses of items (up to 12), each with rust-analyzer's definitions, and
evenly spaced item definitions (up to 4), each with all its references. An item is what a
reader navigates to: a function or method, type, trait, constant, static, module or macro;
locals, parameters and fields are left out, as are places outside REPO.
"""
import json
import os
import re
import sys
from urllib.parse import unquote, urlparse

repo = os.path.realpath(sys.argv[1])
dump = sys.argv[2]
files = sys.argv[3:]

ITEM = re.compile(
    r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?"
    r"(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?"
    r"(fn|struct|enum|trait|type|union|const|static|mod|macro_rules!)\b"
)

docs, ranges, next_of, def_of, refs_of, items = {}, {}, {}, {}, {}, {}
with open(dump, encoding="utf-8") as f:
    text = f.read().strip()
elements = json.loads(text) if text.startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]
for e in elements:
    label = e.get("label")
    if e.get("type") == "vertex":
        if label == "document":
            path = os.path.realpath(unquote(urlparse(e["uri"]).path))
            if path.startswith(repo + os.sep):
                docs[e["id"]] = os.path.relpath(path, repo)
        elif label == "range":
            ranges[e["id"]] = (e["start"]["line"], e["start"]["character"], e["end"]["character"])
    elif label == "contains" and e["outV"] in docs:
        for r in e["inVs"]:
            if r in ranges:
                ranges[r] = ranges[r] + (docs[e["outV"]],)
    elif label == "next":
        next_of[e["outV"]] = e["inV"]
    elif label == "textDocument/definition":
        def_of[e["outV"]] = e["inV"]
    elif label == "textDocument/references":
        refs_of[e["outV"]] = e["inV"]
    elif label == "item":
        items.setdefault(e["outV"], []).extend((r, e.get("property")) for r in e["inVs"])

sources = {}


def source_lines(path):
    if path not in sources:
        with open(os.path.join(repo, path), encoding="utf-8", errors="replace") as f:
            sources[path] = f.read().splitlines()
    return sources[path]


def place(r):
    """(path, line 1-based, start col, end col) of range r inside the repository, or None."""
    v = ranges.get(r)
    if v is None or len(v) < 4:
        return None
    line, start, end, path = v
    return path, line + 1, start, end


def is_item(p):
    """True when p is the name an item declaration gives (`fn name`, `struct Name` ...)."""
    lines = source_lines(p[0])
    if not 0 < p[1] <= len(lines):
        return False
    m = ITEM.match(lines[p[1] - 1])
    if m is None:
        return False
    rest = lines[p[1] - 1][m.end() :]
    return m.end() + len(rest) - len(rest.lstrip()) == p[2]


def name_of(p):
    lines = source_lines(p[0])
    return lines[p[1] - 1][p[2] : p[3]] if 0 < p[1] <= len(lines) else ""


def definitions(result_set):
    found = [place(r) for r, _ in items.get(def_of.get(result_set), [])]
    return [p for p in found if p]


by_file = {}
for r, v in ranges.items():
    if len(v) == 4 and r in next_of:
        by_file.setdefault(v[3], []).append(r)

defs, refs = [], []
for f in files:
    here = sorted(by_file.get(f, []), key=lambda r: ranges[r][:2])
    uses, decls = [], []
    for r in here:
        p = place(r)
        rs = next_of[r]
        targets = definitions(rs)
        if not name_of(p).isidentifier():
            continue
        if any(t[:2] == p[:2] and t[2] == p[2] for t in targets):
            if is_item(p):
                decls.append((p, rs))
        elif targets and all(is_item(t) for t in targets):
            uses.append((p, targets))
    for p, targets in uses[:: max(1, len(uses) // 150)][:12]:
        expected = sorted({(t[0], t[1]) for t in targets})
        defs.append({"file": f, "line": p[1], "col": p[2] + 1, "name": name_of(p), "expected": expected})
    for p, rs in decls[:: max(1, len(decls) // 4)][:4]:
        found = [place(r) for r, _ in items.get(refs_of.get(rs), [])]
        expected = sorted({(q[0], q[1]) for q in found if q})
        refs.append({"file": f, "line": p[1], "name": name_of(p), "expected": expected})

json.dump({"defs": defs, "refs": refs}, sys.stdout)

"""Expected answers for the Rust held-out sets, from rust-analyzer's LSIF dump (not from grep).

Usage: lsif_oracle.py [--imports RUST_ANALYZER] REPO DUMP FILE... > expected.json

DUMP is the output of `rust-analyzer lsif REPO`: every range rust-analyzer resolved, each with
its definitions and references. For each FILE (a repository path), the same rule as the jedi
oracle: evenly spaced uses of items (up to 12), each with rust-analyzer's definitions, and
evenly spaced item definitions (up to 4), each with all its references; and the use-sampled
set ("uses", "use_refs"): up to 8 uses spread evenly over the file and up to 8 member calls
(`x.name(…)`) apart, each with its definitions and the references of what it denotes (the
dump has both for every range, so no server is asked), and the lines the dump covers
("seen_lines": code under a `cfg` rust-analyzer left off has no ranges). An item is what a
reader navigates to: a function or method, type, trait, constant, static, module or macro;
locals, parameters and fields are left out, as are places outside REPO.

With --imports, every `use` and `extern crate` item of every `.rs` file of REPO as well, parsed by rust-analyzer's
own parser (`rust-analyzer parse`): each leaf of a use tree gives (the path before it as
written, the file it resolves to): the leaf's module when the leaf is a module (`self`
included), else the module of the path before it (`*` too); an `extern crate` gives (the
crate, its root file); "" outside REPO. Where
rust-analyzer resolves neither, the path is listed as unknown and not scored.
"""
import json
import os
import re
import subprocess
import sys
from urllib.parse import unquote, urlparse

args = sys.argv[1:]
ra = None
if args[:1] == ["--imports"]:
    ra, args = args[1], args[2:]
repo = os.path.realpath(args[0])
dump = args[1]
files = args[2:]

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

USES_PER_FILE = 8


def is_member(p):
    """True when the use at p follows a `.`: a method call or a field (`x.name`)."""
    line = source_lines(p[0])[p[1] - 1] if 0 < p[1] <= len(source_lines(p[0])) else ""
    return line[: p[2]].rstrip().endswith(".")


def evenly(found, n):
    """Up to n of found, evenly spaced over it."""
    return found[:: max(1, len(found) // n)][:n]


defs, refs, use_sampled, use_refs = [], [], [], []
for f in files:
    here = sorted(by_file.get(f, []), key=lambda r: ranges[r][:2])
    uses, decls, at_uses = [], [], []
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
            at_uses.append((p, targets, rs))
    for p, targets in uses[:: max(1, len(uses) // 150)][:12]:
        expected = sorted({(t[0], t[1]) for t in targets})
        defs.append({"file": f, "line": p[1], "col": p[2] + 1, "name": name_of(p), "expected": expected})
    for p, rs in decls[:: max(1, len(decls) // 4)][:4]:
        found = [place(r) for r, _ in items.get(refs_of.get(rs), [])]
        expected = sorted({(q[0], q[1]) for q in found if q})
        refs.append({"file": f, "line": p[1], "name": name_of(p), "expected": expected})
    # The use-sampled set: uses spread evenly over the file, member calls (`x.name(…)`) and
    # other uses (calls, paths, types, imports) apart, so method calls are not outnumbered;
    # at each, the definitions and the references of what it denotes (declaration included).
    # Keywords that denote a type or module (`Self`, `self`, `crate`, `super`) are no names.
    at_uses = [u for u in at_uses if name_of(u[0]) not in ("Self", "self", "crate", "super")]
    members = [u for u in at_uses if is_member(u[0])]
    others = [u for u in at_uses if not is_member(u[0])]
    for p, targets, rs in evenly(others, USES_PER_FILE) + evenly(members, USES_PER_FILE):
        site = {"file": f, "line": p[1], "col": p[2] + 1, "name": name_of(p)}
        use_sampled.append({**site, "expected": sorted({(t[0], t[1]) for t in targets})})
        found = [place(r) for r, _ in items.get(refs_of.get(rs), [])]
        use_refs.append({**site, "expected": sorted({(q[0], q[1]) for q in found if q})})

TREE_LINE = re.compile(r"^( *)([A-Z_0-9]+)@(\d+)\.\.(\d+)(?: (.*))?$")


def syntax_tree(path):
    """rust-analyzer's syntax tree of a file, as nested dicts."""
    with open(path, "rb") as src:
        out = subprocess.run([ra, "parse"], stdin=src, capture_output=True, text=True).stdout
    root = {"kind": "ROOT", "children": []}
    stack = [(-1, root)]
    for line in out.splitlines():
        m = TREE_LINE.match(line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        node = {"kind": m.group(2), "start": int(m.group(3)), "text": m.group(5), "children": []}
        while stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1]["children"].append(node)
        stack.append((depth, node))
    return root


def segments(path_node):
    """The segments of a PATH node: [(text, byte offset)]."""
    out = []
    for c in path_node["children"]:
        if c["kind"] == "PATH":
            out.extend(segments(c))
        elif c["kind"] == "PATH_SEGMENT":
            # The segment's name (a leading `::` is no segment of its own).
            tok = next((n for n in c["children"] if n["kind"] == "NAME_REF"), None)
            if tok is None:
                continue
            while tok["children"]:
                tok = tok["children"][0]
            out.append((tok["text"].strip('"'), tok["start"]))
    return out


def use_leaves(tree, prefix, out):
    """Every leaf of a USE_TREE: (the segments before it, the leaf (text, offset))."""
    kids = tree["children"]
    path = next((c for c in kids if c["kind"] == "PATH"), None)
    listed = next((c for c in kids if c["kind"] == "USE_TREE_LIST"), None)
    star = next((c for c in kids if c["kind"] == "STAR"), None)
    segs = prefix + (segments(path) if path else [])
    if listed:
        for c in listed["children"]:
            if c["kind"] == "USE_TREE":
                use_leaves(c, segs, out)
    elif star:
        out.append((segs, ("*", star["start"])))
    elif segs:
        out.append((segs[:-1], segs[-1]))


def uses_of(node, out):
    """Every `use` leaf under node, and every `extern crate` as (None, (crate, offset))."""
    for c in node["children"]:
        if c["kind"] == "USE":
            for t in c["children"]:
                if t["kind"] == "USE_TREE":
                    use_leaves(t, [], out)
        elif c["kind"] == "EXTERN_CRATE":
            name = next((t for t in c["children"] if t["kind"] == "NAME_REF"), None)
            if name and name["children"]:
                tok = name["children"][0]
                out.append((None, (tok["text"].strip('"'), tok["start"])))
        else:
            uses_of(c, out)
    return out


def file_imports(path, at):
    """(expected [module, target] pairs, unknown modules) of one file."""
    raw = open(os.path.join(repo, path), "rb").read()

    def target_of(offset):
        """The definitions rust-analyzer gives at a byte offset: [(file, is a module)]."""
        line = raw.count(b"\n", 0, offset)
        start = raw.rfind(b"\n", 0, offset) + 1
        col = len(raw[start:offset].decode("utf-8", "replace").encode("utf-16-le")) // 2
        r = at.get((path, line, col))
        if r is None or r not in next_of:
            return None
        found = [place(x) for x, _ in items.get(def_of.get(next_of[r]), [])]
        # A module's definition is its whole file: an empty range at its start.
        return [(p[0], p[1:] == (1, 0, 0)) for p in found if p]

    expected, unknown = set(), set()
    for prefix, (leaf, offset) in uses_of(syntax_tree(os.path.join(repo, path)), []):
        if prefix is None:
            # `extern crate x;`: the crate's root file, or outside.
            got = target_of(offset)
            expected.add((leaf, got[0][0] if got else ""))
            continue
        module = "::".join(t for t, _ in prefix)
        if leaf not in ("self", "*"):
            got = target_of(offset)
            if got and got[0][1]:
                expected.add((module, got[0][0]))
                continue
        if not prefix:
            continue
        got = target_of(prefix[-1][1])
        if got is None:
            unknown.add(module)
        else:
            expected.add((module, got[0][0] if got else ""))
    return sorted(expected), sorted(unknown)


imports = []
if ra:
    at = {}
    for r, v in ranges.items():
        if len(v) == 4:
            at[(v[3], v[0], v[1])] = r
    for path in sorted(set(docs.values())):
        if path.endswith(".rs"):
            exp, unknown = file_imports(path, at)
            if exp or unknown:
                imports.append({"file": path, "expected": exp, "unknown": unknown})

# The lines rust-analyzer analysed (those holding a range): code under a `cfg` it left off
# (`#[cfg(feature = "raw_value")] mod raw;`) has none, so the use-sampled references found
# there are not scored, neither right nor wrong.
seen = {}
for v in ranges.values():
    if len(v) == 4:
        seen.setdefault(v[3], set()).add(v[0] + 1)
seen = {f: sorted(lines) for f, lines in seen.items()}

json.dump(
    {"defs": defs, "uses": use_sampled, "use_refs": use_refs, "seen_lines": seen, "refs": refs, "imports": imports},
    sys.stdout,
)

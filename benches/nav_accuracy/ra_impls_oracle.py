"""Expected implementations for the Rust held-out sets, from a running rust-analyzer (its
`textDocument/implementation` answers over the language server protocol), not from grep.

Usage: ra_impls_oracle.py RUST_ANALYZER REPO FILE... > expected.json

Queries, by rule: in each FILE (a repository path) the trait, struct and enum declarations
(at most 4, evenly spaced); and every trait some `impl … Trait for …` of the repository names,
at its declaration (at most 4 per file). Each query's expected answer is every place
rust-analyzer's go-to-implementation gives inside REPO (impl blocks at their line, derives at
the attribute), with every feature of the workspace enabled (the graph does not evaluate
`cfg`, so feature-gated impls count on both sides). Places rust-analyzer gives for impls that
macros generate are listed apart ("generated").
"""
import functools
import json
import os
import re
import subprocess
import sys
import time
from urllib.parse import quote, unquote, urlparse

ra, repo, files = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3:]
DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(trait|struct|enum)\s+([A-Za-z_]\w*)")
# A place where an implementation is written: an impl header or a derive attribute. Others are
# where rust-analyzer puts impls a macro generates (a `macro_rules!` call, a derive macro's
# item): listed apart as "generated", since the graph expands no macros.
WRITTEN = re.compile(r"\bimpl\b|#\[derive\(")
IMPL_FOR = re.compile(r"\bimpl\b(?:\s*<.*?>)?\s+(?:[\w:]+::)?([A-Za-z_]\w*)\s*(?:<.*?>)?\s+for\s")


def sources():
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "target")
        for name in sorted(filenames):
            if name.endswith(".rs"):
                yield os.path.relpath(os.path.join(dirpath, name), repo)


@functools.lru_cache(maxsize=None)
def lines_of(path):
    with open(os.path.join(repo, path), encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def decls(path, kinds):
    out = []
    for i, line in enumerate(lines_of(path)):
        m = DECL.match(line)
        if m and m.group(1) in kinds:
            out.append({"file": path, "line": i + 1, "col": m.start(2) + 1, "name": m.group(2)})
    return out


implemented = set()
for path in sources():
    for line in lines_of(path):
        implemented.update(IMPL_FOR.findall(line))

sites, seen = [], set()
for path in files:
    found = decls(path, ("trait", "struct", "enum"))
    for s in found[:: max(1, len(found) // 4)][:4]:
        seen.add((s["file"], s["line"]))
        sites.append(s)
for path in sources():
    traits = [s for s in decls(path, ("trait",)) if s["name"] in implemented]
    for s in traits[:4]:
        if (s["file"], s["line"]) not in seen:
            seen.add((s["file"], s["line"]))
            sites.append(s)


class Server:
    """A language server over stdio."""

    def __init__(self, cmd, cwd):
        self.p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.quiescent = False

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def read(self):
        length = 0
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError("the language server exited")
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(length))

    def handle(self, msg):
        """Answers a request from the server; notes its status."""
        if msg.get("method") == "experimental/serverStatus":
            self.quiescent = bool(msg["params"].get("quiescent"))
        if "id" in msg and "method" in msg:
            result = [{}] * len(msg["params"].get("items", [])) if msg["method"] == "workspace/configuration" else None
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == rid and "method" not in msg:
                return msg.get("result")
            self.handle(msg)


def uri(path):
    return "file://" + quote(os.path.join(repo, path))


server = Server([ra], repo)
server.request("initialize", {
    "processId": os.getpid(),
    "rootUri": "file://" + quote(repo),
    "capabilities": {"window": {"workDoneProgress": True}, "experimental": {"serverStatusNotification": True}},
    "initializationOptions": {"checkOnSave": False, "cachePriming": {"enable": False}, "cargo": {"features": "all"}},
})
server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
deadline = time.time() + 600
while not server.quiescent and time.time() < deadline:
    server.handle(server.read())

impls = []
for s in sites:
    got = server.request("textDocument/implementation", {
        "textDocument": {"uri": uri(s["file"])},
        "position": {"line": s["line"] - 1, "character": s["col"] - 1},
    }) or []
    exp, generated = set(), set()
    for loc in got:
        u = loc.get("uri") or loc.get("targetUri")
        rng = loc.get("range") or loc.get("targetSelectionRange")
        path = os.path.realpath(unquote(urlparse(u).path))
        if path.startswith(repo + os.sep):
            place = (os.path.relpath(path, repo), rng["start"]["line"] + 1)
            lines = lines_of(place[0])
            text = lines[place[1] - 1] if place[1] <= len(lines) else ""
            (exp if WRITTEN.search(text) else generated).add(place)
    impls.append({**s, "expected": sorted(exp), "generated": sorted(generated)})
server.request("shutdown", None)
server.send({"jsonrpc": "2.0", "method": "exit"})
json.dump({"impls": impls}, sys.stdout)

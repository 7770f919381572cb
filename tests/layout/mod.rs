//! Checks on the shape of the source tree that keep it navigable: no import cycle between the
//! top-level modules of the workspace's crates (Cargo sees only the crates), no test file left
//! out of the test binary, no function longer than 120 lines, no merge conflict marker
//! left in the sources or the documents, frontends that reach runs only through the
//! library's run lifecycle API, a packet pipeline of one file per phase and one composition
//! root for a run's worker, reviewer and executor.
//!
//! They read the sources as text (comments, strings and character literals blanked out), so
//! they need neither a parser nor the compiler's help, and name the file and line to fix.

mod docs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod layers;
mod pipeline;
mod run_dir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Returns the source directories of the workspace: the root package's `src/` and each crate's.
fn source_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .map(|entries| entries.flatten().map(|e| e.path().join("src")).collect())
        .unwrap_or_default();
    crates.sort();
    dirs.extend(crates.into_iter().filter(|d| d.is_dir()));
    dirs
}

/// Returns every `.rs` file of the workspace's sources, tests and benchmarks.
fn workspace_rust_files() -> Vec<PathBuf> {
    let mut dirs = source_dirs();
    dirs.push(root().join("tests"));
    dirs.push(root().join("benches"));
    dirs.iter().flat_map(|d| rust_files(d)).collect()
}

/// Returns every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Returns `text` with comments, string literals (raw ones included) and character literals
/// replaced by spaces, keeping every newline so line numbers stay true.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, chars: &[char]| {
        out.extend(chars.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let starts = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(k, ch)| c.get(i + k) == Some(&ch))
    };
    let mut i = 0;
    while i < c.len() {
        let len = if starts(i, "//") {
            c[i..]
                .iter()
                .position(|&ch| ch == '\n')
                .unwrap_or(c.len() - i)
        } else if starts(i, "/*") {
            let mut depth = 0;
            let mut j = i;
            while j < c.len() {
                if starts(j, "/*") {
                    depth += 1;
                    j += 2;
                } else if starts(j, "*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j - i
        } else if let Some(len) = raw_string_len(&c[i..])
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            len
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(c.len()) - i
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{..}'), else a lifetime or label.
            if c.get(i + 1) == Some(&'\\') {
                c[i + 3..]
                    .iter()
                    .position(|&ch| ch == '\'')
                    .map_or(1, |p| p + 4)
            } else if c.get(i + 2) == Some(&'\'') {
                3
            } else {
                0
            }
        } else {
            0
        };
        if len == 0 {
            out.push(c[i]);
            i += 1;
        } else {
            blank(&mut out, &c[i..i + len]);
            i += len;
        }
    }
    out
}

/// Returns the length of a raw (byte) string literal starting at `s`, if one starts there.
fn raw_string_len(s: &[char]) -> Option<usize> {
    let start = match s {
        ['b', 'r', ..] => 2,
        ['r', ..] => 1,
        _ => return None,
    };
    let hashes = s[start..].iter().take_while(|&&ch| ch == '#').count();
    if s.get(start + hashes) != Some(&'"') {
        return None;
    }
    let body = start + hashes + 1;
    (body..s.len())
        .find(|&k| {
            s[k] == '"'
                && s[k + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|&&h| h == '#')
                    .count()
                    == hashes
        })
        .map(|k| k + 1 + hashes)
}

/// Returns true if and only if the byte before `at` cannot continue an identifier.
fn word_starts(code: &[u8], at: usize) -> bool {
    at == 0 || !(code[at - 1].is_ascii_alphanumeric() || code[at - 1] == b'_')
}

/// Returns the top-level modules a file's code names through `crate::…` or through a crate of
/// the workspace (`orchestra_core::engine::…` names `engine`).
fn crate_modules(code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("::") {
        let sep = from + p;
        from = sep + 2;
        let start = code[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let root = &code[start..sep];
        if !(root == "crate" || root.starts_with("orchestra_")) || !word_starts(b, start) {
            continue;
        }
        if code[..start].ends_with("::") {
            continue;
        }
        out.extend(first_segments(&code[from..]));
    }
    out.remove("self");
    out
}

/// Returns the first segment of a path's rest (`engine::x` → `engine`), or of each item of a
/// group (`{a::x, b, c::{..}}` → `a`, `b`, `c`).
fn first_segments(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(group) = rest.strip_prefix('{') else {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
        return out;
    };
    let mut depth = 1;
    let mut item = String::new();
    let mut first = true;
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => break,
            '}' => depth -= 1,
            ',' if depth == 1 => {
                if first && !item.is_empty() {
                    out.push(std::mem::take(&mut item));
                }
                first = true;
                item.clear();
                continue;
            }
            _ => {}
        }
        if depth == 1 && first {
            if c.is_ascii_alphanumeric() || c == '_' {
                item.push(c);
            } else if !item.is_empty() {
                out.push(std::mem::take(&mut item));
                first = false;
            }
        }
    }
    if first && !item.is_empty() {
        out.push(item);
    }
    out
}

/// Returns the top-level module a source file belongs to (`src/git/cli.rs` → `git`).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// Returns the cycles of the graph as its strongly connected components of more than one
/// node (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// Returns the module graph of the library crates: top-level module → the modules it names.
/// The binary's own modules (`main`, `commands`, `web`) and the facade (`lib`) stay out.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for src in source_dirs() {
        for file in rust_files(&src) {
            let Some(top) = top_module(&src, &file) else {
                continue;
            };
            if matches!(top.as_str(), "main" | "lib" | "commands" | "web") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let uses = crate_modules(&code_only(&text));
            let entry = graph.entry(top.clone()).or_default();
            entry.extend(uses.into_iter().filter(|m| *m != top));
        }
    }
    graph
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let graph = module_graph();
    assert!(
        graph.len() > 10,
        "expected the library's modules, found {graph:?}"
    );
    let found = cycles(&graph);
    let explain: Vec<String> = found
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("{a} → {b}"))
                })
                .collect();
            format!("{{{}}}: {}", c.join(", "), edges.join(", "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "top-level modules import each other in a cycle: {}",
        explain.join("; ")
    );
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let edge = |g: &mut BTreeMap<String, BTreeSet<String>>, a: &str, b: &str| {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    };
    edge(&mut graph, "engine", "gate");
    edge(&mut graph, "gate", "exec");
    assert!(cycles(&graph).is_empty());
    edge(&mut graph, "gate", "engine");
    assert_eq!(cycles(&graph), vec![vec!["engine", "gate"]]);
    let code = code_only(
        "use crate::{git::{A, B}, plan, store::X};\n// crate::nav\nlet s = \"crate::llm\";\nfn f() { crate::names::x(); orchestra_core::engine::y(); other::crate::merge::z(); }\n",
    );
    assert_eq!(
        crate_modules(&code).into_iter().collect::<Vec<_>>(),
        vec!["engine", "git", "names", "plan", "store"]
    );
}

/// The longest a function may be, counted from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 120;

/// A function found in the sources: where it starts and how many lines it spans.
#[derive(Debug)]
struct Function {
    file: PathBuf,
    line: usize,
    name: String,
    lines: usize,
}

/// Returns every function with a body in `code`, nested ones included.
fn functions(file: &Path, code: &str) -> Vec<Function> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if !word_starts(b, at) {
            continue;
        }
        let name: String = code[from..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body starts at the first `{` at bracket depth zero; a `;` first means no body.
        let mut depth = 0i32;
        let mut open = None;
        for (i, &c) in b.iter().enumerate().skip(from) {
            match c {
                b'(' | b'[' | b'<' => depth += 1,
                b')' | b']' => depth -= 1,
                b'>' if i > 0 && b[i - 1] != b'-' && b[i - 1] != b'=' => depth -= 1,
                b';' if depth <= 0 => break,
                b'{' if depth <= 0 => {
                    open = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = open else {
            continue;
        };
        let mut braces = 0;
        let mut close = None;
        for (i, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => braces += 1,
                b'}' => {
                    braces -= 1;
                    if braces == 0 {
                        close = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            continue;
        };
        let line = code[..at].matches('\n').count() + 1;
        let last = code[..close].matches('\n').count() + 1;
        out.push(Function {
            file: file.to_path_buf(),
            line,
            name,
            lines: last - line + 1,
        });
    }
    out
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let mut all = Vec::new();
    for file in workspace_rust_files() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        all.extend(functions(&file, &code_only(&text)));
    }
    assert!(
        all.len() > 500,
        "expected the crate's functions, found {}",
        all.len()
    );
    let mut long: Vec<&Function> = all
        .iter()
        .filter(|f| f.lines > MAX_FUNCTION_LINES)
        .collect();
    long.sort_by_key(|f| std::cmp::Reverse(f.lines));
    let list: Vec<String> = long
        .iter()
        .map(|f| {
            let rel = f.file.strip_prefix(root()).unwrap_or(&f.file);
            format!(
                "{}:{} {} ({} lines)",
                rel.display(),
                f.line,
                f.name,
                f.lines
            )
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions longer than {MAX_FUNCTION_LINES} lines; split them at their seams:\n  {}",
        list.join("\n  ")
    );
}

#[test]
fn the_length_check_measures_bodies() {
    let code = code_only(
        "fn a() {\n    let s = \"}\";\n    let c = '}';\n}\nfn b<T: Fn() -> u8>(x: T) -> Vec<u8> where T: Copy {\n  x();\n  vec![]\n}\ntrait T { fn c(&self); }\n",
    );
    let found = functions(Path::new("x.rs"), &code);
    let shape: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|f| (f.name.as_str(), f.line, f.lines))
        .collect();
    assert_eq!(shape, vec![("a", 1, 4), ("b", 5, 4)]);
}

/// Returns the lines of `text` that are merge conflict markers, 1-based.
fn conflict_markers(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.starts_with("<<<<<<< ")
                || l.starts_with(">>>>>>> ")
                || *l == "<<<<<<<"
                || *l == ">>>>>>>"
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn no_merge_conflict_marker_is_left_in_the_sources_or_the_documents() {
    let r = root();
    let mut files = workspace_rust_files();
    for f in [
        "README.md",
        "ARCHITECTURE.md",
        "Cargo.toml",
        ".ci/run",
        "hooks/pre-push",
    ] {
        files.push(r.join(f));
    }
    let found: Vec<String> = files
        .iter()
        .filter_map(|f| Some((f, std::fs::read_to_string(f).ok()?)))
        .flat_map(|(f, text)| {
            let name = f.strip_prefix(&r).unwrap_or(f).display().to_string();
            conflict_markers(&text)
                .into_iter()
                .map(move |n| format!("{name}:{n}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "merge conflict markers left at: {found:?}"
    );
}

#[test]
fn the_marker_check_finds_markers() {
    let text =
        "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> 0d2e2dd (x)\n    \"<<<<<<< not at the start\"\n";
    assert_eq!(conflict_markers(text), [2, 6]);
}

/// What a frontend (`commands/`, `web/`) must leave to the library's run lifecycle API
/// (`crate::run`): opening the run store or a journal, and querying events by kind.
const FRONTEND_BYPASSES: [&str; 5] = [
    "Store::open",
    "StartJournal::open",
    "Journal::open",
    "events_of_kind",
    "workflow_events",
];

/// Returns `line: what` for each place `code` (comments and strings blanked) does what a
/// frontend must not: [`FRONTEND_BYPASSES`], and in the web view running this program again
/// (`current_exe`) instead of calling the library.
fn frontend_bypasses(code: &str, web: bool) -> Vec<String> {
    let web_only: &[&str] = if web { &["current_exe"] } else { &[] };
    code.lines()
        .enumerate()
        .flat_map(|(i, line)| {
            FRONTEND_BYPASSES
                .iter()
                .chain(web_only)
                .filter(move |p| line.contains(*p))
                .map(move |p| format!("{}: {p}", i + 1))
        })
        .collect()
}

/// Returns every directory named `name` among the frontends' source folders: `src/<name>`, or
/// `crates/*/src/<name>` once the sources live in a workspace of crates.
fn frontend_dirs(name: &str) -> Vec<PathBuf> {
    let r = root();
    let mut dirs = vec![r.join("src").join(name)];
    if let Ok(crates) = std::fs::read_dir(r.join("crates")) {
        dirs.extend(crates.flatten().map(|c| c.path().join("src").join(name)));
    }
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

#[test]
fn frontends_reach_runs_only_through_the_lifecycle_api() {
    let r = root();
    let mut found = Vec::new();
    let mut checked = 0;
    for (name, web) in [("commands", false), ("web", true)] {
        for dir in frontend_dirs(name) {
            for file in rust_files(&dir) {
                checked += 1;
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                let shown = file.strip_prefix(&r).unwrap_or(&file).display().to_string();
                found.extend(
                    frontend_bypasses(&code_only(&text), web)
                        .into_iter()
                        .map(|at| format!("{shown}:{at}")),
                );
            }
        }
    }
    assert!(
        checked > 20,
        "expected the frontends' files, found {checked}"
    );
    assert!(
        found.is_empty(),
        "frontends open the run store or a journal, query events by kind, or run this program again; call the run lifecycle API (`git_orchestra::run::Run`) instead: {found:#?}"
    );
}

#[test]
fn the_frontend_check_finds_bypasses() {
    let code = code_only(
        "let s = Store::open_existing(dir)?;\n// Store::open in a comment\nlet e = store.events_of_kinds(run, &[]);\nlet j = StartJournal::open(c, r)?;\nlet x = std::env::current_exe();\nlet t = \"Store::open\";\n",
    );
    assert_eq!(
        frontend_bypasses(&code, false),
        [
            "1: Store::open",
            "3: events_of_kind",
            "4: StartJournal::open",
            "4: Journal::open"
        ]
    );
    assert_eq!(
        frontend_bypasses(&code, true).last().unwrap(),
        "5: current_exe"
    );
}

/// Returns the `.rs` files under `tests/` that no `mod` item of their parent module names (the
/// binary's root is `tests/main.rs`; a folder's module file is its `mod.rs`).
fn undeclared_test_files(tests: &Path) -> Vec<PathBuf> {
    let declared = |parent: &Path, name: &str| {
        let text = std::fs::read_to_string(parent).unwrap_or_default();
        code_only(&text).lines().any(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("pub(crate) ")
                .or(l.strip_prefix("pub "))
                .unwrap_or(l);
            l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) == Some(name)
        })
    };
    let mut missing = Vec::new();
    for file in rust_files(tests) {
        let Ok(rel) = file.strip_prefix(tests) else {
            continue;
        };
        if rel == Path::new("main.rs") {
            continue;
        }
        let (dir, stem) = if file.file_name().is_some_and(|n| n == "mod.rs") {
            let folder = file.parent().unwrap_or(tests);
            let name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (
                folder.parent().unwrap_or(tests).to_path_buf(),
                name.to_string(),
            )
        } else {
            let name = file.file_stem().and_then(|n| n.to_str()).unwrap_or("");
            (
                file.parent().unwrap_or(tests).to_path_buf(),
                name.to_string(),
            )
        };
        let parent = if dir == tests {
            tests.join("main.rs")
        } else {
            dir.join("mod.rs")
        };
        if !declared(&parent, &stem) && !path_included(tests, &file) {
            missing.push(file);
        }
    }
    missing
}

/// Whether some test file loads `file` through a `#[path = "…"]` attribute.
fn path_included(tests: &Path, file: &Path) -> bool {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    rust_files(tests).iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines()
                .any(|l| l.trim_start().starts_with("#[path") && l.contains(name))
        })
    })
}

#[test]
fn every_test_file_is_part_of_the_test_binary() {
    let tests = root().join("tests");
    assert!(rust_files(&tests).len() > 50, "expected the test files");
    let missing = undeclared_test_files(&tests);
    assert!(
        missing.is_empty(),
        "test files no `mod` item declares, so they never run; add `mod <name>;` to their folder's \
         mod.rs (or to tests/main.rs for a folder): {missing:?}"
    );
}

#[test]
fn the_test_file_check_finds_a_forgotten_file() {
    let dir = std::env::temp_dir().join(format!("orchestra-layout-{}", std::process::id()));
    let area = dir.join("area");
    std::fs::create_dir_all(&area).unwrap();
    std::fs::write(dir.join("main.rs"), "mod area;\n").unwrap();
    std::fs::write(area.join("mod.rs"), "mod kept;\n// mod forgotten;\n").unwrap();
    std::fs::write(area.join("kept.rs"), "").unwrap();
    std::fs::write(area.join("forgotten.rs"), "").unwrap();
    let missing = undeclared_test_files(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(missing, vec![area.join("forgotten.rs")]);
}

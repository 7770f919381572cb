//! Checks on the shape of the source tree that keep it navigable: no import cycle between the
//! library's top-level modules, no function longer than 120 lines, no merge conflict marker
//! left in the sources or the documents, and frontends that reach runs only through the
//! library's run lifecycle API.
//!
//! They read the sources as text (comments, strings and character literals blanked out), so
//! they need neither a parser nor the compiler's help, and name the file and line to fix.

mod docs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod layers;
mod run_dir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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

/// Returns the top-level modules a file's code names through `crate::…`.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let b = code.as_bytes();
    let mut out = BTreeSet::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("crate::") {
        let at = from + p;
        from = at + "crate::".len();
        if !word_starts(b, at) {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::x, b, c::{..}}`: the first segment of each item at depth one.
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
                            out.insert(std::mem::take(&mut item));
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
                        out.insert(std::mem::take(&mut item));
                        first = false;
                    }
                }
            }
            if first && !item.is_empty() {
                out.insert(item);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out.remove("self");
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

/// Returns the module graph of the library: top-level module → the modules it names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
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
        "use crate::{git::{A, B}, plan, store::X};\n// crate::nav\nlet s = \"crate::llm\";\nfn f() { crate::names::x(); }\n",
    );
    assert_eq!(
        crate_modules(&code).into_iter().collect::<Vec<_>>(),
        vec!["git", "names", "plan", "store"]
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
    for dir in ["src", "tests", "benches"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            all.extend(functions(&file, &code_only(&text)));
        }
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
    let mut files: Vec<PathBuf> = ["src", "tests", "benches"]
        .iter()
        .flat_map(|d| rust_files(&r.join(d)))
        .collect();
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

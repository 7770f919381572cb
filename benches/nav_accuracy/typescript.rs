//! TypeScript: the rxjs sources, installed with npm into a cache directory at bench time,
//! checked against the TypeScript language service (`ts_oracle.js`). Skipped with a message
//! when node, npm or the network is unavailable.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use git_orchestra::nav::Index;

/// Files whose identifier uses and exported declarations are sampled as queries.
const EVAL: &[&str] = &[
    "src/index.ts",
    "src/operators/index.ts",
    "src/internal/Observable.ts",
    "src/internal/Subject.ts",
    "src/internal/Subscriber.ts",
    "src/internal/Subscription.ts",
    "src/internal/operators/mergeMap.ts",
    "src/internal/operators/switchMap.ts",
    "src/internal/operators/debounceTime.ts",
    "src/internal/observable/combineLatest.ts",
    "src/internal/observable/from.ts",
    "src/internal/scheduler/AsyncAction.ts",
    "src/internal/util/pipe.ts",
    "src/internal/ajax/ajax.ts",
];
const KEYWORDS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "return",
    "function",
    "new",
    "typeof",
    "catch",
    "super",
    "import",
    "export",
    "from",
    "const",
    "let",
    "var",
    "class",
    "interface",
    "type",
    "extends",
    "implements",
    "this",
    "in",
    "of",
    "as",
    "void",
    "instanceof",
    "delete",
    "await",
    "yield",
];

fn npm_cache() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join("git-orchestra-nav-accuracy-npm");
    let ready = |d: &Path| {
        d.join("node_modules/typescript/package.json").exists()
            && d.join("node_modules/rxjs/src/index.ts").exists()
    };
    if ready(&dir) {
        return Some(dir);
    }
    std::fs::create_dir_all(&dir).ok()?;
    let ok = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .args(["typescript@5", "rxjs@7.8"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (ok && ready(&dir)).then_some(dir)
}

fn ident_sites(text: &str, file: &str, max: usize) -> Vec<serde_json::Value> {
    sample_sites(text, file, max, false)
}

/// Samples identifier uses evenly over the file like [`ident_sites`], and method calls on any
/// receiver (`s.cast(…)`, `make().build()`) apart, twice as many (most are calls on arrays,
/// strings and promises, whose answers lie outside the repository and are dropped): the
/// use-sampled set.
fn use_sites(text: &str, file: &str, max: usize) -> Vec<serde_json::Value> {
    let mut out = sample_sites(text, file, max, false);
    out.extend(sample_sites(text, file, 2 * max, true));
    out
}

/// Returns up to `max` evenly spaced calls and capitalised names of the file outside strings
/// and comments; method calls instead when `methods`.
fn sample_sites(text: &str, file: &str, max: usize, methods: bool) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") || t.starts_with('*') || t.starts_with("/*") {
            continue;
        }
        let b = line.as_bytes();
        let mut j = 0;
        while j < b.len() {
            if b[j] == b'\'' || b[j] == b'"' || b[j] == b'`' {
                break; // strings and what follows them are not sampled
            }
            if b[j].is_ascii_alphabetic() || b[j] == b'_' {
                let s = j;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'$')
                {
                    j += 1;
                }
                let word = &line[s..j];
                let call = b.get(j) == Some(&b'(');
                let typ = word.as_bytes()[0].is_ascii_uppercase();
                let member = s > 0 && b[s - 1] == b'.';
                let wanted = if methods {
                    call && member
                } else {
                    (call || typ) && !member
                };
                if wanted && !KEYWORDS.contains(&word) {
                    all.push(serde_json::json!({"file": file, "line": i + 1, "col": s + 1, "name": word}));
                }
            } else {
                j += 1;
            }
        }
    }
    let step = (all.len() / max).max(1);
    all.into_iter().step_by(step).take(max).collect()
}

fn decl_sites(text: &str, file: &str, max: usize) -> Vec<serde_json::Value> {
    const HEADS: &[&str] = &[
        "export function ",
        "export class ",
        "export const ",
        "export interface ",
        "export type ",
        "export abstract class ",
    ];
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(head) = HEADS.iter().find(|h| line.starts_with(**h)) else {
            continue;
        };
        let rest = &line[head.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        if !name.is_empty() && out.iter().all(|v: &serde_json::Value| v["name"] != name) {
            out.push(serde_json::json!({"file": file, "line": i + 1, "col": head.len() + 1, "name": name}));
        }
    }
    out.truncate(max);
    out
}

/// Returns the words following `extends` or `implements` anywhere in the repository's sources
/// (`class A extends B implements C, D<E>` gives B, C, D): the types something names as its base.
fn named_bases(repo: &Path, files: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(repo.join(f)).unwrap();
        for line in text.lines() {
            for clause in ["extends ", "implements "] {
                for (i, _) in line.match_indices(clause) {
                    let rest = &line[i + clause.len()..];
                    let rest = rest.split(['{', '=', '(']).next().unwrap_or("");
                    let rest = rest.split(" implements ").next().unwrap_or("");
                    for item in rest.split(',') {
                        let word: String = item
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                            .collect();
                        if !word.is_empty() {
                            out.insert(word);
                        }
                    }
                }
            }
        }
    }
    out
}

/// Returns the class and interface declarations of `text` as implementation queries: those
/// `bases` names (at most `max_based`), then others evenly spaced (at most `max`).
fn type_sites(
    text: &str,
    file: &str,
    bases: &BTreeSet<String>,
    max_based: usize,
    max: usize,
) -> Vec<serde_json::Value> {
    let all = type_decls(text, file);
    let (based, other): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|v| bases.contains(v["name"].as_str().unwrap()));
    let step = other.len().div_ceil(max.max(1)).max(1);
    based
        .into_iter()
        .take(max_based)
        .chain(other.into_iter().step_by(step).take(max))
        .collect()
}

/// Returns every class and interface declaration of `text`.
fn type_decls(text: &str, file: &str) -> Vec<serde_json::Value> {
    const MODIFIERS: &[&str] = &["export ", "default ", "declare ", "abstract "];
    let mut all = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(m) = MODIFIERS.iter().find(|m| rest.starts_with(**m)) {
            rest = &rest[m.len()..];
        }
        let Some(after) = rest
            .strip_prefix("class ")
            .or_else(|| rest.strip_prefix("interface "))
        else {
            continue;
        };
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        if !name.is_empty() {
            let col = line.len() - after.len() + 1;
            all.push(serde_json::json!({"file": file, "line": i + 1, "col": col, "name": name}));
        }
    }
    all
}

/// Returns the source files under `dir`, relative to `root`, sorted.
fn ts_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            ts_files(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "ts") {
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// Returns the column of the first whole-word `word` in `line` outside strings, if any.
fn word_col(line: &str, word: &str) -> Option<usize> {
    let b = line.as_bytes();
    let is_id = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let mut from = 0;
    while let Some(i) = line[from..].find(word).map(|i| i + from) {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + word.len()).copied();
        if line[..i].contains(['\'', '"', '`']) {
            return None;
        }
        if !before.is_some_and(|c| is_id(c) || c == b'.') && !after.is_some_and(is_id) {
            return Some(i + 1);
        }
        from = i + word.len();
    }
    None
}

/// Returns the line and column of the first top-level declaration of `name` in `lines`.
fn decl_of(lines: &[&str], name: &str) -> Option<(usize, usize)> {
    const HEADS: &[&str] = &["function ", "const ", "class ", "let "];
    lines.iter().enumerate().find_map(|(j, l)| {
        let t = l.strip_prefix("export ").unwrap_or(l);
        let rest = HEADS.iter().find_map(|h| t.strip_prefix(h))?;
        let rest = rest.strip_prefix(name)?;
        let next = rest.bytes().next();
        (!next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$'))
            .then(|| (j + 1, word_col(l, name).unwrap_or(1)))
    })
}

/// Returns the repository path a relative specifier names from `file`, if it is a file.
fn module_file(repo: &Path, file: &str, spec: &str) -> Option<String> {
    if !spec.starts_with('.') {
        return None;
    }
    let mut parts: Vec<&str> = file.split('/').collect();
    parts.pop();
    for seg in spec.split('/') {
        match seg {
            "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    let base = parts.join("/");
    [format!("{base}.ts"), format!("{base}/index.ts")]
        .into_iter()
        .find(|c| repo.join(c).is_file())
}

/// Returns use sites of every alias bound by `import { a as b }` or `export { a as b }` in the
/// repository (the first two uses of `b` after the statement, in the same file) as definition
/// queries, and the declarations of the aliased names as reference queries (their references
/// include the uses through the alias).
fn alias_sites(repo: &Path) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let mut files = Vec::new();
    ts_files(repo, repo, &mut files);
    let (mut defs, mut refs) = (Vec::new(), Vec::new());
    let mut decls: BTreeSet<(String, usize)> = BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(repo.join(f)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !(t.starts_with("import {") || t.starts_with("export {")) {
                continue;
            }
            let Some((inner, tail)) = t.split_once('{').and_then(|(_, r)| r.split_once('}')) else {
                continue;
            };
            let spec = tail
                .split_once(" from ")
                .map(|(_, m)| m.trim().trim_end_matches(';').trim_matches(['\'', '"']));
            for item in inner.split(',') {
                let Some((name, alias)) = item.trim().split_once(" as ") else {
                    continue;
                };
                let (name, alias) = (name.trim(), alias.trim());
                if name == alias || alias.is_empty() {
                    continue;
                }
                let uses = lines.iter().enumerate().skip(i + 1).filter_map(|(j, l)| {
                    let lt = l.trim_start();
                    if lt.starts_with("//") || lt.starts_with('*') || lt.starts_with("/*") {
                        return None;
                    }
                    word_col(l, alias).map(|c| (j, c))
                });
                for (j, col) in uses.take(2) {
                    defs.push(
                        serde_json::json!({"file": f, "line": j + 1, "col": col, "name": alias}),
                    );
                }
                // The aliased declaration: in the imported module, or local for `export {}`.
                let target = match spec {
                    Some(m) => module_file(repo, f, m),
                    None if t.starts_with("export {") => Some(f.clone()),
                    None => None,
                };
                let Some(target) = target else { continue };
                let target_text = std::fs::read_to_string(repo.join(&target)).unwrap();
                let target_lines: Vec<&str> = target_text.lines().collect();
                if let Some((line, col)) = decl_of(&target_lines, name)
                    && decls.insert((target.clone(), line))
                {
                    refs.push(
                        serde_json::json!({"file": target, "line": line, "col": col, "name": name}),
                    );
                }
            }
        }
    }
    (defs, refs)
}

/// Samples queries in `eval` (identifier uses and declarations, and every import/export alias
/// of the repository), asks the TypeScript language service (`typescript`, the installed
/// module) for the answers, and scores the index of `repo` against them. Returns the tally
/// and how many queries were at aliases (definitions, references).
pub fn score_package(
    label: &str,
    repo: &Path,
    typescript: &Path,
    eval: &[&str],
    db: &Path,
) -> (super::Tally, (usize, usize)) {
    let (mut defs, mut refs, mut impls) = (Vec::new(), Vec::new(), Vec::new());
    let mut uses = Vec::new();
    let mut all = Vec::new();
    ts_files(repo, repo, &mut all);
    let bases = named_bases(repo, &all);
    let sources: Vec<&String> = all.iter().filter(|f| !f.ends_with(".d.ts")).collect();
    for f in eval {
        let text = std::fs::read_to_string(repo.join(f)).unwrap();
        defs.extend(ident_sites(&text, f, 8));
        uses.extend(use_sites(&text, f, 12));
        refs.extend(decl_sites(&text, f, 3));
        impls.extend(type_sites(&text, f, &bases, 4, 4));
    }
    // Implementations: besides those, every type some `extends`/`implements` names, in every
    // source (at most 4 per file).
    for f in sources.iter().filter(|f| !eval.contains(&f.as_str())) {
        let text = std::fs::read_to_string(repo.join(f)).unwrap();
        impls.extend(type_sites(&text, f, &bases, 4, 0));
    }
    let (alias_defs, alias_refs) = alias_sites(repo);
    let aliases = (alias_defs.len(), alias_refs.len());
    defs.extend(alias_defs);
    refs.extend(alias_refs);
    // Imports: every source file's.
    let sites = serde_json::json!({"defs": defs, "uses": uses, "refs": refs, "impls": impls, "imports": sources});
    let expected = ts_expected(repo, typescript, &sites);
    let mut index = Index::open_with_cache(repo, db).unwrap();
    index.refresh().unwrap();
    let tally = super::score(label, repo, &index, &expected);
    (tally, aliases)
}

/// Returns the TypeScript language service's answers for `sites` in `repo`: saved ones when
/// the same sites were asked with the same oracle script before (a second run of the bench asks
/// nothing), else `ts_oracle.js`'s.
fn ts_expected(repo: &Path, typescript: &Path, sites: &serde_json::Value) -> serde_json::Value {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/ts_oracle.js");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let script = std::fs::read(&oracle).unwrap();
    for b in script.iter().chain(sites.to_string().as_bytes()) {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let saved = std::env::temp_dir().join(format!("git-orchestra-nav-accuracy-ts-{h:016x}.json"));
    if let Ok(bytes) = std::fs::read(&saved) {
        return serde_json::from_slice(&bytes).unwrap();
    }
    let mut child = Command::new("node")
        .arg(&oracle)
        .arg(typescript)
        .arg(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(sites.to_string().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "ts_oracle.js failed");
    let expected: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    std::fs::write(&saved, &out.stdout).unwrap();
    expected
}

/// Returns the TypeScript files under `dir` of `repo`, largest first (ties by path),
/// declaration files and tests left out.
pub fn largest_sources(repo: &Path, dir: &Path, n: usize) -> Vec<String> {
    let mut files = Vec::new();
    ts_files(repo, dir, &mut files);
    let mut sized: Vec<(u64, String)> = files
        .into_iter()
        .filter(|f| !f.ends_with(".d.ts") && !f.contains(".test.") && !f.contains(".spec."))
        .filter(|f| !f.contains("/tests/") && !f.contains("/__tests__/"))
        .map(|f| {
            (
                std::fs::metadata(repo.join(&f))
                    .map(|m| m.len())
                    .unwrap_or(0),
                f,
            )
        })
        .collect();
    sized.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    sized.into_iter().take(n).map(|(_, f)| f).collect()
}

/// Returns the installed TypeScript module of the harness's npm cache, installing it first.
pub fn typescript_module() -> Option<std::path::PathBuf> {
    npm_cache().map(|c| c.join("node_modules/typescript"))
}

/// Runs the TypeScript part of the harness under `tmp`, or says why it is skipped.
pub fn run(tmp: &Path) {
    let Some(cache) = npm_cache() else {
        println!(
            "== typescript: skipped (npm install of typescript@5 and rxjs@7.8 failed: no npm or no network)"
        );
        return;
    };
    let repo = tmp.join("ts-repo");
    std::fs::create_dir_all(&repo).unwrap();
    let src = cache.join("node_modules/rxjs/src");
    super::sh(&repo, "cp", &["-r", src.to_str().unwrap(), "."]);
    super::commit_all(&repo);
    let tally_label = "typescript (rxjs 7.8 sources; oracle: TypeScript language service)";
    let typescript = cache.join("node_modules/typescript");
    let (_, aliases) = score_package(
        tally_label,
        &repo,
        &typescript,
        EVAL,
        &tmp.join("nav-ts.db"),
    );
    println!(
        "(of these, {} definition queries at uses of import/export aliases, {} reference queries of aliased declarations)",
        aliases.0, aliases.1
    );
}

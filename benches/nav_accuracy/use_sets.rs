//! Use-sampled implementations and imports: the implementations and the imports queries asked
//! where an agent reading code stands — at a use of a type, trait, interface or class, and at
//! a name of an import statement — scored per syntactic form beside the declaration-sampled
//! sets.
//!
//! Both sets are composed from the oracles' answers the harness already has, so no oracle is
//! asked anything more. Implementations: a use (of the `defs` and `uses` sets) whose expected
//! definition is a declaration the implementations set asked about gets that declaration's
//! expected implementations — what a language server's go-to-implementation answers at a use,
//! which first resolves the use to its declaration. Imports: a use on an import line gets the
//! target the compiler's own module resolution gives the module the statement names (the
//! `imports` set, per file).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use git_orchestra::nav::{ImportEdge, Index};

/// The forms of a use at which implementations are asked, in the order they are reported.
pub const IMPL_FORMS: [&str; 8] = [
    "base list / extends / impl Trait for",
    "impl self type",
    "annotation / type position",
    "trait bound / dyn / impl Trait",
    "isinstance / instanceof",
    "constructor or path call",
    "import path",
    "other name",
];

/// The forms of an import asked at a use, in the order they are reported.
pub const IMPORT_FORMS: [&str; 9] = [
    "relative import",
    "package __init__",
    "barrel index",
    "path alias",
    "pub use facade",
    "crate-relative path",
    "sibling crate",
    "absolute module",
    "outside the repository",
];

/// The most forms a [`Counts`] holds.
const MAX_FORMS: usize = 9;

/// Places right, given and expected per form, for a set scored as places (P/R/F1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    queries: [usize; MAX_FORMS],
    tp: [usize; MAX_FORMS],
    ours: [usize; MAX_FORMS],
    exp: [usize; MAX_FORMS],
}

impl Counts {
    /// Counts one query of form `form`: right places, places given, places expected.
    pub fn count(&mut self, form: usize, tp: usize, ours: usize, exp: usize) {
        self.queries[form] += 1;
        self.tp[form] += tp;
        self.ours[form] += ours;
        self.exp[form] += exp;
    }

    /// Adds another set's counts.
    pub fn add(&mut self, o: &Counts) {
        for i in 0..MAX_FORMS {
            self.queries[i] += o.queries[i];
            self.tp[i] += o.tp[i];
            self.ours[i] += o.ours[i];
            self.exp[i] += o.exp[i];
        }
    }

    /// Returns the queries counted.
    pub fn queries(&self) -> usize {
        self.queries.iter().sum()
    }

    /// Prints the totals under `label` and the figures of each form (named by `forms`).
    pub fn print(&self, label: &str, forms: &[&str]) {
        if self.queries() == 0 {
            return;
        }
        let sum = |v: &[usize]| v.iter().sum::<usize>();
        let (p, r) = super::prf(sum(&self.tp), sum(&self.ours), sum(&self.exp));
        println!(
            "use-sampled {label}: {} queries, {} places expected, precision {p:.3}, recall {r:.3}, F1 {:.3}",
            self.queries(),
            sum(&self.exp),
            super::f1(p, r)
        );
        for (i, form) in forms.iter().enumerate() {
            if self.queries[i] == 0 {
                continue;
            }
            let (p, r) = super::prf(self.tp[i], self.ours[i], self.exp[i]);
            println!(
                "  {label} at a {form}: {} queries, precision {p:.3}, recall {r:.3}, F1 {:.3}",
                self.queries[i],
                super::f1(p, r)
            );
        }
    }
}

/// Returns the uses of the `defs` and `uses` sets, each once: (file, line, col, name, the
/// oracle's definitions of it).
fn uses(expected: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut seen = BTreeSet::new();
    ["defs", "uses"]
        .iter()
        .flat_map(|k| expected[*k].as_array().into_iter().flatten())
        .filter(|q| {
            seen.insert((
                q["file"].as_str().unwrap_or("").to_string(),
                q["line"].as_u64(),
                q["col"].as_u64(),
                q["name"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

/// Scores implementations asked at uses whose definition the implementations set asked about.
pub fn score_impls(
    repo: &Path,
    index: &Index,
    expected: &serde_json::Value,
    verbose: bool,
) -> Counts {
    let mut out = Counts::default();
    let decls: BTreeMap<(String, u32), &serde_json::Value> = expected["impls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            let (file, line, _, _) = super::site(q);
            ((file.to_string(), line), q)
        })
        .collect();
    for q in uses(expected) {
        let (file, line, name, at) = super::site(q);
        let exp_defs = super::pairs(&q["expected"]);
        // A use the oracle binds to one declaration asked about, other than the
        // declaration itself.
        let Some(decl) = exp_defs.iter().find_map(|d| decls.get(d)) else {
            continue;
        };
        if exp_defs.contains(&(file.to_string(), line)) {
            continue;
        }
        let text = std::fs::read_to_string(repo.join(file)).unwrap_or_default();
        let source_line = text.lines().nth(line as usize - 1).unwrap_or("");
        let form = impl_form_of(file, &text, line, source_line, at.col, name);
        let exp = super::pairs(&decl["expected"]);
        let generated = if decl["generated"].is_array() {
            super::pairs(&decl["generated"])
        } else {
            BTreeSet::new()
        };
        let locs = index
            .implementations_at(Some(name), Some(&at))
            .unwrap_or_default();
        let ours: BTreeSet<(String, u32)> = locs
            .iter()
            .map(|l| (l.path.clone(), l.line))
            .filter(|p| !generated.contains(p))
            .collect();
        if verbose {
            super::print_misses(
                &format!("use impls {name} ({file}:{line}, {})", IMPL_FORMS[form]),
                &ours,
                &exp,
            );
        }
        out.count(form, ours.intersection(&exp).count(), ours.len(), exp.len());
    }
    out
}

/// Returns the index in [`IMPL_FORMS`] of the use of type `name` at one-based column `col` of
/// `line` (line number `line_no` of a file whose text is `text`).
fn impl_form_of(
    file: &str,
    text: &str,
    line_no: u32,
    line: &str,
    col: Option<u32>,
    name: &str,
) -> usize {
    if super::forms::form_of(text, line_no, line, col, name) == 8 {
        return 6;
    }
    let start = match col {
        Some(c) => (c as usize).saturating_sub(1).min(line.len()),
        None => line.find(name).unwrap_or(0),
    };
    let before = &line[..start];
    let after = line.get(start + name.len()..).unwrap_or("").trim_start();
    let trimmed = line.trim_start();
    let bt = before.trim_end();
    if before.contains("isinstance(")
        || before.contains("issubclass(")
        || bt.ends_with("instanceof")
    {
        return 4;
    }
    if file.ends_with(".rs") {
        if trimmed.starts_with("impl") || trimmed.starts_with("unsafe impl") {
            return if after.starts_with("for ") || after.starts_with('<') && line.contains(" for ")
            {
                if before.contains(" for ") { 1 } else { 0 }
            } else {
                1
            };
        }
        if bt.ends_with("dyn") || bt.ends_with("impl") || bt.ends_with('+') {
            return 3;
        }
        if trimmed.starts_with("where") || bound_before(bt) {
            return 3;
        }
    } else {
        if trimmed.starts_with("class ") && before.contains('(')
            || before.contains(" extends ")
            || before.contains(" implements ")
        {
            return 0;
        }
        if bt.ends_with("new") {
            return 5;
        }
    }
    if after.starts_with("::") || after.starts_with('(') || after.starts_with('{') {
        return 5;
    }
    if bt.ends_with(':')
        || bt.ends_with("->")
        || bt.ends_with('<')
        || bt.ends_with('|')
        || bt.ends_with('&')
        || bt.ends_with('[')
        || bt.ends_with(',') && (before.contains('<') || before.contains('['))
        || bt.ends_with("as")
    {
        return 2;
    }
    7
}

/// Returns true if and only if the text before a use ends in a generic parameter's bound
/// (`<T: `, `, R: `).
fn bound_before(bt: &str) -> bool {
    let Some(head) = bt.strip_suffix(':') else {
        return false;
    };
    let param: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let rest = head[..head.len() - param.len()].trim_end();
    param.chars().last().is_some_and(char::is_uppercase)
        && (rest.ends_with('<') || rest.ends_with(','))
}

/// One file's imports as the oracle resolves them: module as written → targets ("" outside the
/// repository), and the modules it could not resolve.
type OracleImports<'a> = (BTreeMap<&'a str, BTreeSet<&'a str>>, BTreeSet<&'a str>);

/// Scores the imports query asked at uses on import lines: the edge our imports of the file
/// give for the statement (the name's, else the line's), against the target the oracle gives
/// the module as written.
pub fn score_imports(
    repo: &Path,
    index: &Index,
    expected: &serde_json::Value,
    verbose: bool,
) -> Counts {
    let mut out = Counts::default();
    let mut by_file: BTreeMap<&str, OracleImports> = BTreeMap::new();
    for q in expected["imports"].as_array().into_iter().flatten() {
        let entry = by_file.entry(q["file"].as_str().unwrap_or("")).or_default();
        for e in q["expected"].as_array().into_iter().flatten() {
            let module = e[0].as_str().unwrap_or("");
            entry
                .0
                .entry(module)
                .or_default()
                .insert(e[1].as_str().unwrap_or(""));
        }
        for m in q["unknown"].as_array().into_iter().flatten() {
            entry.1.insert(m.as_str().unwrap_or(""));
        }
    }
    let mut sites: Vec<serde_json::Value> = uses(expected).into_iter().cloned().collect();
    sites.extend(import_sites(repo, &sites));
    for q in &sites {
        let (file, line, name, at) = super::site(q);
        let text = std::fs::read_to_string(repo.join(file)).unwrap_or_default();
        let source_line = text.lines().nth(line as usize - 1).unwrap_or("");
        if super::forms::form_of(&text, line, source_line, at.col, name) != 8 {
            continue;
        }
        let Some((modules, unknown)) = by_file.get(file) else {
            continue;
        };
        let edges = index.imports_of(file).unwrap_or_default();
        let named = |e: &&ImportEdge| e.name == name || e.alias == name;
        let mut mine: Vec<&ImportEdge> = edges
            .iter()
            .filter(|e| e.line == line)
            .filter(named)
            .collect();
        if mine.is_empty() {
            mine = edges.iter().filter(|e| e.line == line).collect();
        }
        if mine.is_empty() {
            mine = edges.iter().filter(named).collect();
        }
        // One answer per module the statement names, as the oracle keys them.
        let ours: BTreeMap<&str, &str> = mine
            .iter()
            .map(|e| (e.module.as_str(), e.target.as_deref().unwrap_or("")))
            .collect();
        if ours.keys().any(|m| unknown.contains(m)) {
            continue;
        }
        if ours.is_empty() {
            // A line no module of the oracle's is written on is no import it saw (an import
            // in a docstring's example, prose starting with "from").
            if !modules
                .keys()
                .any(|m| !m.is_empty() && source_line.contains(m))
            {
                continue;
            }
            if verbose {
                println!("use imports {name} ({file}:{line}): no edge");
            }
            out.count(import_form(file, source_line, "", "", None), 0, 0, 1);
            continue;
        }
        for (module, target) in ours {
            let exp = modules.get(module);
            let form = import_form(
                file,
                source_line,
                module,
                exp.and_then(|t| t.iter().next()).copied().unwrap_or(target),
                Some(repo),
            );
            let hit = exp.is_some_and(|t| t.contains(target));
            if verbose && !hit {
                println!(
                    "use imports {name} ({file}:{line}, {}): ours {module} -> {target:?}, expected {exp:?}",
                    IMPORT_FORMS[form]
                );
            }
            out.count(form, usize::from(hit), 1, 1);
        }
    }
    out
}

/// Import statements sampled per file of the definitions set.
const IMPORTS_PER_FILE: usize = 8;

/// Returns more uses on import lines than the oracles' samples hold: in each file the `sites`
/// ask about, up to [`IMPORTS_PER_FILE`] import statements spread evenly, each asked at the
/// last name it imports; lines `sites` already has are left out.
fn import_sites(repo: &Path, sites: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let files: BTreeSet<&str> = sites.iter().filter_map(|q| q["file"].as_str()).collect();
    let asked: BTreeSet<(&str, u64)> = sites
        .iter()
        .filter_map(|q| Some((q["file"].as_str()?, q["line"].as_u64()?)))
        .collect();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(repo.join(file)).unwrap_or_default();
        let found: Vec<(usize, usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(i, _)| !asked.contains(&(file, *i as u64 + 1)))
            .filter_map(|(i, l)| imported_name(l).map(|(col, name)| (i + 1, col, name)))
            .collect();
        let step = found.len().div_ceil(IMPORTS_PER_FILE).max(1);
        for (line, col, name) in found.into_iter().step_by(step) {
            out.push(serde_json::json!({"file": file, "line": line, "col": col, "name": name}));
        }
    }
    out
}

/// Returns the one-based column and the text of the last name an import statement's line
/// imports (`from a.b import c` → `c`, `use a::{b, C};` → `C`, `import { x } from "./m"` →
/// `x`), when the line starts one.
fn imported_name(line: &str) -> Option<(usize, &str)> {
    const WORDS: &[&str] = &[
        "import", "from", "use", "pub", "crate", "as", "type", "export", "extern", "self", "super",
        "in", "_",
    ];
    // A statement going on over more lines names its module on another line than its names.
    let code = line.split(" #").next().unwrap_or(line).trim_end();
    if super::forms::form_of(line, 1, line, None, "") != 8
        || code.ends_with(['(', '{', ',', '\\'])
        || !is_statement(code.trim_start())
    {
        return None;
    }
    let mut last = None;
    let mut quoted = None;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quoted {
            if c == q {
                quoted = None;
            }
            i += 1;
            continue;
        }
        if c == b'"' || c == b'\'' || c == b'`' {
            quoted = Some(c);
        } else if c == b'#' || line[i..].starts_with("//") {
            break;
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'$')
            {
                i += 1;
            }
            let word = &line[start..i];
            if !WORDS.contains(&word) {
                last = Some((start + 1, word));
            }
            continue;
        }
        i += 1;
    }
    last
}

/// Returns true if and only if an import line reads as a statement rather than prose that
/// starts like one (a docstring's "import time of Click down", "from which the value …"):
/// Python's `from M import …` or `import a.b[ as c][, …]`, a Rust `use` or `extern crate`
/// ending in `;`, a TypeScript import naming its module in quotes.
fn is_statement(code: &str) -> bool {
    let dotted = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    };
    if let Some(rest) = code.strip_prefix("from ") {
        return rest
            .split_once(" import ")
            .is_some_and(|(m, _)| dotted(m.trim()));
    }
    if code.ends_with(';') || code.contains(['"', '\'', '`']) {
        return true;
    }
    if let Some(rest) = code.strip_prefix("import ") {
        return rest.split(',').all(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            match words.as_slice() {
                [m] => dotted(m),
                [m, "as", a] => dotted(m) && dotted(a),
                _ => false,
            }
        });
    }
    false
}

/// Returns the index in [`IMPORT_FORMS`] of an import of `module` (as written) on `line` of
/// `file`, whose expected target is `target` ("" outside the repository).
fn import_form(file: &str, line: &str, module: &str, target: &str, repo: Option<&Path>) -> usize {
    let trimmed = line.trim_start();
    if file.ends_with(".rs") {
        if trimmed.starts_with("pub use") || trimmed.starts_with("pub(crate) use") {
            return 4;
        }
        let first = module.split("::").next().unwrap_or("");
        if ["crate", "self", "super"].contains(&first) {
            return 5;
        }
        if target.is_empty() {
            return 8;
        }
        return 6;
    }
    if target.is_empty() {
        return 8;
    }
    if file.ends_with(".py") {
        if target.ends_with("__init__.py") {
            return 1;
        }
        return if module.starts_with('.') { 0 } else { 7 };
    }
    if !module.starts_with('.') {
        return 3;
    }
    let barrel = target.ends_with("/index.ts")
        || target.ends_with("/index.tsx")
        || repo
            .and_then(|r| std::fs::read_to_string(r.join(target)).ok())
            .is_some_and(|t| {
                t.lines()
                    .any(|l| l.trim_start().starts_with("export * from"))
            });
    if barrel { 2 } else { 0 }
}

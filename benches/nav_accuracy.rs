//! Accuracy harness: navigation answers on real code checked against compiler-grade tools where
//! one is available — not grep. Python: a slice of the installed standard library against jedi.
//! TypeScript: the rxjs sources (installed with npm at bench time) against the TypeScript
//! language service. Rust: hand-checked expected sets over `globset`, `memchr` and `indexmap`
//! (regression sets); the held-out Rust repositories have rust-analyzer as their oracle
//! (`heldout_rust.rs`). Reports precision and recall per language and query kind, and the bytes
//! of our answers against `git grep -w`.
//!
//! Run with `cargo bench --bench nav_accuracy` (needs `python3 -m pip install jedi`; npm and
//! network for TypeScript, which is skipped with a message when unavailable).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use git_orchestra::nav::tools::DEFAULT_MAX_CHARS;
use git_orchestra::nav::{At, Detail, Index, Resolution, render_locations_at, render_places};

#[path = "nav_accuracy/forms.rs"]
mod forms;
#[path = "nav_accuracy/heldout.rs"]
mod heldout;
#[path = "nav_accuracy/heldout_rust.rs"]
mod heldout_rust;
#[path = "nav_accuracy/rust.rs"]
mod rust;
#[path = "nav_accuracy/sets.rs"]
mod sets;
#[path = "nav_accuracy/typescript.rs"]
mod typescript;
#[path = "nav_accuracy/use_sets.rs"]
mod use_sets;

use sets::{EVAL, TREE};

fn sh(dir: &Path, prog: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@e")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@e")
        .output()
        .unwrap();
    assert!(
        out.status.success() || prog == "git" && args[0] == "grep",
        "{prog} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn prf(tp: usize, ours: usize, expected: usize) -> (f64, f64) {
    let p = if ours == 0 {
        1.0
    } else {
        tp as f64 / ours as f64
    };
    let r = if expected == 0 {
        1.0
    } else {
        tp as f64 / expected as f64
    };
    (p, r)
}

fn main() {
    // `NAV_ACC_ONLY=heldout-rust` (or `heldout-python`, `heldout-typescript`) scores that
    // held-out set alone.
    match std::env::var("NAV_ACC_ONLY").as_deref() {
        Ok("heldout-rust") => {
            heldout_rust::run(tempfile::tempdir().unwrap().path());
            return;
        }
        Ok("heldout-python") => {
            heldout::run(tempfile::tempdir().unwrap().path());
            return;
        }
        Ok("heldout-typescript") => {
            heldout::run_typescript(tempfile::tempdir().unwrap().path());
            return;
        }
        _ => {}
    }
    let stdlib = String::from_utf8(sh(
        Path::new("."),
        "python3",
        &[
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ],
    ))
    .unwrap();
    let stdlib = Path::new(stdlib.trim());
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for item in TREE {
        sh(
            &repo,
            "cp",
            &["-r", stdlib.join(item).to_str().unwrap(), "."],
        );
    }
    sh(
        &repo,
        "find",
        &[
            ".",
            "-name",
            "__pycache__",
            "-prune",
            "-exec",
            "rm",
            "-rf",
            "{}",
            ";",
        ],
    );
    commit_all(&repo);
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy/jedi_oracle.py");
    let mut args = vec![oracle.to_str().unwrap(), repo.to_str().unwrap()];
    args.extend(EVAL);
    let mut expected: serde_json::Value =
        serde_json::from_slice(&sh(&repo, "python3", &args)).unwrap();
    add_python_imports_and_impls(&repo, EVAL, &mut expected);

    let mut index = Index::open_with_cache(&repo, &tmp.path().join("nav.db")).unwrap();
    index.refresh().unwrap();
    score("python (oracle: jedi)", &repo, &index, &expected);

    typescript::run(tmp.path());
    rust::run(tmp.path());
    let mut heldout = heldout::run(tmp.path());
    heldout.add(&heldout::run_typescript(tmp.path()));
    heldout.add(&heldout_rust::run(tmp.path()));
    if heldout.def_queries > 0 {
        heldout.print("held-out, all languages");
    }
}

/// Counts of one scored set, to add sets up.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    def_queries: usize,
    /// Top answers that are right, and top answers given.
    def_top_tp: usize,
    def_top_n: usize,
    /// Every answer: right ones, all given, and queries with a right one among them.
    def_all_tp: usize,
    def_all_n: usize,
    def_any: usize,
    ref_queries: usize,
    ref_tp: usize,
    ref_ours: usize,
    ref_exp: usize,
    /// References as `--json` lists them by default: the resolved places only.
    json_tp: usize,
    json_ours: usize,
    /// Bytes of the references answers as the agent tools give them by default, and of
    /// `git grep -n -w NAME` for the same names.
    default_bytes: usize,
    grep_bytes: usize,
    /// `git grep -w NAME`'s lines that are references, and all its lines.
    grep_tp: usize,
    grep_n: usize,
    /// Implementations: queries, right places, places given, places expected; and the
    /// resolved places only (what `--json` lists).
    impl_queries: usize,
    impl_tp: usize,
    impl_ours: usize,
    impl_exp: usize,
    impl_json_tp: usize,
    impl_json_ours: usize,
    /// Implementations the oracle gives that macros generate: expected, and found.
    impl_gen_exp: usize,
    impl_gen_tp: usize,
    /// Imports: files asked, right edges, edges given, edges expected.
    import_files: usize,
    import_tp: usize,
    import_ours: usize,
    import_exp: usize,
    /// Definitions per syntactic form of the use ([`forms::FORMS`]).
    forms: forms::Forms,
    /// The use-sampled set (uses evenly spread over each file), per form.
    uses: forms::Forms,
    /// References asked at the use-sampled set's uses, per form.
    use_refs: forms::RefForms,
    /// Implementations asked at uses of types, per form ([`use_sets::IMPL_FORMS`]).
    use_impls: use_sets::Counts,
    /// Imports asked at uses on import lines, per form ([`use_sets::IMPORT_FORMS`]).
    use_imports: use_sets::Counts,
}

impl Tally {
    /// Adds another set's counts.
    pub fn add(&mut self, o: &Tally) {
        self.def_queries += o.def_queries;
        self.forms.add(&o.forms);
        self.uses.add(&o.uses);
        self.use_refs.add(&o.use_refs);
        self.use_impls.add(&o.use_impls);
        self.use_imports.add(&o.use_imports);
        self.def_top_tp += o.def_top_tp;
        self.def_top_n += o.def_top_n;
        self.def_all_tp += o.def_all_tp;
        self.def_all_n += o.def_all_n;
        self.def_any += o.def_any;
        self.ref_queries += o.ref_queries;
        self.ref_tp += o.ref_tp;
        self.ref_ours += o.ref_ours;
        self.ref_exp += o.ref_exp;
        self.json_tp += o.json_tp;
        self.json_ours += o.json_ours;
        self.default_bytes += o.default_bytes;
        self.grep_bytes += o.grep_bytes;
        self.grep_tp += o.grep_tp;
        self.grep_n += o.grep_n;
        self.impl_queries += o.impl_queries;
        self.impl_tp += o.impl_tp;
        self.impl_ours += o.impl_ours;
        self.impl_exp += o.impl_exp;
        self.impl_json_tp += o.impl_json_tp;
        self.impl_json_ours += o.impl_json_ours;
        self.impl_gen_exp += o.impl_gen_exp;
        self.impl_gen_tp += o.impl_gen_tp;
        self.import_files += o.import_files;
        self.import_tp += o.import_tp;
        self.import_ours += o.import_ours;
        self.import_exp += o.import_exp;
    }

    /// Prints the figures: top-answer precision and recall, precision over every answer
    /// given, references' precision, recall and F1.
    pub fn print(&self, label: &str) {
        println!("== {label}");
        let (p, r) = prf(self.def_top_tp, self.def_top_n, self.def_queries);
        let (pa, _) = prf(self.def_all_tp, self.def_all_n, self.def_queries);
        let (_, ra) = prf(self.def_any, self.def_queries, self.def_queries);
        println!(
            "definitions: {} queries, precision {p:.3}, recall {r:.3} (top answer); every answer given: precision {pa:.3}, recall {ra:.3}",
            self.def_queries
        );
        self.forms.print(false);
        if self.uses.queries() > 0 {
            self.uses.print(true);
        }
        if self.use_refs.queries() > 0 {
            self.use_refs.print();
        }
        let (p, r) = prf(self.ref_tp, self.ref_ours, self.ref_exp);
        println!(
            "references: {} queries, precision {p:.3}, recall {r:.3}, F1 {:.3}",
            self.ref_queries,
            f1(p, r)
        );
        print_json_refs(self.json_tp, self.json_ours, self.ref_exp);
        let (gp, gr) = prf(self.grep_tp, self.grep_n, self.ref_exp);
        println!(
            "references' bytes as the agent tools answer by default: {:.1}% of grep -w's ({} of {} bytes); grep -w itself: precision {gp:.3}, recall {gr:.3}, F1 {:.3}",
            100.0 * self.default_bytes as f64 / self.grep_bytes.max(1) as f64,
            self.default_bytes,
            self.grep_bytes,
            f1(gp, gr)
        );
        self.print_impls_imports();
    }

    /// Prints implementations' and imports' figures, when the set has them.
    fn print_impls_imports(&self) {
        if self.impl_queries > 0 {
            let (p, r) = prf(self.impl_tp, self.impl_ours, self.impl_exp);
            let (jp, jr) = prf(self.impl_json_tp, self.impl_json_ours, self.impl_exp);
            println!(
                "implementations: {} queries, {} places expected, precision {p:.3}, recall {r:.3}, F1 {:.3}; resolved only: precision {jp:.3}, recall {jr:.3}, F1 {:.3}",
                self.impl_queries,
                self.impl_exp,
                f1(p, r),
                f1(jp, jr)
            );
            if self.impl_gen_exp > 0 {
                let (_, r) = prf(
                    self.impl_tp + self.impl_gen_tp,
                    self.impl_ours + self.impl_gen_tp,
                    self.impl_exp + self.impl_gen_exp,
                );
                println!(
                    "implementations macros generate (not scored above): {} more places, {} found; recall counting them {r:.3}",
                    self.impl_gen_exp, self.impl_gen_tp
                );
            }
        }
        if self.import_files > 0 {
            let (p, r) = prf(self.import_tp, self.import_ours, self.import_exp);
            println!(
                "imports: {} files, {} edges expected, precision {p:.3}, recall {r:.3}, F1 {:.3}",
                self.import_files,
                self.import_exp,
                f1(p, r)
            );
        }
        self.use_impls
            .print("implementations", &use_sets::IMPL_FORMS);
        self.use_imports.print("imports", &use_sets::IMPORT_FORMS);
    }
}

/// Prints what `ours` has that `expected` lacks and the reverse, when either is not empty.
fn print_misses<T: Ord + std::fmt::Debug>(what: &str, ours: &BTreeSet<T>, expected: &BTreeSet<T>) {
    let extra: Vec<_> = ours.difference(expected).collect();
    let missed: Vec<_> = expected.difference(ours).collect();
    if !extra.is_empty() || !missed.is_empty() {
        println!("{what}: extra {extra:?} missed {missed:?}");
    }
}

fn f1(p: f64, r: f64) -> f64 {
    2.0 * p * r / (p + r).max(1e-9)
}

/// Prints references' figures over the resolved places only (what `--json` lists unless
/// candidates are asked for).
fn print_json_refs(tp: usize, ours: usize, expected: usize) {
    let (p, r) = prf(tp, ours, expected);
    let f1 = 2.0 * p * r / (p + r).max(1e-9);
    println!(
        "references, resolved only (as --json lists them): precision {p:.3}, recall {r:.3}, F1 {f1:.3}"
    );
}

/// Adds to `expected` the imports of every Python file of `repo`, resolved by the
/// interpreter's import machinery (`import_oracle.py`), and the subclasses of the classes the
/// rule of `jedi_impls_oracle.py` picks in `eval`, resolved by jedi.
fn add_python_imports_and_impls(repo: &Path, eval: &[&str], expected: &mut serde_json::Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/nav_accuracy");
    let imports: serde_json::Value = serde_json::from_slice(&sh(
        repo,
        "python3",
        &[
            dir.join("import_oracle.py").to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
    ))
    .unwrap();
    expected["imports"] = imports["imports"].clone();
    let oracle = dir.join("jedi_impls_oracle.py");
    let mut args = vec![oracle.to_str().unwrap(), repo.to_str().unwrap()];
    args.extend(eval);
    let impls: serde_json::Value = serde_json::from_slice(&sh(repo, "python3", &args)).unwrap();
    expected["impls"] = impls["impls"].clone();
}

/// Builds a committed git repository at `repo` from its current files.
fn commit_all(repo: &Path) {
    sh(repo, "git", &["init", "-q", "-b", "main"]);
    sh(repo, "git", &["add", "-A"]);
    sh(repo, "git", &["commit", "-q", "-m", "eval"]);
}

fn pairs(v: &serde_json::Value) -> BTreeSet<(String, u32)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[0].as_str().unwrap().to_string(),
                e[1].as_u64().unwrap() as u32,
            )
        })
        .collect()
}

/// Scores our index against `expected` ({"defs": [...], "refs": [...]}, each entry with file,
/// line, name and expected [path, line] pairs) and prints P/R per kind and bytes against grep.
fn score(label: &str, repo: &Path, index: &Index, expected: &serde_json::Value) -> Tally {
    println!("== {label}");
    let verbose = std::env::var_os("NAV_ACC_VERBOSE").is_some();
    let mut tally = Tally::default();

    score_defs(repo, index, expected, verbose, &mut tally);
    if let Some(uses) = expected.get("uses").filter(|u| u.is_array()) {
        let mut t = Tally::default();
        println!("use-sampled (evenly over each file's uses):");
        score_defs(
            repo,
            index,
            &serde_json::json!({ "defs": uses }),
            verbose,
            &mut t,
        );
        tally.uses = t.forms;
    }
    if let Some(list) = expected.get("use_refs").and_then(|u| u.as_array()) {
        let seen = seen_lines(expected);
        tally.use_refs = score_use_refs(repo, index, list, seen.as_ref(), verbose);
        tally.use_refs.print();
    }

    // References of top-level definitions.
    let (mut tp, mut ours_n, mut exp_n, mut rq) = (0, 0, 0, 0);
    let (mut our_bytes, mut our_loc_bytes, mut grep_bytes) = (0usize, 0usize, 0usize);
    let mut default_bytes = 0usize;
    for q in expected["refs"].as_array().unwrap() {
        let file = q["file"].as_str().unwrap();
        let line = q["line"].as_u64().unwrap() as u32;
        let name = q["name"].as_str().unwrap();
        let Some(id) = index.def_at(file, line) else {
            continue;
        };
        let exp = pairs(&q["expected"]);
        let locs = index.references_of(id);
        let mut ours: BTreeSet<(String, u32)> =
            locs.iter().map(|l| (l.path.clone(), l.line)).collect();
        ours.insert((file.to_string(), line)); // the oracles count the definition itself
        if verbose {
            print_misses(&format!("refs {name} ({file}:{line})"), &ours, &exp);
        }
        let mut resolved: BTreeSet<(String, u32)> = locs
            .iter()
            .filter(|l| l.resolution == Resolution::Resolved)
            .map(|l| (l.path.clone(), l.line))
            .collect();
        resolved.insert((file.to_string(), line));
        tally.json_tp += resolved.intersection(&exp).count();
        tally.json_ours += resolved.len();
        tp += ours.intersection(&exp).count();
        ours_n += ours.len();
        exp_n += exp.len();
        rq += 1;
        our_bytes +=
            render_locations_at(&format!("references to {name}"), &locs, Detail::Full, false).len();
        our_loc_bytes += render_locations_at(
            &format!("references to {name}"),
            &locs,
            Detail::Locations,
            false,
        )
        .len();
        default_bytes += render_places(
            &format!("references to {name}"),
            &locs,
            DEFAULT_MAX_CHARS,
            false,
            false,
        )
        .text
        .len();
        let grep = sh(repo, "git", &["grep", "-n", "-w", name]);
        grep_bytes += grep.len();
        // grep's own places, scored like ours.
        let grep_places: BTreeSet<(String, u32)> = String::from_utf8_lossy(&grep)
            .lines()
            .filter_map(|l| {
                let mut parts = l.splitn(3, ':');
                let path = parts.next()?;
                let line = parts.next()?.parse().ok()?;
                Some((path.to_string(), line))
            })
            .collect();
        tally.grep_tp += grep_places.intersection(&exp).count();
        tally.grep_n += grep_places.len();
    }
    let (p, r) = prf(tp, ours_n, exp_n);
    let f1 = 2.0 * p * r / (p + r).max(1e-9);
    println!("references: {rq} queries, precision {p:.3}, recall {r:.3}, F1 {f1:.3}");
    print_json_refs(tally.json_tp, tally.json_ours, exp_n);
    tally.ref_queries = rq;
    tally.ref_tp = tp;
    tally.ref_ours = ours_n;
    tally.ref_exp = exp_n;
    tally.default_bytes = default_bytes;
    tally.grep_bytes = grep_bytes;
    let pct = |n: usize| 100.0 * n as f64 / grep_bytes.max(1) as f64;
    println!(
        "bytes: grep -w {grep_bytes}; ours with source lines {our_bytes} ({:.1}%), locations only {our_loc_bytes} ({:.1}%), as the agent tools answer by default (budget {DEFAULT_MAX_CHARS} characters) {default_bytes} ({:.1}%)",
        pct(our_bytes),
        pct(our_loc_bytes),
        pct(default_bytes)
    );
    score_impls(index, expected, verbose, &mut tally);
    score_imports(index, expected, verbose, &mut tally);
    tally.use_impls = use_sets::score_impls(repo, index, expected, verbose);
    tally.use_imports = use_sets::score_imports(repo, index, expected, verbose);
    tally.print_impls_imports();
    tally
}

/// Returns a query's site: file, line, name, and the position to ask at — the oracle's column
/// when it gives one, as `--from FILE:LINE:COL` asks (a line may hold the name twice:
/// `Deserializer::new(read::SliceRead::new(b))`).
fn site(q: &serde_json::Value) -> (&str, u32, &str, At) {
    let file = q["file"].as_str().unwrap();
    let line = q["line"].as_u64().unwrap() as u32;
    let at = At {
        path: file.to_string(),
        line,
        col: q["col"].as_u64().map(|c| c as u32),
    };
    (file, line, q["name"].as_str().unwrap(), at)
}

/// Scores definitions at use sites (`expected["defs"]`), top answer and every answer.
fn score_defs(
    repo: &Path,
    index: &Index,
    expected: &serde_json::Value,
    verbose: bool,
    tally: &mut Tally,
) {
    let (mut tp, mut ours_n, mut exp_n, mut queries) = (0, 0, 0, 0);
    for q in expected["defs"].as_array().unwrap() {
        let (file, line, name, at) = site(q);
        let text = std::fs::read_to_string(repo.join(file)).unwrap_or_default();
        let source_line = text.lines().nth(line as usize - 1).unwrap_or("");
        let form = forms::form_of(&text, line, source_line, at.col, name);
        let exp = pairs(&q["expected"]);
        let all: Vec<(String, u32)> = index
            .definition_at(Some(name), Some(&at))
            .unwrap_or_default()
            .into_iter()
            .map(|l| (l.path, l.line))
            .collect();
        let every: BTreeSet<(String, u32)> = all.iter().cloned().collect();
        tally.def_all_tp += every.intersection(&exp).count();
        tally.def_all_n += every.len();
        tally.def_any += usize::from(every.intersection(&exp).next().is_some());
        let ours: BTreeSet<(String, u32)> = all.into_iter().take(1).collect();
        if verbose && ours.intersection(&exp).count() == 0 {
            println!("def {name} ({file}:{line}): ours {ours:?} expected {exp:?}");
        }
        let hit = ours.intersection(&exp).count().min(1);
        tally.forms.count(form, hit, ours.len());
        tp += hit;
        ours_n += ours.len();
        exp_n += 1;
        queries += 1;
    }
    let (p, r) = prf(tp, ours_n, exp_n);
    let (pa, _) = prf(tally.def_all_tp, tally.def_all_n, exp_n);
    println!(
        "definitions: {queries} queries, precision {p:.3}, recall {r:.3} (top answer); precision over every answer given {pa:.3}"
    );
    tally.forms.print(false);
    tally.def_queries = queries;
    tally.def_top_tp = tp;
    tally.def_top_n = ours_n;
}

/// Returns the lines the oracle analysed (`expected["seen_lines"]`: file → lines), when it
/// says: places elsewhere (code under a `cfg` it left off) are not scored.
fn seen_lines(expected: &serde_json::Value) -> Option<BTreeSet<(String, u32)>> {
    let files = expected.get("seen_lines")?.as_object()?;
    Some(
        files
            .iter()
            .flat_map(|(f, lines)| {
                lines
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l.as_u64())
                    .map(move |l| (f.clone(), l as u32))
            })
            .collect(),
    )
}

/// Scores references asked at uses (`use_refs`: file, line, col, name and the oracle's
/// references of what the use denotes, its declaration included) per form of the use: our
/// references at that position with the definitions the query is about; only our places on
/// `seen` lines, when given.
fn score_use_refs(
    repo: &Path,
    index: &Index,
    list: &[serde_json::Value],
    seen: Option<&BTreeSet<(String, u32)>>,
    verbose: bool,
) -> forms::RefForms {
    let mut out = forms::RefForms::default();
    for q in list {
        let (file, line, name, at) = site(q);
        let text = std::fs::read_to_string(repo.join(file)).unwrap_or_default();
        let source_line = text.lines().nth(line as usize - 1).unwrap_or("");
        let form = forms::form_of(&text, line, source_line, at.col, name);
        let exp = pairs(&q["expected"]);
        let defs = index
            .definition_at(Some(name), Some(&at))
            .unwrap_or_default();
        let refs = index
            .references_at(Some(name), Some(&at))
            .unwrap_or_default();
        let place = |l: &git_orchestra::nav::Location| (l.path.clone(), l.line);
        let judged = |p: &(String, u32)| seen.is_none_or(|s| s.contains(p));
        let ours: BTreeSet<(String, u32)> =
            defs.iter().chain(&refs).map(place).filter(judged).collect();
        let resolved: BTreeSet<(String, u32)> = defs
            .iter()
            .chain(&refs)
            .filter(|l| l.resolution == Resolution::Resolved)
            .map(place)
            .filter(judged)
            .collect();
        if verbose {
            print_misses(&format!("use refs {name} ({file}:{line})"), &ours, &exp);
        }
        out.count_bytes(
            agent_refs_answer(index, name, &at, &refs).len(),
            sh(repo, "git", &["grep", "-n", "-w", name]).len(),
        );
        out.count(
            form,
            ours.intersection(&exp).count(),
            ours.len(),
            exp.len(),
            (resolved.intersection(&exp).count(), resolved.len()),
        );
    }
    out
}

/// Returns the answer the agent tool `nav_refs` gives by default (no `max_chars`, no
/// `context`) to `{"symbol": name, "from": at}`, whose places are `refs`.
fn agent_refs_answer(
    index: &Index,
    name: &str,
    at: &At,
    refs: &[git_orchestra::nav::Location],
) -> String {
    let title = format!("references to {name}");
    let note = index.ambiguity_note(Some(name), Some(at));
    let budget =
        DEFAULT_MAX_CHARS.saturating_sub(note.as_ref().map_or(0, |n| n.chars().count() + 1));
    let text = render_places(&title, refs, budget.max(200), false, false).text;
    match note {
        Some(n) => format!("{n}\n{text}"),
        None => text,
    }
}

/// Scores implementations at the oracle's sites (`expected["impls"]`: file, line, col, name
/// and the expected [path, line] pairs, the declaration itself left out).
fn score_impls(index: &Index, expected: &serde_json::Value, verbose: bool, tally: &mut Tally) {
    for q in expected["impls"].as_array().into_iter().flatten() {
        let (file, line, name, at) = site(q);
        let exp = pairs(&q["expected"]);
        let locs = index
            .implementations_at(Some(name), Some(&at))
            .unwrap_or_default();
        // Places of macro-generated impls (Rust) are scored apart: found there, they are
        // neither right nor wrong above.
        let generated = if q["generated"].is_array() {
            pairs(&q["generated"])
        } else {
            BTreeSet::new()
        };
        let all: BTreeSet<(String, u32)> = locs.iter().map(|l| (l.path.clone(), l.line)).collect();
        tally.impl_gen_exp += generated.len();
        tally.impl_gen_tp += all.intersection(&generated).count();
        let ours: BTreeSet<(String, u32)> = all.difference(&generated).cloned().collect();
        let resolved: BTreeSet<(String, u32)> = locs
            .iter()
            .filter(|l| l.resolution == Resolution::Resolved)
            .map(|l| (l.path.clone(), l.line))
            .filter(|p| !generated.contains(p))
            .collect();
        if verbose {
            print_misses(&format!("impls {name} ({file}:{line})"), &ours, &exp);
        }
        tally.impl_queries += 1;
        tally.impl_tp += ours.intersection(&exp).count();
        tally.impl_ours += ours.len();
        tally.impl_exp += exp.len();
        tally.impl_json_tp += resolved.intersection(&exp).count();
        tally.impl_json_ours += resolved.len();
    }
}

/// Scores a file's imports (`expected["imports"]`: file, the expected [module as written, file
/// it resolves to or ""] pairs, and optionally the modules the oracle could not resolve)
/// against `Index::imports_of`.
fn score_imports(index: &Index, expected: &serde_json::Value, verbose: bool, tally: &mut Tally) {
    for q in expected["imports"].as_array().into_iter().flatten() {
        let file = q["file"].as_str().unwrap();
        let exp: BTreeSet<(String, String)> = q["expected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e[0].as_str().unwrap().to_string(),
                    e[1].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        // Modules the oracle could not resolve are not scored.
        let unknown: BTreeSet<&str> = q["unknown"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str())
            .collect();
        let ours: BTreeSet<(String, String)> = index
            .imports_of(file)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| !unknown.contains(e.module.as_str()))
            .map(|e| (e.module, e.target.unwrap_or_default()))
            .collect();
        if verbose {
            print_misses(&format!("imports {file}"), &ours, &exp);
        }
        tally.import_files += 1;
        tally.import_tp += ours.intersection(&exp).count();
        tally.import_ours += ours.len();
        tally.import_exp += exp.len();
    }
}

//! Reads task suites from files: our own format in TOML (`[[task]]` tables) or JSONL (one task
//! per line), and SWE-bench's JSONL (`instance_id`, `repo`, `base_commit`, …), into the same
//! [`Task`] values history mining yields, plus what a suite adds (setup, check, test patch).
//!
//! Reading only reads: every task is checked field by field (the repository is a local git
//! repository, the base names a commit there, the hidden tests name files) and the first bad
//! field fails the whole suite, named with its task, before anything is run or written. A
//! repository given as a URL is refused: evaluation never touches the network.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use orchestra_git::git::RepoInfo;
use serde::Serialize;
use serde_json::{Map, Value};

use super::Task;
use super::suite_fields::{Fields, Problem};

/// One task of a suite: the task as listed and judged, and what running it needs.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteTask {
    /// The task's name in the suite (`id`, or SWE-bench's `instance_id`).
    pub id: String,
    /// The local repository the task runs in.
    pub repo: PathBuf,
    /// A command run at the top of a fresh checkout before the tests (installs, builds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// A test command that decides the task by its exit status, when the suite names no
    /// FAIL_TO_PASS tests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The hidden tests as a unified diff applied at the base; never shown to an attempt.
    #[serde(skip)]
    pub test_patch: Option<String>,
    /// The task: base, objective, hidden test files, FAIL_TO_PASS and PASS_TO_PASS. Its
    /// `commit` is empty: a suite holds no solution commit.
    #[serde(flatten)]
    pub task: Task,
}

/// Why a suite file could not be read; nothing was run or changed.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("cannot read the task suite {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Format { path: PathBuf, problem: String },
    #[error("{path}: {task}: field `{field}` {problem}")]
    Task {
        path: PathBuf,
        task: String,
        field: String,
        problem: String,
    },
}

/// Where SWE-bench-style `owner/name` repositories are found: `DIR/owner__name` or `DIR/name`.
pub struct Repos<'a> {
    /// The directory given with `--repos-dir`, if any.
    pub dir: Option<&'a Path>,
}

/// Returns the tasks of the suite at `path`, in file order: TOML when its name ends in
/// `.toml`, else JSONL, each line in our format or SWE-bench's (told by `instance_id`).
/// Relative repository paths are read from the suite file's directory.
pub fn from_file(path: &Path, repos: &Repos<'_>) -> Result<Vec<SuiteTask>, SuiteError> {
    let text = fs_err::read_to_string(path).map_err(|source| SuiteError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let format = |problem: String| SuiteError::Format {
        path: path.to_path_buf(),
        problem,
    };
    let entries = if path.extension().is_some_and(|e| e == "toml") {
        toml_entries(&text).map_err(format)?
    } else {
        jsonl_entries(&text).map_err(format)?
    };
    if entries.is_empty() {
        return Err(format(
            "holds no task; give `[[task]]` tables (TOML) or one JSON object per line (JSONL)"
                .to_string(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut seen = BTreeSet::new();
    let mut tasks = Vec::with_capacity(entries.len());
    for (place, map) in entries {
        let fields = Fields::new(&map);
        let named = |p: Problem| SuiteError::Task {
            path: path.to_path_buf(),
            task: fields.label(&place),
            field: p.field,
            problem: p.problem,
        };
        let task = if map.contains_key("instance_id") {
            swe_bench(&fields, dir, repos)
        } else {
            ours(&fields, dir)
        }
        .map_err(named)?;
        if !seen.insert(task.id.clone()) {
            return Err(named(Problem::new(
                if map.contains_key("instance_id") {
                    "instance_id"
                } else {
                    "id"
                },
                format!(
                    "repeats the id `{}` of an earlier task; ids must be unique",
                    task.id
                ),
            )));
        }
        tasks.push(task);
    }
    Ok(tasks)
}

/// One task as read, before its fields are: its place in the file (`line 3`) and its fields.
type Entry = (String, Map<String, Value>);

/// Returns each `[[task]]` table of a TOML suite with its place (`task 2`).
fn toml_entries(text: &str) -> Result<Vec<Entry>, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| format!("is not valid TOML: {e}"))?;
    if let Some(key) = table.keys().find(|k| *k != "task") {
        return Err(format!(
            "unknown top-level key `{key}`: a TOML suite holds only `[[task]]` tables"
        ));
    }
    let Some(tasks) = table.get("task") else {
        return Ok(Vec::new());
    };
    let Some(tasks) = tasks.as_array() else {
        return Err("`task` must be an array of tables: write each task as `[[task]]`".into());
    };
    let mut out = Vec::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        let value = serde_json::to_value(t).map_err(|e| format!("task {}: {e}", i + 1))?;
        let Value::Object(map) = value else {
            return Err(format!("task {} is not a table", i + 1));
        };
        out.push((format!("task {}", i + 1), map));
    }
    Ok(out)
}

/// Returns each non-blank line of a JSONL suite as an object with its place (`line 3`).
fn jsonl_entries(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => out.push((format!("line {}", i + 1), map)),
            Ok(_) => return Err(format!("line {} is not a JSON object", i + 1)),
            Err(e) => return Err(format!("line {} is not valid JSON: {e}", i + 1)),
        }
    }
    Ok(out)
}

/// The fields of our own format.
const OUR_FIELDS: &[&str] = &[
    "id",
    "repo",
    "base",
    "objective",
    "test_patch",
    "tests",
    "fail_to_pass",
    "pass_to_pass",
    "check",
    "setup",
];

/// Returns a task in our own format.
fn ours(f: &Fields<'_>, dir: &Path) -> Result<SuiteTask, Problem> {
    f.only(OUR_FIELDS)?;
    let id = f.required("id")?;
    let repo = local_repo(&f.required("repo")?, dir).map_err(|p| Problem::new("repo", p))?;
    let base = base_commit(&repo, &f.required("base")?).map_err(|p| Problem::new("base", p))?;
    let objective = f.required("objective")?;
    let test_patch = f.text("test_patch")?;
    let mut tests = f.list("tests", false)?;
    if let Some(patch) = &test_patch {
        let files = patch_files(patch).map_err(|p| Problem::new("test_patch", p))?;
        if tests.is_empty() {
            tests = files;
        }
    }
    if tests.is_empty() {
        return Err(Problem::new(
            "test_patch",
            "is missing: give the hidden tests as `test_patch` (a unified diff) or `tests` (their paths)",
        ));
    }
    if let Some(bad) = tests.iter().find(|t| !inside(t)) {
        return Err(Problem::new(
            "tests",
            format!("names `{bad}`, which is not a relative path inside the repository"),
        ));
    }
    let fail_to_pass = f.list("fail_to_pass", false)?;
    let check = f.text("check")?;
    if fail_to_pass.is_empty() && check.is_none() {
        return Err(Problem::new(
            "fail_to_pass",
            "is missing: name the tests that must go from failing to passing, or give a `check` command",
        ));
    }
    let pass_to_pass = f.list("pass_to_pass", false)?;
    Ok(SuiteTask {
        id,
        repo,
        setup: f.text("setup")?,
        check,
        test_patch,
        task: task(base, objective, tests, fail_to_pass, pass_to_pass),
    })
}

/// Returns a task in SWE-bench's format; its other fields (the gold `patch`, hints, versions)
/// are ignored, the gold patch so that it can never reach an attempt.
fn swe_bench(f: &Fields<'_>, dir: &Path, repos: &Repos<'_>) -> Result<SuiteTask, Problem> {
    let id = f.required("instance_id")?;
    let name = f.required("repo")?;
    let repo = swe_bench_repo(&name, dir, repos).map_err(|p| Problem::new("repo", p))?;
    let base = base_commit(&repo, &f.required("base_commit")?)
        .map_err(|p| Problem::new("base_commit", p))?;
    let objective = f.required("problem_statement")?;
    let patch = f.required("test_patch")?;
    let tests = patch_files(&patch).map_err(|p| Problem::new("test_patch", p))?;
    let fail_to_pass = f.list("FAIL_TO_PASS", true)?;
    if fail_to_pass.is_empty() {
        return Err(Problem::new(
            "FAIL_TO_PASS",
            "is empty: a task needs at least one test that goes from failing to passing",
        ));
    }
    let pass_to_pass = f.list("PASS_TO_PASS", true)?;
    Ok(SuiteTask {
        id,
        repo,
        setup: None,
        check: None,
        test_patch: Some(patch),
        task: task(base, objective, tests, fail_to_pass, pass_to_pass),
    })
}

/// Returns the task a suite declares: valid as declared (not checked), judged per test when it
/// names FAIL_TO_PASS tests.
fn task(
    base: String,
    objective: String,
    tests: Vec<String>,
    fail_to_pass: Vec<String>,
    pass_to_pass: Vec<String>,
) -> Task {
    Task {
        valid: true,
        objective,
        base: Some(base),
        tests,
        per_test: !fail_to_pass.is_empty(),
        fail_to_pass,
        pass_to_pass,
        ..Task::default()
    }
}

/// Returns the repository `given` names, relative to `dir`; a URL or a path that is no git
/// repository is refused.
fn local_repo(given: &str, dir: &Path) -> Result<PathBuf, String> {
    if given.contains("://") || given.starts_with("git@") {
        return Err(format!(
            "is a URL (`{given}`): evaluation uses local repositories only; clone it and give its path"
        ));
    }
    let path = dir.join(given);
    if !path.is_dir() {
        return Err(format!(
            "names `{given}`, which is no directory ({})",
            path.display()
        ));
    }
    RepoInfo::discover(&path)
        .map_err(|e| format!("names `{given}`, which is no git repository: {e}"))?;
    Ok(path)
}

/// Returns the local repository of a SWE-bench `owner/name`: `DIR/owner__name` or `DIR/name`
/// under `--repos-dir`, else the name as a local path.
fn swe_bench_repo(name: &str, dir: &Path, repos: &Repos<'_>) -> Result<PathBuf, String> {
    let Some(root) = repos.dir else {
        return local_repo(name, dir).map_err(|_| {
            format!(
                "names `{name}`, which is no local repository: give `--repos-dir DIR` holding it as DIR/{}  or DIR/{}",
                name.replace('/', "__"),
                name.rsplit('/').next().unwrap_or(name)
            )
        });
    };
    let candidates = [
        root.join(name.replace('/', "__")),
        root.join(name.rsplit('/').next().unwrap_or(name)),
    ];
    match candidates.iter().find(|c| c.is_dir()) {
        Some(found) => local_repo(&found.to_string_lossy(), dir),
        None => Err(format!(
            "names `{name}`, found neither as {} nor as {}; clone it there",
            candidates[0].display(),
            candidates[1].display()
        )),
    }
}

/// Returns the full id of the commit `base` names in `repo`.
fn base_commit(repo: &Path, base: &str) -> Result<String, String> {
    let git = orchestra_git::git::Git::new(repo);
    match git.resolve_commit(base) {
        Ok(Some(id)) => Ok(id),
        Ok(None) => Err(format!("`{base}` names no commit in {}", repo.display())),
        Err(e) => Err(format!(
            "`{base}` cannot be read in {}: {e}",
            repo.display()
        )),
    }
}

/// Returns the files a unified diff changes, in order, each once.
fn patch_files(patch: &str) -> Result<Vec<String>, String> {
    let mut files: Vec<String> = Vec::new();
    let mut old = None;
    for line in patch.lines() {
        if let Some(p) = line.strip_prefix("--- ") {
            old = p.trim().strip_prefix("a/").map(str::to_string);
        } else if let Some(p) = line.strip_prefix("+++ ") {
            let new = p.trim().strip_prefix("b/").map(str::to_string);
            if let Some(file) = new.or(old.take())
                && !files.contains(&file)
            {
                files.push(file);
            }
        }
    }
    if files.is_empty() {
        return Err("names no file: give a unified diff (`--- a/<path>` / `+++ b/<path>`)".into());
    }
    match files.iter().find(|f| !inside(f)) {
        Some(bad) => Err(format!("changes `{bad}`, which is outside the repository")),
        None => Ok(files),
    }
}

/// Returns true if and only if `path` is relative and stays inside the repository.
fn inside(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.is_relative()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

//! What a repository says about itself in its own files: languages by file count, and the
//! build, test, lint and format commands its manifests, Makefile and CI workflows declare.
//!
//! Detection only reads files at the top of the worktree (and `.github/workflows/`); it runs
//! nothing. Each command names the file it came from, so a reader can check it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

/// What a command is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Build,
    Test,
    Lint,
    Format,
}

impl Purpose {
    /// Returns the purpose's name as the context file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Build => "build",
            Purpose::Test => "test",
            Purpose::Lint => "lint",
            Purpose::Format => "format",
        }
    }
}

/// One command the project declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectCommand {
    pub purpose: Purpose,
    pub command: String,
    /// The file it was read from, e.g. `Cargo.toml` or `package.json (scripts.test)`.
    pub source: String,
}

/// What detection found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// Languages with how many tracked files each, most first.
    pub languages: Vec<(String, usize)>,
    pub commands: Vec<ProjectCommand>,
    /// Commands the CI workflows run (`run:` lines), for reference.
    pub ci: Vec<String>,
    /// The CI workflow files left unread, each with why (too large, not a regular file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// Reads the facts of the worktree at `toplevel`, whose tracked files are `files`.
pub fn detect(toplevel: &Path, files: &[String]) -> Facts {
    let mut facts = Facts {
        languages: languages(files),
        ..Facts::default()
    };
    let mut add = |purpose, command: &str, source: &str| {
        facts.commands.push(ProjectCommand {
            purpose,
            command: command.to_string(),
            source: source.to_string(),
        });
    };
    let read = |name: &str| {
        crate::confine::read_text_file(
            &toplevel.join(name),
            Some(toplevel),
            crate::confine::MAX_TEXT_FILE,
        )
        .ok()
    };
    if read("Cargo.toml").is_some() {
        add(Purpose::Build, "cargo build", "Cargo.toml");
        add(Purpose::Test, "cargo test", "Cargo.toml");
        add(
            Purpose::Lint,
            "cargo clippy --all-targets -- -D warnings",
            "Cargo.toml",
        );
        add(Purpose::Format, "cargo fmt --check", "Cargo.toml");
    }
    if let Some(text) = read("package.json") {
        node(&text, runner(toplevel), &mut add);
    }
    python(&read, &mut add);
    if read("go.mod").is_some() {
        add(Purpose::Build, "go build ./...", "go.mod");
        add(Purpose::Test, "go test ./...", "go.mod");
        add(Purpose::Lint, "go vet ./...", "go.mod");
        add(Purpose::Format, "gofmt -l .", "go.mod");
    }
    if let Some(text) = read("Makefile").or_else(|| read("makefile")) {
        make(&text, &mut add);
    }
    (facts.ci, facts.skipped) = ci_commands(toplevel);
    facts
}

/// Returns the package manager a Node project uses, from its lock file.
fn runner(toplevel: &Path) -> &'static str {
    if toplevel.join("pnpm-lock.yaml").exists() {
        "pnpm"
    } else if toplevel.join("yarn.lock").exists() {
        "yarn"
    } else {
        "npm"
    }
}

/// Adds the `package.json` scripts that build, test, lint or format.
fn node(text: &str, runner: &str, add: &mut dyn FnMut(Purpose, &str, &str)) {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let Some(scripts) = json.get("scripts").and_then(|s| s.as_object()) else {
        return;
    };
    for (name, purpose) in [
        ("build", Purpose::Build),
        ("test", Purpose::Test),
        ("lint", Purpose::Lint),
        ("format", Purpose::Format),
        ("fmt", Purpose::Format),
    ] {
        if scripts.contains_key(name) {
            let command = match (runner, name) {
                ("npm", "test") => "npm test".to_string(),
                ("npm", _) => format!("npm run {name}"),
                (r, _) => format!("{r} {name}"),
            };
            add(purpose, &command, &format!("package.json (scripts.{name})"));
        }
    }
}

/// Adds what a Python project's configuration files declare: tox or nox sessions, pytest,
/// ruff, black, mypy.
fn python(read: &dyn Fn(&str) -> Option<String>, add: &mut dyn FnMut(Purpose, &str, &str)) {
    let pyproject = read("pyproject.toml").unwrap_or_default();
    let setup_cfg = read("setup.cfg").unwrap_or_default();
    let pytest_ini = read("pytest.ini").is_some();
    if read("tox.ini").is_some() {
        add(Purpose::Test, "tox", "tox.ini");
    }
    if read("noxfile.py").is_some() {
        add(Purpose::Test, "nox", "noxfile.py");
    }
    if pyproject.contains("[tool.pytest") || setup_cfg.contains("[tool:pytest]") || pytest_ini {
        let source = if pytest_ini {
            "pytest.ini"
        } else if pyproject.contains("[tool.pytest") {
            "pyproject.toml ([tool.pytest])"
        } else {
            "setup.cfg ([tool:pytest])"
        };
        add(Purpose::Test, "python -m pytest", source);
    } else if !pyproject.is_empty() && pyproject.contains("pytest") {
        add(Purpose::Test, "python -m pytest", "pyproject.toml (pytest)");
    }
    if pyproject.contains("[tool.ruff") {
        add(
            Purpose::Lint,
            "ruff check .",
            "pyproject.toml ([tool.ruff])",
        );
        add(
            Purpose::Format,
            "ruff format --check .",
            "pyproject.toml ([tool.ruff])",
        );
    }
    if pyproject.contains("[tool.black") {
        add(
            Purpose::Format,
            "black --check .",
            "pyproject.toml ([tool.black])",
        );
    }
    if pyproject.contains("[tool.mypy") {
        add(Purpose::Lint, "mypy .", "pyproject.toml ([tool.mypy])");
    }
}

/// Adds the Makefile's `build`, `test`, `check`, `lint` and `fmt`/`format` targets.
fn make(text: &str, add: &mut dyn FnMut(Purpose, &str, &str)) {
    for line in text.lines() {
        let Some((target, _)) = line.split_once(':') else {
            continue;
        };
        if line.starts_with(['\t', ' ', '#', '.']) || target.contains(['=', '$', ' ']) {
            continue;
        }
        let purpose = match target {
            "build" | "all" => Purpose::Build,
            "test" | "check" => Purpose::Test,
            "lint" => Purpose::Lint,
            "fmt" | "format" => Purpose::Format,
            _ => continue,
        };
        add(purpose, &format!("make {target}"), "Makefile");
    }
}

/// Most bytes read of one CI workflow file: a larger one is skipped (no real workflow comes
/// close), so that a repository cannot make every command that detects the project slow.
pub const MAX_CI_FILE: u64 = 1 << 20;

/// Returns the `run:` commands of the CI workflows under `.github/workflows/`, one per line,
/// without repeats, and the workflow files skipped with why.
fn ci_commands(toplevel: &Path) -> (Vec<String>, Vec<String>) {
    let dir = toplevel.join(".github/workflows");
    let Ok(entries) = fs_err::read_dir(&dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    paths.sort();
    let (mut out, mut skipped) = (Vec::new(), Vec::new());
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for path in paths {
        let text = match crate::confine::read_text_file(&path, Some(toplevel), MAX_CI_FILE) {
            Ok(text) => text,
            Err(e) => {
                let shown = path.strip_prefix(toplevel).unwrap_or(&path);
                skipped.push(format!("{}: {e}", shown.display()));
                continue;
            }
        };
        for line in text.lines() {
            let t = line.trim_start().trim_start_matches("- ");
            let Some(cmd) = t.strip_prefix("run:") else {
                continue;
            };
            let cmd = cmd.trim();
            if cmd.is_empty() || cmd == "|" || cmd == ">" || !seen.insert(cmd.to_string()) {
                continue;
            }
            out.push(cmd.to_string());
        }
    }
    (out, skipped)
}

/// Returns the languages of `files` by extension, most files first.
fn languages(files: &[String]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for f in files {
        let ext = f.rsplit_once('.').map_or("", |(_, e)| e);
        let lang = match ext {
            "rs" => "Rust",
            "py" => "Python",
            "ts" | "tsx" => "TypeScript",
            "js" | "jsx" | "mjs" | "cjs" => "JavaScript",
            "go" => "Go",
            "java" => "Java",
            "kt" => "Kotlin",
            "c" | "h" => "C",
            "cc" | "cpp" | "hpp" => "C++",
            "rb" => "Ruby",
            "sh" => "Shell",
            _ => continue,
        };
        *counts.entry(lang).or_default() += 1;
    }
    let mut out: Vec<(String, usize)> = counts
        .into_iter()
        .map(|(l, n)| (l.to_string(), n))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

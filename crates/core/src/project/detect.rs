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
    /// What a reader must know before running it (e.g. that the package must be installed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A command the project declares that is not listed, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub purpose: Purpose,
    pub command: String,
    pub source: String,
    /// Why it is not listed, e.g. that it rewrites files.
    pub why: String,
}

/// What detection found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// Languages with how many tracked files each, most first.
    pub languages: Vec<(String, usize)>,
    /// The commands by purpose (build, test, lint, format), for each the most trustworthy first:
    /// what CI runs, then what the project's task runners declare, then what its tool
    /// configuration implies (left out when either of the others names one for that purpose).
    pub commands: Vec<ProjectCommand>,
    /// Commands the project declares that are not listed (a lint command that rewrites files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// Commands the CI workflows run (`run:` lines), for reference.
    pub ci: Vec<String>,
    /// The CI workflow files left unread, each with why (too large, not a regular file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// Where a command comes from, most trustworthy first: CI proves it runs in a fresh clone, a
/// task runner is the project's own choice, tool configuration only implies a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Ci,
    Runner,
    Inferred,
}

/// The commands found so far, each with its tier, and those left out.
#[derive(Default)]
pub struct Found {
    commands: Vec<(Tier, ProjectCommand)>,
    left_out: Vec<LeftOut>,
    /// True when the project's ruff configuration sets `fix = true`.
    ruff_fixes: bool,
}

impl Found {
    /// Adds `command`, which runs itself (it is its own script).
    pub fn add(&mut self, tier: Tier, purpose: Purpose, command: &str, source: &str) {
        self.add_noted(tier, purpose, command, source, None);
    }

    /// Adds `command` with a `note` for its reader.
    pub fn add_noted(
        &mut self,
        tier: Tier,
        purpose: Purpose,
        command: &str,
        source: &str,
        note: Option<String>,
    ) {
        let command = super::shell::check_only(command, self.ruff_fixes);
        self.add_script(tier, purpose, &command, source, &command);
        if let Some((_, last)) = self.commands.last_mut()
            && last.command == command
        {
            last.note = note;
        }
    }

    /// Adds `command`, which runs `script` (a Makefile recipe, a package.json script); a lint
    /// command whose script rewrites files is left out instead.
    pub fn add_script(
        &mut self,
        tier: Tier,
        purpose: Purpose,
        command: &str,
        source: &str,
        script: &str,
    ) {
        let rewrites = (purpose == Purpose::Lint)
            .then(|| super::shell::rewrites(script, self.ruff_fixes))
            .flatten();
        if let Some(part) = rewrites {
            let why = if part == command {
                "rewrites files".to_string()
            } else {
                format!("rewrites files (`{part}`)")
            };
            self.left_out.push(LeftOut {
                purpose,
                command: command.to_string(),
                source: source.to_string(),
                why,
            });
            return;
        }
        if self.commands.iter().any(|(_, c)| c.command == command) {
            return;
        }
        self.commands.push((
            tier,
            ProjectCommand {
                purpose,
                command: command.to_string(),
                source: source.to_string(),
                note: None,
            },
        ));
    }

    /// Returns the commands by purpose (build, test, lint, format), most trustworthy first
    /// within each, without those that only configuration implies for a purpose CI or a task
    /// runner already covers; and those left out.
    fn finish(mut self) -> (Vec<ProjectCommand>, Vec<LeftOut>) {
        let declared: Vec<Purpose> = self
            .commands
            .iter()
            .filter(|(t, _)| *t != Tier::Inferred)
            .map(|(_, c)| c.purpose)
            .collect();
        self.commands
            .retain(|(t, c)| *t != Tier::Inferred || !declared.contains(&c.purpose));
        self.commands.sort_by_key(|(t, c)| (c.purpose, *t));
        let mut left_out = self.left_out;
        left_out.dedup();
        (
            self.commands.into_iter().map(|(_, c)| c).collect(),
            left_out,
        )
    }
}

/// Reads the facts of the worktree at `toplevel`, whose tracked files are `files`.
pub fn detect(toplevel: &Path, files: &[String]) -> Facts {
    let read = |name: &str| {
        orchestra_sys::confine::read_text_file(
            &toplevel.join(name),
            Some(toplevel),
            orchestra_sys::confine::MAX_TEXT_FILE,
        )
        .ok()
    };
    let py = super::python::Config::read(&read);
    let mut found = Found {
        ruff_fixes: py.ruff_fixes(),
        ..Found::default()
    };
    let (ci, skipped) = super::ci::commands(toplevel);
    for line in ci.iter().filter(|l| l.at_top) {
        for segment in super::shell::segments(&line.command) {
            // What follows a `cd` runs elsewhere than the top of the worktree.
            if matches!(segment.split_whitespace().next(), Some("cd" | "pushd")) {
                break;
            }
            let Some(purpose) = super::shell::purpose_of(segment) else {
                continue;
            };
            if let Some(runnable) = super::shell::outside_ci(segment)
                && super::shell::purpose_of(&runnable) == Some(purpose)
            {
                found.add(Tier::Ci, purpose, &runnable, &line.file);
            }
        }
    }
    if read("Cargo.toml").is_some() {
        let cargo = [
            (Purpose::Build, "cargo build"),
            (Purpose::Test, "cargo test"),
            (Purpose::Lint, "cargo clippy --all-targets -- -D warnings"),
            (Purpose::Format, "cargo fmt --check"),
        ];
        for (purpose, command) in cargo {
            found.add(Tier::Inferred, purpose, command, "Cargo.toml");
        }
    }
    if let Some(text) = read("package.json") {
        node(&text, runner(toplevel), &mut found);
    }
    super::python::python(&py, &read, files, &mut found);
    if read("go.mod").is_some() {
        found.add(Tier::Inferred, Purpose::Build, "go build ./...", "go.mod");
        found.add(Tier::Inferred, Purpose::Test, "go test ./...", "go.mod");
        found.add(Tier::Inferred, Purpose::Lint, "go vet ./...", "go.mod");
        found.add(Tier::Inferred, Purpose::Format, "gofmt -l .", "go.mod");
    }
    if let Some(text) = read("Makefile").or_else(|| read("makefile")) {
        recipes(&text, "make", "Makefile", &mut found);
    }
    if let Some((name, text)) = ["justfile", "Justfile", ".justfile"]
        .iter()
        .find_map(|n| Some((*n, read(n)?)))
    {
        recipes(&text, "just", name, &mut found);
    }
    let (commands, left_out) = found.finish();
    Facts {
        languages: languages(files),
        commands,
        left_out,
        ci: ci.into_iter().map(|l| l.command).collect(),
        skipped,
    }
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
fn node(text: &str, runner: &str, found: &mut Found) {
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
        if let Some(script) = scripts.get(name) {
            let command = match (runner, name) {
                ("npm", "test") => "npm test".to_string(),
                ("npm", _) => format!("npm run {name}"),
                (r, _) => format!("{r} {name}"),
            };
            let source = format!("package.json (scripts.{name})");
            found.add_script(
                Tier::Runner,
                purpose,
                &command,
                &source,
                script.as_str().unwrap_or(""),
            );
        }
    }
}

/// Adds the `build`, `test`, `check`, `lint` and `fmt`/`format` targets of a Makefile or
/// justfile (`text`, read from `file`, run by `tool`), each with its recipe.
fn recipes(text: &str, tool: &str, file: &str, found: &mut Found) {
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some((head, _)) = line.split_once(':') else {
            continue;
        };
        if line.starts_with(['\t', ' ', '#', '.', '@'])
            || head.contains(['=', '$'])
            || line.contains(":=")
        {
            continue;
        }
        // A justfile recipe may take parameters (`test *args:`); its name is the first word.
        let target = head.split_whitespace().next().unwrap_or("");
        if tool == "make" && head.trim().contains(' ') {
            continue;
        }
        let Some(purpose) = super::shell::target_purpose(target) else {
            continue;
        };
        let recipe: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with(['\t', ' ']) || l.trim().is_empty())
            .map(|l| l.trim().trim_start_matches(['@', '-']))
            .collect();
        found.add_script(
            Tier::Runner,
            purpose,
            &format!("{tool} {target}"),
            file,
            &recipe.join("\n"),
        );
    }
}

pub use super::ci::MAX_CI_FILE;

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

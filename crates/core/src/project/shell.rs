//! What a shell command line from a project's files runs: the tool behind wrappers such as
//! `python -m`, `uv run` or `npx`, what that tool is for (test, lint, …), and whether running
//! it rewrites files — so that `init` lists a CI step as the project's test command and never
//! offers a "lint" command that changes the code it checks.
//!
//! This reads words, not shell grammar: a command it does not recognise is simply not
//! classified, which leaves it in the "What CI runs" list only.

use super::detect::Purpose;

/// Returns the commands of `line`, split at `&&`, `||` and `;`, each trimmed, empty ones left out.
pub fn segments(line: &str) -> Vec<&str> {
    line.split("&&")
        .flat_map(|s| s.split("||"))
        .flat_map(|s| s.split(';'))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Returns the tool a single command runs (its file name, wrappers unwrapped) and the
/// words after it, or `None` for an empty command.
pub fn program(command: &str) -> Option<(String, Vec<&str>)> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut i = 0;
    // Environment assignments and transparent prefixes.
    while i < words.len()
        && ((words[i].contains('=') && !words[i].starts_with('-'))
            || matches!(words[i], "time" | "exec" | "env" | "sudo"))
    {
        i += 1;
    }
    loop {
        let tool = base(words.get(i)?);
        let next = words.get(i + 1).copied();
        let skip_options = |mut j: usize| {
            while words.get(j).is_some_and(|w| w.starts_with('-')) {
                j += 1;
            }
            j
        };
        i = match (tool, next) {
            (t, Some("-m")) if t.starts_with("python") => i + 2,
            ("uv" | "poetry" | "pdm" | "pipenv" | "rye", Some("run")) => skip_options(i + 2),
            ("pipx", Some("run")) => skip_options(i + 2),
            ("uvx" | "npx", _) => skip_options(i + 1),
            _ => return Some((tool.to_string(), words[i + 1..].to_vec())),
        };
    }
}

/// Returns the last path component of `word` (`/usr/bin/pytest` → `pytest`).
fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Returns what the target or script `name` of a task runner (make, just, npm scripts) is
/// for, by its name.
pub fn target_purpose(name: &str) -> Option<Purpose> {
    match name {
        "build" | "all" => Some(Purpose::Build),
        "test" | "tests" | "check" => Some(Purpose::Test),
        "lint" | "typecheck" | "type-check" | "mypy" => Some(Purpose::Lint),
        "fmt" | "format" => Some(Purpose::Format),
        _ => None,
    }
}

/// Returns what the single command `command` is for, when it is a build, test, lint or
/// format command this module knows.
pub fn purpose_of(command: &str) -> Option<Purpose> {
    let (tool, args) = program(command)?;
    let first = args.first().copied().unwrap_or("");
    let has = |flag: &str| args.contains(&flag);
    match tool.as_str() {
        "pytest" | "py.test" => Some(Purpose::Test),
        "tox" | "nox" => {
            let named = args.iter().any(|a| {
                ["lint", "typ", "mypy", "style", "ruff", "flake8"]
                    .iter()
                    .any(|k| a.to_lowercase().contains(k))
            });
            let other = args.iter().any(|a| {
                ["doc", "fmt", "format", "build", "release"]
                    .iter()
                    .any(|k| a.contains(k))
            });
            match (named, other) {
                (true, _) => Some(Purpose::Lint),
                (false, true) => None,
                (false, false) => Some(Purpose::Test),
            }
        }
        "go" => match first {
            "test" => Some(Purpose::Test),
            "build" => Some(Purpose::Build),
            "vet" => Some(Purpose::Lint),
            _ => None,
        },
        "cargo" => match first {
            "test" | "nextest" => Some(Purpose::Test),
            "build" => Some(Purpose::Build),
            "clippy" => Some(Purpose::Lint),
            "fmt" if has("--check") => Some(Purpose::Format),
            _ => None,
        },
        "npm" | "yarn" | "pnpm" | "bun" => {
            let script = if first == "run" {
                args.get(1).copied().unwrap_or("")
            } else {
                first
            };
            target_purpose(script).filter(|p| *p != Purpose::Format)
        }
        "make" | "just" => target_purpose(first),
        "ruff" => match first {
            "check" => Some(Purpose::Lint),
            "format" if has("--check") => Some(Purpose::Format),
            _ => None,
        },
        "mypy" | "pyright" | "flake8" | "pylint" | "golangci-lint" | "eslint" | "pre-commit" => {
            Some(Purpose::Lint)
        }
        "black" | "isort" | "prettier" if has("--check") => Some(Purpose::Format),
        "gofmt" if has("-l") => Some(Purpose::Format),
        _ => None,
    }
}

/// Returns the part of `script` (one command or several lines of them) that rewrites files
/// when run, if any: a `--fix`, a formatter without its check flag, pre-commit's hooks, or
/// `ruff check` where the project's ruff configuration sets `fix = true` (`ruff_fixes`).
pub fn rewrites(script: &str, ruff_fixes: bool) -> Option<String> {
    script
        .lines()
        .flat_map(segments)
        .find(|command| rewrites_one(command, ruff_fixes))
        .map(str::to_string)
}

/// Returns true if and only if the single command `command` rewrites files.
fn rewrites_one(command: &str, ruff_fixes: bool) -> bool {
    let Some((tool, args)) = program(command) else {
        return false;
    };
    let has = |flags: &[&str]| args.iter().any(|a| flags.contains(a));
    if args
        .iter()
        .any(|a| *a == "--fix" || a.starts_with("--fix=") || *a == "--fix-only")
    {
        return true;
    }
    let first = args.first().copied().unwrap_or("");
    match tool.as_str() {
        "ruff" if first == "check" => ruff_fixes && !has(&["--no-fix", "--diff"]),
        "ruff" if first == "format" => !has(&["--check", "--diff"]),
        "black" => !has(&["--check", "--diff"]),
        "isort" => !has(&["--check", "--check-only", "-c", "--diff"]),
        "prettier" => has(&["--write", "-w"]),
        "cargo" if first == "fmt" => !has(&["--check"]),
        "gofmt" | "goimports" => has(&["-w"]),
        "autopep8" | "autoflake" => has(&["-i", "--in-place"]),
        "pre-commit" | "prek" => true,
        _ => false,
    }
}

/// Returns `command` made check-only where that takes one flag: `ruff check` gets `--no-fix`
/// when the project's configuration sets `fix = true`.
pub fn check_only(command: &str, ruff_fixes: bool) -> String {
    if !ruff_fixes || command.contains("--no-fix") {
        return command.to_string();
    }
    match program(command) {
        Some((tool, args)) if tool == "ruff" && args.first() == Some(&"check") => {
            command.replacen("ruff check", "ruff check --no-fix", 1)
        }
        _ => command.to_string(),
    }
}

/// Returns `command` with what it cannot run outside CI cut off: from the first word holding
/// a `${{ … }}` expression (and the option that word is the value of), or `None` when nothing
/// of the tool's own words is left.
pub fn outside_ci(command: &str) -> Option<String> {
    if !command.contains("${{") {
        return Some(command.to_string());
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let cut = words.iter().position(|w| w.contains("${{"))?;
    let mut kept = &words[..cut];
    if kept.last().is_some_and(|w| w.starts_with('-')) {
        kept = &kept[..kept.len() - 1];
    }
    let kept = kept.join(" ");
    program(&kept).is_some().then_some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_are_unwrapped_to_the_tool_they_run() {
        assert_eq!(program("python -m pytest -q").unwrap().0, "pytest");
        assert_eq!(
            program("CI=1 uv run --frozen ruff check .").unwrap().0,
            "ruff"
        );
        assert_eq!(program("python -m pip install tox").unwrap().0, "pip");
        assert_eq!(purpose_of("python -m pip install tox"), None);
        assert_eq!(purpose_of("tox -e py"), Some(Purpose::Test));
        assert_eq!(purpose_of("nox -s lint"), Some(Purpose::Lint));
        assert_eq!(purpose_of("npm run lint"), Some(Purpose::Lint));
    }

    #[test]
    fn fixing_and_formatting_commands_are_seen_to_rewrite_files() {
        assert!(rewrites("ruff check --fix .", false).is_some());
        assert!(rewrites("ruff check .", true).is_some());
        assert!(rewrites("ruff check --no-fix .", true).is_none());
        assert!(rewrites("pip install black && black src", false).is_some());
        assert!(rewrites("pip install black\nblack --check src", false).is_none());
        assert!(rewrites("pre-commit run --all-files", false).is_some());
        assert_eq!(
            check_only("ruff check src", true),
            "ruff check --no-fix src"
        );
        assert_eq!(
            outside_ci("tox -e ${{ matrix.env }}").as_deref(),
            Some("tox")
        );
        assert_eq!(outside_ci("${{ matrix.cmd }}"), None);
    }
}

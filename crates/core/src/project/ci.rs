//! The commands a repository's GitHub Actions workflows run: every `run:` step under
//! `.github/workflows/`, one-line values and `run: |` blocks alike, each marked with whether it
//! runs at the top of the worktree (not after a `cd`, not in a step with its own
//! `working-directory:`), so that only those become the project's commands.
//!
//! This reads lines, not YAML: enough for the `run:` keys real workflows have, and bounded in
//! time by [`MAX_CI_FILE`] whatever a file holds.

use std::path::Path;

/// Most bytes read of one CI workflow file: a larger one is skipped (no real workflow comes
/// close), so that a repository cannot make every command that detects the project slow.
pub const MAX_CI_FILE: u64 = 1 << 20;

/// One command a workflow runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiLine {
    pub command: String,
    /// The workflow file, relative to the worktree.
    pub file: String,
    /// False when it runs in another directory: after a `cd` line of its block, or in a step
    /// with a `working-directory:`.
    pub at_top: bool,
}

/// Returns the commands of the CI workflows under `.github/workflows/`, without repeats, in
/// file order; and the workflow files skipped with why.
pub fn commands(toplevel: &Path) -> (Vec<CiLine>, Vec<String>) {
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
        let shown = path
            .strip_prefix(toplevel)
            .unwrap_or(&path)
            .display()
            .to_string();
        let text = match orchestra_sys::confine::read_text_file(&path, Some(toplevel), MAX_CI_FILE)
        {
            Ok(text) => text,
            Err(e) => {
                skipped.push(format!("{shown}: {e}"));
                continue;
            }
        };
        for (command, at_top) in run_lines(&text) {
            if seen.insert(command.clone()) {
                out.push(CiLine {
                    command,
                    file: shown.clone(),
                    at_top,
                });
            }
        }
    }
    (out, skipped)
}

/// Returns the commands of a workflow's `run:` keys, each with whether it runs at the top of
/// the worktree: a one-line value as it is, a block (`|`, `>`, with or without chomping
/// indicator) line by line, lines ending in `\` joined with the next, comments and blank
/// lines left out.
fn run_lines(text: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    // The block being read: its key's indentation, and whether a `cd` line moved it.
    let mut block: Option<(usize, bool)> = None;
    let mut pending = String::new();
    // Where the current step's commands begin in `out`, and the steps run elsewhere.
    let mut step = 0;
    let mut elsewhere: Vec<(usize, usize)> = Vec::new();
    let mut here_elsewhere = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some((key_indent, moved)) = block {
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            if indent > key_indent {
                let t = line.trim();
                match t.strip_suffix('\\') {
                    Some(head) => {
                        pending.push_str(head.trim_end());
                        pending.push(' ');
                    }
                    None => {
                        pending.push_str(t);
                        let command = std::mem::take(&mut pending);
                        let cd = matches!(command.split_whitespace().next(), Some("cd" | "pushd"));
                        out.push((command, !moved));
                        block = Some((key_indent, moved || cd));
                    }
                }
                continue;
            }
            block = None;
            if !pending.is_empty() {
                out.push((std::mem::take(&mut pending).trim().to_string(), !moved));
            }
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("- ") {
            if here_elsewhere {
                elsewhere.push((step, out.len()));
            }
            (step, here_elsewhere) = (out.len(), false);
        }
        let t = trimmed.trim_start_matches("- ");
        if t.starts_with("working-directory:") {
            here_elsewhere = true;
        }
        let Some(cmd) = t.strip_prefix("run:") else {
            continue;
        };
        let cmd = cmd.trim();
        if matches!(cmd, "|" | ">" | "|-" | ">-" | "|+" | ">+") {
            block = Some((indent, false));
        } else if !cmd.is_empty() {
            out.push((cmd.to_string(), true));
        }
    }
    if !pending.is_empty() {
        let moved = block.is_some_and(|(_, m)| m);
        out.push((pending.trim().to_string(), !moved));
    }
    if here_elsewhere {
        elsewhere.push((step, out.len()));
    }
    for (from, to) in elsewhere {
        out[from..to].iter_mut().for_each(|(_, top)| *top = false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_after_a_cd_or_in_another_working_directory_are_not_at_the_top() {
        let text = "jobs:\n  t:\n    steps:\n      - run: pytest\n      - name: web\n        working-directory: web\n        run: npm test\n      - run: |\n          make lint\n          cd docs\n          make test\n      - run: >\n          tox -e py \\\n          -- -q\n";
        assert_eq!(
            run_lines(text),
            [
                ("pytest", true),
                ("npm test", false),
                ("make lint", true),
                ("cd docs", true),
                ("make test", false),
                ("tox -e py -- -q", true),
            ]
            .map(|(c, top)| (c.to_string(), top))
        );
    }
}

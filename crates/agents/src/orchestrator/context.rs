//! Artifacts stored once, and the orchestrator's bounded view of them.
//!
//! Plans, diffs, reviews and test results are written in full to the run's `artifacts/`
//! directory exactly once (named by content hash); prompts for the orchestrator carry only a
//! bounded summary of each, a capped number of them, a bounded todo list and a bounded
//! history. However many packets a run has, the orchestrator's prompt stays under
//! [`ContextLimits::prompt_tokens`].

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use orchestra_nav::nav::estimate_tokens;

/// The sizes that keep the orchestrator's prompt bounded.
#[derive(Debug, Clone, Copy)]
pub struct ContextLimits {
    /// Estimated tokens of one artifact summary.
    pub summary_tokens: usize,
    /// Most artifact summaries in one prompt (the newest are kept).
    pub max_artifacts: usize,
    /// Most todo items listed; the rest are counted.
    pub max_todo: usize,
    /// Most history lines listed (the newest are kept).
    pub max_history: usize,
    /// The hard cap of the whole prompt.
    pub prompt_tokens: usize,
}

impl Default for ContextLimits {
    fn default() -> Self {
        ContextLimits {
            summary_tokens: 500,
            max_artifacts: 8,
            max_todo: 20,
            max_history: 20,
            prompt_tokens: 8_000,
        }
    }
}

/// One stored artifact: its kind, name, where the full content is, and a bounded summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Artifact {
    pub kind: String,
    pub name: String,
    pub path: PathBuf,
    pub summary: String,
    pub tokens: usize,
}

/// Stores `content` once under `dir` and returns it as an artifact with a summary of at most
/// `summary_tokens` estimated tokens.
///
/// The file name carries a hash of the content, so storing the same content again writes
/// nothing new.
pub fn store_artifact(
    dir: &Path,
    kind: &str,
    name: &str,
    content: &str,
    summary_tokens: usize,
) -> std::io::Result<Artifact> {
    let hash: String = Sha256::digest(content.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let file = format!(
        "{}-{}-{hash}.txt",
        orchestra_sys::names::sanitize(kind, 20),
        orchestra_sys::names::sanitize(name, 40)
    );
    let path = dir.join(file);
    if !path.exists() {
        fs_err::create_dir_all(dir)?;
        let tmp = path.with_extension("tmp");
        fs_err::write(&tmp, content)?;
        fs_err::rename(&tmp, &path)?;
    }
    Ok(Artifact {
        kind: kind.to_string(),
        name: name.to_string(),
        path,
        summary: summarize(content, summary_tokens),
        tokens: estimate_tokens(content),
    })
}

/// Returns `text` cut to at most `tokens` estimated tokens: its head, then a marker saying how
/// much was left out (the full text is in the artifact file).
pub fn summarize(text: &str, tokens: usize) -> String {
    if estimate_tokens(text) <= tokens {
        return text.to_string();
    }
    let marker_budget = 12;
    let keep_chars = tokens.saturating_sub(marker_budget) * 4;
    let head: String = text.chars().take(keep_chars).collect();
    let rest = estimate_tokens(text) - estimate_tokens(&head);
    format!("{head}\n[… {rest} more tokens in the artifact]")
}

/// What the orchestrator is told about the run at one moment.
pub struct OrchestratorView<'a> {
    pub objective: &'a str,
    pub state: &'a str,
    pub artifacts: &'a [Artifact],
    pub todo: &'a [String],
    pub history: &'a [String],
}

/// Returns the orchestrator's prompt for `view`, within `limits`.
pub fn orchestrator_prompt(view: &OrchestratorView<'_>, limits: &ContextLimits) -> String {
    let objective = summarize(view.objective, limits.summary_tokens);
    let mut out = format!("Objective: {objective}\nWorkflow state: {}\n", view.state);
    let skipped = view.artifacts.len().saturating_sub(limits.max_artifacts);
    out.push_str(&format!(
        "\n## Artifacts ({} stored{})\n",
        view.artifacts.len(),
        if skipped > 0 {
            format!(", the newest {} shown", limits.max_artifacts)
        } else {
            String::new()
        }
    ));
    for a in &view.artifacts[skipped..] {
        out.push_str(&format!(
            "\n### {} `{}` ({} tokens in full at {})\n{}\n",
            a.kind,
            a.name,
            a.tokens,
            a.path.display(),
            summarize(&a.summary, limits.summary_tokens)
        ));
    }
    out.push_str(&format!("\n## Todo ({})\n", view.todo.len()));
    for t in view.todo.iter().take(limits.max_todo) {
        out.push_str(&format!("- {}\n", summarize(t, 60)));
    }
    if view.todo.len() > limits.max_todo {
        out.push_str(&format!(
            "- … and {} more\n",
            view.todo.len() - limits.max_todo
        ));
    }
    let skip = view.history.len().saturating_sub(limits.max_history);
    out.push_str(&format!(
        "\n## History (last {})\n",
        view.history.len() - skip
    ));
    for h in &view.history[skip..] {
        out.push_str(&format!("- {}\n", summarize(h, 60)));
    }
    summarize(&out, limits.prompt_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_are_stored_once_and_summarized_within_budget() {
        let dir = tempfile::tempdir().unwrap();
        let big = "diff line\n".repeat(5_000);
        let a = store_artifact(dir.path(), "diff", "p1", &big, 500).unwrap();
        let b = store_artifact(dir.path(), "diff", "p1", &big, 500).unwrap();
        assert_eq!(a.path, b.path);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(std::fs::read_to_string(&a.path).unwrap(), big);
        assert!(estimate_tokens(&a.summary) <= 500, "{}", a.summary.len());
        assert!(a.summary.contains("more tokens in the artifact"));
        assert_eq!(summarize("short", 500), "short");
    }

    fn prompt_for(packets: usize, dir: &Path) -> String {
        let limits = ContextLimits::default();
        let mut artifacts = Vec::new();
        let mut todo = Vec::new();
        let mut history = Vec::new();
        for i in 0..packets {
            let diff = format!("+ change {i}\n").repeat(400 + i * 37);
            artifacts.push(store_artifact(dir, "diff", &format!("p{i}"), &diff, 500).unwrap());
            let review = format!("finding {i}: something to fix\n").repeat(100);
            artifacts.push(store_artifact(dir, "review", &format!("p{i}"), &review, 500).unwrap());
            todo.push(format!(
                "integrate packet p{i} after its review {}",
                "x".repeat(i)
            ));
            history.push(format!("packet p{i} succeeded with {} files", i % 7));
        }
        orchestrator_prompt(
            &OrchestratorView {
                objective: "Add rate limiting to the HTTP client",
                state: "executing",
                artifacts: &artifacts,
                todo: &todo,
                history: &history,
            },
            &limits,
        )
    }

    #[test]
    fn the_orchestrator_prompt_stays_bounded_as_a_run_grows_to_50_packets() {
        let dir = tempfile::tempdir().unwrap();
        let limits = ContextLimits::default();
        let sizes: Vec<usize> = [1, 5, 10, 25, 50]
            .iter()
            .map(|n| estimate_tokens(&prompt_for(*n, dir.path())))
            .collect();
        for s in &sizes {
            assert!(*s <= limits.prompt_tokens, "{sizes:?}");
        }
        // Growth stops once the caps are reached: 25 and 50 packets cost the same to within
        // the few digits their names add.
        assert!(sizes[4] <= sizes[3] + 64, "{sizes:?}");
        assert!(sizes[4] > sizes[0], "{sizes:?}");
        // Stored artifacts hold far more than the prompt shows.
        let stored: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(stored as usize / 4 > 20 * sizes[4], "{stored} vs {sizes:?}");
    }
}

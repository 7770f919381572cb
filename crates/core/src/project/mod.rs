//! The project context file, `ORCHESTRA.md`: what every agent working on the repository
//! should know — its languages, the commands that build, test, lint and format it, what CI
//! runs, its layout and its key definitions — written by `git orchestra init` from the
//! repository's own files (see [`detect`]) within a token budget.
//!
//! The generated part sits between two marker lines; `init` again replaces only that part, so
//! what people write around it is kept byte for byte. A repository without the file gets the
//! same context built in memory when a run needs it.

pub mod ci;
pub mod detect;
pub mod python;
pub mod shell;

use std::path::{Path, PathBuf};

use orchestra_nav::nav::{Index, MapOptions};

pub use detect::{Facts, LeftOut, ProjectCommand, Purpose};

/// The context file's name, at the top of the worktree.
pub const FILE: &str = "ORCHESTRA.md";
/// Default estimated-token budget of the generated part.
pub const DEFAULT_TOKENS: usize = 4_800;
/// The line that opens the generated part.
pub const BEGIN: &str = "<!-- git-orchestra:generated begin: `git orchestra init` rewrites what is between these lines -->";
/// The line that closes the generated part.
pub const END: &str = "<!-- git-orchestra:generated end -->";

/// Why the context could not be built or written.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("cannot index the repository: {0}")]
    Index(String),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to write {path}: {source}")]
    Refused {
        path: PathBuf,
        source: Box<orchestra_sys::confine::ConfineError>,
    },
    #[error(
        "{path} has a `{BEGIN}` line without its end line; fix or remove the markers and run `git orchestra init` again"
    )]
    Markers { path: PathBuf },
}

/// What `init` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    pub path: PathBuf,
    /// True when the file did not exist.
    pub created: bool,
    /// True when its content changed.
    pub changed: bool,
    pub facts: Facts,
    /// What the `init` role's model did when one was asked: `added`, or why it added nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Returns the generated part for the worktree at `toplevel`, within about `tokens`
/// estimated tokens (four characters each), and the facts it rests on.
pub fn generate(toplevel: &Path, tokens: usize) -> Result<(String, Facts), ProjectError> {
    let mut index = Index::open(toplevel).map_err(|e| ProjectError::Index(e.to_string()))?;
    index
        .refresh()
        .map_err(|e| ProjectError::Index(e.to_string()))?;
    // Every tracked file counts for languages and layout, not only those the index parses.
    let files = orchestra_git::git::Git::new(toplevel)
        .tracked_files()
        .unwrap_or_else(|_| index.files().iter().map(|f| f.path.clone()).collect());
    let facts = detect::detect(toplevel, &files);
    let mut out = String::from("## Languages\n\n");
    if facts.languages.is_empty() {
        out.push_str("- none recognised\n");
    }
    for (lang, n) in &facts.languages {
        out.push_str(&format!("- {lang}: {n} file{}\n", plural(*n)));
    }
    out.push_str("\n## Commands\n\n");
    if facts.commands.is_empty() {
        out.push_str("- none declared in the project's files\n");
    }
    for c in &facts.commands {
        let note = c
            .note
            .as_ref()
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "- {}: `{}` (from {}{note})\n",
            c.purpose.as_str(),
            c.command,
            c.source
        ));
    }
    for l in &facts.left_out {
        out.push_str(&format!(
            "- not listed: `{}` (from {}) as the {} command: it {}\n",
            l.command,
            l.source,
            l.purpose.as_str(),
            l.why
        ));
    }
    if !facts.ci.is_empty() {
        out.push_str("\n## What CI runs\n\n");
        for c in facts.ci.iter().take(20) {
            out.push_str(&format!("- `{c}`\n"));
        }
    }
    for note in &facts.skipped {
        let file = note.split_once(": ").map_or(note.as_str(), |(f, _)| f);
        out.push_str(&format!("- CI workflow `{file}` not read\n"));
    }
    out.push_str("\n## Layout\n\n");
    out.push_str(&layout(&files));
    let left = (tokens * 4).saturating_sub(out.len()) / 4;
    if left > 100 {
        let map = index.repo_map(&MapOptions {
            focus: Vec::new(),
            mentioned: Vec::new(),
            tokens: left.saturating_sub(20),
        });
        if !map.trim().is_empty() {
            out.push_str("\n## Key definitions\n\n```\n");
            out.push_str(map.trim_end());
            out.push_str("\n```\n");
        }
    }
    Ok((out, facts))
}

/// Returns `existing` (the file's text, if any) with its generated part replaced by
/// `generated`; text outside the markers is kept byte for byte, and a file without markers
/// gets the generated part appended.
pub fn merge(existing: Option<&str>, generated: &str, path: &Path) -> Result<String, ProjectError> {
    let block = format!("{BEGIN}\n{generated}{END}\n");
    let Some(text) = existing else {
        return Ok(format!(
            "# Project context\n\nWhat agents working on this repository should know. Write your own notes \
             outside the generated part; `git orchestra init` keeps them.\n\n{block}"
        ));
    };
    match (text.find(BEGIN), text.find(END)) {
        (Some(b), Some(e)) if e > b => {
            let after = text[e + END.len()..]
                .strip_prefix('\n')
                .unwrap_or(&text[e + END.len()..]);
            Ok(format!("{}{block}{after}", &text[..b]))
        }
        (None, None) => {
            let sep = if text.is_empty() || text.ends_with("\n\n") {
                ""
            } else if text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            Ok(format!("{text}{sep}{block}"))
        }
        _ => Err(ProjectError::Markers {
            path: path.to_path_buf(),
        }),
    }
}

/// Writes (or updates) `ORCHESTRA.md` at `toplevel`; with `dry_run` only says what it would do.
pub fn init(toplevel: &Path, tokens: usize, dry_run: bool) -> Result<Written, ProjectError> {
    init_with(toplevel, tokens, dry_run, None)
}

/// What a model adds to the generated part: given the detected part, the notes to add (the
/// `init` role's), or why there are none.
pub type Improve<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// Does what [`init`] does; `improve`, when given, adds a model's notes on the project's
/// architecture and conventions to the generated part (a failure is reported in
/// [`Written::model`] and the detected part is written alone).
pub fn init_with(
    toplevel: &Path,
    tokens: usize,
    dry_run: bool,
    improve: Option<Improve<'_>>,
) -> Result<Written, ProjectError> {
    let path = toplevel.join(FILE);
    // A committed ORCHESTRA.md may be a pipe or a symlink out of the repository: neither is
    // read, and the file is written only where it is, never through a symlink.
    let existing = match read_context_file(toplevel) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(ProjectError::Read { path, source }),
    };
    // With a model, detection gets two thirds of the budget and the model's notes the rest.
    let detected = if improve.is_some() {
        tokens * 2 / 3
    } else {
        tokens
    };
    let (mut generated, facts) = generate(toplevel, detected)?;
    let model = improve.map(|improve| match improve(&generated) {
        Ok(notes) if !notes.trim().is_empty() => {
            generated.push_str(&format!(
                "\n## Architecture and conventions (read from the code by the `init` role's model)\n\n{}\n",
                orchestra_sys::redact::clip(notes.trim(), (tokens - detected) * 4)
            ));
            Ok(())
        }
        Ok(_) => Err("the model wrote nothing".to_string()),
        Err(e) => Err(e),
    });
    let text = merge(existing.as_deref(), &generated, &path)?;
    let changed = existing.as_deref() != Some(text.as_str());
    if changed && !dry_run {
        let refused = |source| ProjectError::Refused {
            path: path.clone(),
            source: Box::new(source),
        };
        orchestra_sys::confine::ConfinedRoot::open(toplevel)
            .and_then(|root| root.write(FILE, text.as_bytes()))
            .map_err(refused)?;
    }
    Ok(Written {
        path,
        created: existing.is_none(),
        changed,
        facts,
        model: model.map(|r| r.err().unwrap_or_else(|| "added".to_string())),
    })
}

/// Returns the project context for agents: `ORCHESTRA.md` when the repository has one, else
/// the generated part built in memory (empty when even that fails).
pub fn context(toplevel: &Path, tokens: usize) -> String {
    match read_context_file(toplevel) {
        Ok(text) => text,
        Err(_) => generate(toplevel, tokens)
            .map(|(g, _)| g)
            .unwrap_or_default(),
    }
}

/// Returns the text of `ORCHESTRA.md` at `toplevel` when it is a regular file of bounded size
/// inside the repository.
fn read_context_file(toplevel: &Path) -> std::io::Result<String> {
    orchestra_sys::confine::read_text_file(
        &toplevel.join(FILE),
        Some(toplevel),
        orchestra_sys::confine::MAX_TEXT_FILE,
    )
}

/// Returns [`context`] of `toplevel`, worked out once per process (a run) for each worktree:
/// reviewers and consulted roles get it with every question without rebuilding it.
pub fn cached_context(toplevel: &Path, tokens: usize) -> String {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Slot = Arc<OnceLock<String>>;
    static CACHE: OnceLock<Mutex<HashMap<std::path::PathBuf, Slot>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    // One slot per repository, filled once: packets reviewed at the same moment wait for the
    // first one's reading instead of each listing the repository's files again.
    let slot = cache.lock().ok().map(|mut c| {
        c.entry(toplevel.to_path_buf())
            .or_insert_with(Default::default)
            .clone()
    });
    match slot {
        Some(slot) => slot.get_or_init(|| context(toplevel, tokens)).clone(),
        None => context(toplevel, tokens),
    }
}

/// Returns the top-level directories with how many files each holds, and the loose files.
fn layout(files: &[String]) -> String {
    let mut dirs: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut loose = Vec::new();
    for f in files {
        match f.split_once('/') {
            Some((d, _)) => *dirs.entry(d).or_default() += 1,
            None => loose.push(f.as_str()),
        }
    }
    let mut out = String::new();
    for (d, n) in dirs.iter().take(40) {
        out.push_str(&format!("- `{d}/`: {n} file{}\n", plural(*n)));
    }
    if !loose.is_empty() {
        let shown: Vec<&str> = loose.iter().take(30).copied().collect();
        out.push_str(&format!("- top-level files: {}\n", shown.join(", ")));
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_what_people_wrote_around_the_generated_part() {
        let path = Path::new("ORCHESTRA.md");
        let first = merge(None, "old\n", path).unwrap();
        assert!(first.contains(BEGIN) && first.contains("old\n") && first.contains(END));
        let edited = format!("My notes first.\n\n{first}\n## Mine\nkeep  me \n");
        let again = merge(Some(&edited), "new\n", path).unwrap();
        assert!(again.starts_with("My notes first.\n\n# Project context"));
        assert!(again.ends_with("\n## Mine\nkeep  me \n"), "{again}");
        assert!(again.contains("new\n") && !again.contains("old\n"));
        // A file without markers keeps all its text and gets the part appended.
        let plain = merge(Some("hand written"), "gen\n", path).unwrap();
        assert!(plain.starts_with("hand written\n\n"));
        assert!(plain.ends_with(&format!("gen\n{END}\n")));
        // A broken marker pair is an error, not a guess.
        assert!(merge(Some(&format!("{BEGIN}\nx\n")), "g\n", path).is_err());
    }
}

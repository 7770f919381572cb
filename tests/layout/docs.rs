//! Checks on the documents: every relative link and `#anchor` in README, the contributor
//! documents and the user guide leads somewhere, every guide page is in its table of contents,
//! README stays short, and the guide's reference pages are what the code generates today.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use super::root;

/// The command that rewrites the reference pages, named by the failure that asks for it.
const REGENERATE: &str = "cargo run --locked -- reference docs/src/reference";

/// Returns every Markdown file the link check reads: the top-level documents, each crate's
/// README and the guide.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(|f| root.join(f))
    .filter(|p| p.is_file())
    .collect();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path().join("README.md"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    crates.sort();
    assert!(crates.len() >= 5, "expected the crates' READMEs");
    out.extend(crates);
    out.extend(guide_pages(root));
    out
}

/// Returns every Markdown file under `docs/src`, sorted.
fn guide_pages(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("docs").join("src")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Returns `text` without fenced code blocks and inline code spans, lines kept.
fn prose_only(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            let mut in_code = false;
            for c in line.chars() {
                if c == '`' {
                    in_code = !in_code;
                } else if !in_code {
                    out.push(c);
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Returns the targets of the inline links and images of `text`, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_only(text).lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push((n + 1, target.to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// Returns the anchors mdBook (and GitHub) give the headings of `text`: lower case, spaces as
/// `-`, other punctuation dropped, a repeated one suffixed `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let id: String = heading
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_ascii_lowercase())
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let mut unique = id.clone();
        let mut n = 1;
        while out.contains(&unique) {
            unique = format!("{id}-{n}");
            n += 1;
        }
        out.insert(unique);
    }
    out
}

/// Returns `path` with `.` and `..` taken out, without touching the filesystem.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Returns what is wrong with the links of `file`: a missing target, a missing anchor, or a
/// guide page linking out of the guide (the built book holds only `docs/src`).
fn broken_links(root: &Path, file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return vec![format!("{}: cannot be read", file.display())];
    };
    let guide = root.join("docs").join("src");
    let name = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut out = Vec::new();
    for (line, target) in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let dest = if path.is_empty() {
            file.to_path_buf()
        } else {
            normalize(&file.parent().unwrap_or(root).join(path))
        };
        if !dest.exists() {
            out.push(format!("{name}:{line}: `{target}` leads to no file"));
            continue;
        }
        if file.starts_with(&guide) && !dest.starts_with(&guide) {
            out.push(format!(
                "{name}:{line}: `{target}` leads out of docs/src, which the built book does not hold"
            ));
        }
        if !anchor.is_empty() {
            let dest_text = std::fs::read_to_string(&dest).unwrap_or_default();
            if !anchors(&dest_text).contains(anchor) {
                out.push(format!(
                    "{name}:{line}: `{target}`: no heading there has the anchor `#{anchor}`"
                ));
            }
        }
    }
    out
}

#[test]
fn every_link_and_anchor_in_the_documents_leads_somewhere() {
    let root = root();
    let broken: Vec<String> = documents(&root)
        .iter()
        .flat_map(|f| broken_links(&root, f))
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("docs").join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("b.md"), "# B page\n\n## Use `x` here\n").unwrap();
    std::fs::write(
        src.join("a.md"),
        "# A\n\n[ok](b.md#use-x-here) [self](#a) [gone](c.md) [bad](b.md#nope)\n\
         [out](../../README.md) `[code](c.md)`\n\n```\n[fenced](c.md)\n```\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("README.md"), "x\n").unwrap();
    let found = broken_links(dir.path(), &src.join("a.md"));
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("`c.md` leads to no file"), "{found:#?}");
    assert!(
        found[1].contains("no heading there has the anchor `#nope`"),
        "{found:#?}"
    );
    assert!(found[2].contains("leads out of docs/src"), "{found:#?}");
}

#[test]
fn every_guide_page_is_in_the_table_of_contents() {
    let root = root();
    let src = root.join("docs").join("src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap_or_default();
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, t)| normalize(&src.join(t)))
        .collect();
    let missing: Vec<String> = guide_pages(&root)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "SUMMARY.md"))
        .filter(|p| !listed.contains(p))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "guide pages missing from docs/src/SUMMARY.md (the book would not show them):\n{}",
        missing.join("\n")
    );
}

#[test]
fn readme_stays_short() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines, more than 250: move detail into the user guide under docs/src"
    );
}

#[test]
fn the_reference_pages_are_what_the_code_generates() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
        .arg("reference")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "`git orchestra reference` failed");
    let committed = root.join("docs").join("src").join("reference");
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let fresh = std::fs::read_to_string(e.path()).unwrap();
        match std::fs::read_to_string(committed.join(&name)) {
            Ok(old) if old == fresh => {}
            Ok(_) => problems.push(format!("docs/src/reference/{name} is out of date")),
            Err(_) => problems.push(format!("docs/src/reference/{name} is missing")),
        }
        names.insert(name);
    }
    for e in std::fs::read_dir(&committed)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !names.contains(&name) {
            problems.push(format!(
                "docs/src/reference/{name} is no longer generated: delete it"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nregenerate with `{REGENERATE}` and commit the result",
        problems.join("\n")
    );
}

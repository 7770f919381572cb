//! Declared symbols: the definitions a packet plans to edit inside a file it shares with other
//! packets, and the lines those definitions occupy in a commit's symbol graph.
//!
//! A `symbols` entry is `path:Qualified.name` (`src/app.py:Client.send`, `src/util.rs:parse`,
//! `src/net.rs:Client::send`). The path must be a literal of the packet's `files`; the name is
//! looked up among the file's definitions at the run's base commit with the navigation
//! extractor, so the spans are those of the code every packet starts from. Each span is widened
//! upwards over the attributes, decorators and comments glued to the definition, since an edit
//! there belongs to the symbol as well.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::model::Plan;
use super::scope::Pattern;
use super::validate::PlanIssue;
use orchestra_nav::nav::{Extractor, FileFacts, Lang};

/// Unchanged lines required between two packets' symbols in one file for them to run side by
/// side: git's merge conflicts on adjacent hunks, so touching spans are not enough.
pub const LINE_MARGIN: u32 = 1;

/// One `symbols` entry split into its file (normalized like a literal scope) and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolEntry {
    pub file: String,
    /// The qualified name with `::` written as `.`.
    pub symbol: String,
}

/// A range of lines, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LineSpan {
    pub start: u32,
    pub end: u32,
}

impl LineSpan {
    /// Returns true if and only if `line` lies inside the span.
    pub fn contains(&self, line: u32) -> bool {
        self.start <= line && line <= self.end
    }
}

/// The line spans of every packet's declared symbols, per packet (plan-order index) and file.
///
/// A packet or file without an entry here is scheduled at file level, which is always safe:
/// resolution failures therefore degrade to the old rule instead of admitting a risky pair.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolSpans {
    spans: BTreeMap<(usize, String), Vec<LineSpan>>,
}

impl SymbolSpans {
    /// Returns the spans packet `packet` declared in `file`, sorted, if it declared any.
    pub fn get(&self, packet: usize, file: &str) -> Option<&[LineSpan]> {
        self.spans
            .get(&(packet, file.to_string()))
            .map(Vec::as_slice)
    }

    /// Returns true if and only if no packet has resolved symbols.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Records spans for `packet` in `file` (used by benchmarks and tests that simulate plans).
    pub fn insert(&mut self, packet: usize, file: &str, spans: Vec<LineSpan>) {
        let entry = self.spans.entry((packet, file.to_string())).or_default();
        entry.extend(spans);
        entry.sort_unstable();
    }
}

/// Returns true if and only if every span of `a` keeps at least [`LINE_MARGIN`] untouched lines
/// from every span of `b`.
pub fn apart(a: &[LineSpan], b: &[LineSpan]) -> bool {
    a.iter().all(|x| {
        b.iter()
            .all(|y| x.end + LINE_MARGIN < y.start || y.end + LINE_MARGIN < x.start)
    })
}

/// Returns the entry written as `path:Symbol`, or what is wrong with it.
pub fn parse_entry(written: &str) -> Result<SymbolEntry, String> {
    let Some((path, symbol)) = written.split_once(':') else {
        return Err("is not of the form `path:Symbol`".into());
    };
    let symbol = symbol.trim().replace("::", ".");
    if symbol.is_empty() || symbol.split('.').any(str::is_empty) {
        return Err("names no symbol after the `:`".into());
    }
    match Pattern::parse(path.trim()) {
        Ok(Pattern::Literal { path, .. }) => Ok(SymbolEntry { file: path, symbol }),
        Ok(Pattern::Glob { .. }) => Err("names a glob; symbols live in one file".into()),
        Err(problem) => Err(format!("has a file path that {problem}")),
    }
}

/// Returns the spans of every packet's declared symbols in the files at `commit` of the
/// repository at `repo_root`, and one located issue per entry that cannot be resolved.
///
/// Entries that do not parse or name a file outside the packet's `files` are skipped here
/// (`validate` reports them).
pub fn resolve(plan: &Plan, repo_root: &Path, commit: &str) -> (SymbolSpans, Vec<PlanIssue>) {
    let mut out = SymbolSpans::default();
    let mut issues = Vec::new();
    let mut files: BTreeMap<String, Result<Parsed, String>> = BTreeMap::new();
    let mut extractor = Extractor::new();
    for (i, packet) in plan.packets.iter().enumerate() {
        let scope = packet.scope().ok();
        for (k, written) in packet.symbols.iter().enumerate() {
            // Entries that do not parse or lie outside `files` are `validate`'s to report.
            let Ok(entry) = parse_entry(written) else {
                continue;
            };
            if !scope.as_ref().is_some_and(|s| s.matches(&entry.file)) {
                continue;
            }
            let parsed = files
                .entry(entry.file.clone())
                .or_insert_with(|| parse_file(&mut extractor, repo_root, commit, &entry.file));
            let located = |message: String, hint: String| PlanIssue {
                location: plan.symbol_location(i, k),
                message: format!("packet `{}`: symbol `{written}` {message}", packet.id),
                hint,
            };
            match parsed {
                Err(why) => issues.push(located(why.clone(), String::new())),
                Ok(parsed) => match parsed.spans_of(&entry.symbol) {
                    Some(spans) => out.insert(i, &entry.file, spans),
                    None => issues.push(located(
                        format!(
                            "is not defined in {} at the base commit {}",
                            entry.file,
                            &commit[..commit.len().min(12)]
                        ),
                        parsed.suggest(&entry.symbol),
                    )),
                },
            }
        }
    }
    (out, issues)
}

/// Returns the spans of `symbols` (entries of one packet, unparsable ones skipped) in `file`
/// at `commit`, or `None` when the file cannot be read or parsed or none of them is defined.
pub fn spans_at(
    repo_root: &Path,
    commit: &str,
    file: &str,
    symbols: &[SymbolEntry],
) -> Option<Vec<LineSpan>> {
    let parsed = parse_file(&mut Extractor::new(), repo_root, commit, file).ok()?;
    let mut spans: Vec<LineSpan> = symbols
        .iter()
        .filter(|e| e.file == file)
        .filter_map(|e| parsed.spans_of(&e.symbol))
        .flatten()
        .collect();
    spans.sort_unstable();
    (!spans.is_empty()).then_some(spans)
}

/// One file's text and facts at a commit.
struct Parsed {
    lines: Vec<String>,
    facts: FileFacts,
}

fn parse_file(
    extractor: &mut Extractor,
    repo_root: &Path,
    commit: &str,
    file: &str,
) -> Result<Parsed, String> {
    let Some(lang) = Lang::from_path(file) else {
        return Err(format!(
            "is in {file}, which the symbol graph does not parse; declare symbols only in .rs, .py, .ts, .tsx, .js or .go files, or leave them out to schedule {file} as a whole"
        ));
    };
    let blob = orchestra_git::git::Git::new(repo_root)
        .blob_at(commit, file)
        .map_err(|e| format!("cannot be looked up: git did not run ({e})"))?;
    let Some(stdout) = blob else {
        return Err(format!(
            "is in {file}, which does not exist at the base commit {}; declare symbols only in existing files",
            &commit[..commit.len().min(12)]
        ));
    };
    let facts = extractor
        .extract(lang, &stdout)
        .map_err(|e| format!("cannot be looked up: {e}"))?;
    let lines = String::from_utf8_lossy(&stdout)
        .lines()
        .map(str::to_string)
        .collect();
    Ok(Parsed { lines, facts })
}

impl Parsed {
    /// Returns the spans of every definition the symbol names: exact qualified names first,
    /// else definitions whose name and innermost containers match (`send` for `Client.send`).
    fn spans_of(&self, symbol: &str) -> Option<Vec<LineSpan>> {
        let defs = &self.facts.defs;
        let exact: Vec<usize> = (0..defs.len())
            .filter(|&d| self.facts.qualified_name(d as u32) == symbol)
            .collect();
        let chosen = if exact.is_empty() {
            let (containers, name) = match symbol.rsplit_once('.') {
                Some((c, n)) => (c.split('.').collect::<Vec<_>>(), n),
                None => (Vec::new(), symbol),
            };
            (0..defs.len())
                .filter(|&d| defs[d].name == name && defs[d].kind != "impl")
                .filter(|&d| {
                    let chain = self.facts.container_chain(d as u32);
                    chain.len() >= containers.len()
                        && chain[chain.len() - containers.len()..] == containers[..]
                        && !self.is_local(d)
                })
                .collect()
        } else {
            exact
        };
        let mut spans: Vec<LineSpan> = chosen
            .into_iter()
            .map(|d| {
                let s = defs[d].span;
                LineSpan {
                    start: self.leading_start(s.line),
                    end: s.end_line.max(s.line),
                }
            })
            .collect();
        spans.sort_unstable();
        (!spans.is_empty()).then_some(spans)
    }

    /// Returns true if and only if definition `d` sits inside a function.
    fn is_local(&self, d: usize) -> bool {
        self.facts.defs[d].parent.is_some_and(|p| {
            matches!(
                self.facts.defs[p as usize].kind.as_str(),
                "function" | "method"
            )
        })
    }

    /// Returns the first line of the attributes, decorators and comments directly above `line`.
    fn leading_start(&self, line: u32) -> u32 {
        let mut start = line;
        while start > 1 {
            let Some(above) = self.lines.get(start as usize - 2) else {
                break;
            };
            let t = above.trim_start();
            let glued = ["#", "@", "//", "/*", "*", "--"]
                .iter()
                .any(|p| t.starts_with(p));
            if !glued {
                break;
            }
            start -= 1;
        }
        start
    }

    /// Returns a hint naming close definitions of the file, or a few of its definitions.
    fn suggest(&self, symbol: &str) -> String {
        let mut names: Vec<String> = (0..self.facts.defs.len())
            .filter(|&d| self.facts.defs[d].kind != "impl" && !self.is_local(d))
            .map(|d| self.facts.qualified_name(d as u32))
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            return "the file defines no symbols; leave `symbols` out for it".into();
        }
        let wanted = symbol.to_lowercase();
        let last = wanted.rsplit('.').next().unwrap_or(&wanted).to_string();
        let mut close: Vec<(usize, &String)> = names
            .iter()
            .map(|n| {
                let lower = n.to_lowercase();
                let tail = lower.rsplit('.').next().unwrap_or(&lower).to_string();
                let d = strsim::levenshtein(&wanted, &lower).min(strsim::levenshtein(&last, &tail));
                (d, n)
            })
            .filter(|(d, _)| *d <= 2.max(wanted.len() / 3))
            .collect();
        close.sort();
        if close.is_empty() {
            let few: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
            format!("it defines: {}", few.join(", "))
        } else {
            let few: Vec<&str> = close.iter().take(3).map(|(_, n)| n.as_str()).collect();
            format!("did you mean {}?", few.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse() {
        assert_eq!(
            parse_entry("src/app.py:Client.send"),
            Ok(SymbolEntry {
                file: "src/app.py".into(),
                symbol: "Client.send".into()
            })
        );
        assert_eq!(
            parse_entry("./src/u.rs:Foo::parse").unwrap().file,
            "src/u.rs"
        );
        assert_eq!(
            parse_entry("src/u.rs:Foo::parse").unwrap().symbol,
            "Foo.parse"
        );
        assert!(parse_entry("src/u.rs").is_err());
        assert!(parse_entry("src/u.rs:").is_err());
        assert!(parse_entry("src/u.rs:a..b").is_err());
        assert!(parse_entry("src/*.rs:a").is_err());
        assert!(parse_entry("../x.rs:a").is_err());
    }

    #[test]
    fn margins() {
        let s = |start, end| LineSpan { start, end };
        assert!(apart(&[s(1, 3)], &[s(5, 9)]), "one line between");
        assert!(!apart(&[s(1, 3)], &[s(4, 9)]), "adjacent");
        assert!(!apart(&[s(1, 5)], &[s(4, 9)]), "overlapping");
        assert!(!apart(&[s(5, 9)], &[s(1, 4)]), "symmetric");
        assert!(apart(&[s(1, 3), s(20, 30)], &[s(10, 12)]));
        assert!(!apart(&[s(1, 3), s(20, 30)], &[s(10, 19)]));
    }

    fn parsed(lang: Lang, text: &str) -> Parsed {
        Parsed {
            lines: text.lines().map(str::to_string).collect(),
            facts: Extractor::new().extract(lang, text.as_bytes()).unwrap(),
        }
    }

    #[test]
    fn spans_cover_definitions_and_their_leading_lines() {
        let p = parsed(
            Lang::Python,
            "import os\n\nclass Client:\n    def send(self):\n        return 1\n\n    @property\n    def recv(self):\n        return 2\n\ndef parse(x):\n    return x\n",
        );
        assert_eq!(
            p.spans_of("Client.send"),
            Some(vec![LineSpan { start: 4, end: 5 }])
        );
        assert_eq!(
            p.spans_of("Client.recv"),
            Some(vec![LineSpan { start: 7, end: 9 }])
        );
        assert_eq!(p.spans_of("recv"), p.spans_of("Client.recv"));
        assert_eq!(
            p.spans_of("parse"),
            Some(vec![LineSpan { start: 11, end: 12 }])
        );
        assert_eq!(p.spans_of("Client.nope"), None);
        assert!(
            p.suggest("Client.sned").contains("Client.send"),
            "{}",
            p.suggest("Client.sned")
        );
        let r = parsed(
            Lang::Rust,
            "/// Parses.\n#[inline]\npub fn parse() {}\n\npub struct Foo;\n\nimpl Foo {\n    pub fn bar(&self) {}\n}\n",
        );
        assert_eq!(
            r.spans_of("parse"),
            Some(vec![LineSpan { start: 1, end: 3 }])
        );
        assert_eq!(
            r.spans_of("Foo.bar"),
            Some(vec![LineSpan { start: 8, end: 8 }])
        );
    }
}

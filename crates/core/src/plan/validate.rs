//! Checks a parsed plan as a whole and reports every problem at once, each with a fix.

use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::Serialize;

use super::graph::cycles;
use super::model::{MAX_ATTEMPTS, Plan};
use super::parse::{Location, PacketSpans};
use super::scope::{Pattern, PatternProblem};
use super::symbols;

/// The longest packet id accepted: ids end up in branch and worktree names.
pub const MAX_ID_LEN: usize = 48;

/// One problem in a plan: where it is (when known), what is wrong and how to fix it (the hint
/// may be empty when the message says it all).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanIssue {
    pub location: Option<Location>,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for PlanIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        write!(f, "{}", self.message)?;
        if !self.hint.is_empty() {
            write!(f, "; {}", self.hint)?;
        }
        Ok(())
    }
}

/// Returns `Ok` when the plan can be run in the repository at `repo_root`, or every problem
/// found, ordered by their position in the file.
///
/// Checked: a non-empty objective; `max_parallel` ≥ 1; at least one packet; ids that match
/// `^[a-z0-9]+(-[a-z0-9]+)*$`, are at most 48 characters and unique; non-empty titles,
/// descriptions and roles; known dependencies that are not the packet itself and form no
/// cycle; a non-empty `files` whose every pattern is a valid, repository-relative glob or path
/// outside `.git`; non-empty validation commands; `symbols` entries of the form `path:Name` whose
/// path is in `files` and whose name is defined there at the plan's base commit (or `HEAD`).
/// Only those definitions are read from the repository (git objects, never the working tree);
/// otherwise the root only serves to suggest the relative form of an absolute path inside it.
pub fn validate(plan: &Plan, repo_root: &Path) -> Result<(), Vec<PlanIssue>> {
    let mut v = Validator {
        plan,
        issues: Vec::new(),
    };
    v.plan_level();
    for i in 0..plan.packets.len() {
        v.packet(i, repo_root);
    }
    v.cycles();
    v.symbols_at_base(repo_root);
    sort_by_location(&mut v.issues);
    if v.issues.is_empty() {
        Ok(())
    } else {
        Err(v.issues)
    }
}

/// Orders issues by their position in the file; issues without a location come first, and
/// issues at the same place keep the order they were found in.
pub fn sort_by_location(issues: &mut [PlanIssue]) {
    issues.sort_by_key(|i| i.location.as_ref().map(|l| (l.line, l.column)));
}

struct Validator<'p> {
    plan: &'p Plan,
    issues: Vec<PlanIssue>,
}

impl Validator<'_> {
    fn at(&self, span: Option<Range<usize>>) -> Option<Location> {
        let source = self.plan.source.as_deref()?;
        span.map(|s| source.locate(s.start))
    }

    fn spans(&self, i: usize) -> Option<&PacketSpans> {
        let id = &self.plan.packets.get(i)?.id;
        self.plan.source.as_deref()?.packet(i, id)
    }

    fn push(&mut self, location: Option<Location>, message: String, hint: impl Into<String>) {
        self.issues.push(PlanIssue {
            location,
            message,
            hint: hint.into(),
        });
    }

    fn plan_level(&mut self) {
        let source = self.plan.source.as_deref();
        if self.plan.objective.trim().is_empty() {
            let loc = self.at(source.map(|s| s.objective.clone()));
            self.push(
                loc,
                "the objective is empty".into(),
                "say in one sentence what the run must achieve",
            );
        }
        if self.plan.max_parallel == Some(0) {
            let loc = self.at(source.and_then(|s| s.max_parallel.clone()));
            self.push(
                loc,
                "max_parallel is 0, so no packet could ever run".into(),
                "set max_parallel to 1 or more, or remove it to use the configured default",
            );
        }
        if self.plan.packets.is_empty() {
            self.push(
                self.at(Some(0..0)),
                "the plan has no packets".into(),
                "add at least one [[packet]] table with id, title, description and files",
            );
        }
    }

    fn packet(&mut self, i: usize, repo_root: &Path) {
        let plan = self.plan;
        let p = &plan.packets[i];
        let spans = self.spans(i).cloned();
        let sp = |f: fn(&PacketSpans) -> Range<usize>| spans.as_ref().map(f);
        let id_loc = self.at(sp(|s| s.id.clone()));
        let name = if p.id.is_empty() {
            format!("packet #{}", i + 1)
        } else {
            format!("packet `{}`", p.id)
        };

        if !is_valid_id(&p.id) {
            self.push(
                id_loc.clone(),
                format!("{name}: id `{}` is not a valid packet id", p.id),
                "use lower-case letters, digits and single dashes, e.g. `p1-validate-core`",
            );
        } else if let Some(why) = reserved(&p.id, plan) {
            self.push(
                id_loc.clone(),
                format!("{name}: id `{}` is reserved: {why}", p.id),
                "pick another id",
            );
        } else if p.id.len() > MAX_ID_LEN {
            self.push(
                id_loc.clone(),
                format!(
                    "{name}: id is {} characters long, more than {MAX_ID_LEN}",
                    p.id.len()
                ),
                "shorten it; ids become part of branch and worktree names",
            );
        }
        if let Some(first) = plan.packets[..i].iter().position(|q| q.id == p.id) {
            let first_loc = self.at(self.spans(first).map(|s| s.id.clone()));
            let where_ = first_loc.map_or(format!("packet #{}", first + 1), |l| {
                format!("line {}", l.line)
            });
            self.push(
                id_loc,
                format!("duplicate packet id `{}` (first used at {where_})", p.id),
                "give every packet a unique id",
            );
        }
        if p.title.trim().is_empty() {
            let loc = self.at(sp(|s| s.title.clone()));
            self.push(
                loc,
                format!("{name}: the title is empty"),
                "write a one-line summary",
            );
        }
        if p.description.trim().is_empty() {
            let loc = self.at(sp(|s| s.description.clone()));
            self.push(
                loc,
                format!("{name}: the description is empty"),
                "describe the work; it is what the worker agent receives",
            );
        }
        if !is_valid_role(&p.role) {
            let loc = self.at(spans.as_ref().and_then(|s| s.role.clone()));
            self.push(
                loc,
                format!("{name}: role `{}` is not a role name", p.role),
                "use a role such as `coder`, `tester` or `docs` (lower-case letters, digits, `-`, `_`)",
            );
        }
        self.files(i, &name, spans.as_ref(), repo_root);
        self.symbols(i, &name);
        self.dependencies(i, &name, spans.as_ref());
        if let Some(n) = p.attempts.filter(|n| !(1..=MAX_ATTEMPTS).contains(n)) {
            let loc = self.at(spans.as_ref().and_then(|s| s.attempts.clone()));
            self.push(
                loc,
                format!("{name}: attempts = {n} is outside 1 to {MAX_ATTEMPTS}"),
                format!("set attempts to a number of candidates from 1 to {MAX_ATTEMPTS}, or remove it for one"),
            );
        }
        for (k, cmd) in p.validation.iter().enumerate() {
            if cmd.trim().is_empty() {
                let loc = self.at(spans.as_ref().and_then(|s| s.validation.get(k).cloned()));
                self.push(
                    loc,
                    format!("{name}: validation command #{} is empty", k + 1),
                    "remove it or write the command to run, e.g. `cargo test parser`",
                );
            }
        }
    }

    fn files(&mut self, i: usize, name: &str, spans: Option<&PacketSpans>, repo_root: &Path) {
        let p = &self.plan.packets[i];
        if p.files.is_empty() {
            let loc = self.at(spans.map(|s| s.files.clone()));
            self.push(
                loc,
                format!("{name}: `files` is empty, which would forbid every change"),
                "list the paths or globs the packet may change, e.g. files = [\"src/parser.rs\", \"tests/parser_*.rs\"]",
            );
        }
        for (k, written) in p.files.iter().enumerate() {
            let Err(problem) = Pattern::parse(written) else {
                continue;
            };
            let loc = self.at(spans.and_then(|s| s.file.get(k).cloned()));
            let hint = pattern_hint(&problem, written, repo_root);
            self.push(
                loc,
                format!("{name}: file pattern `{written}` {problem}"),
                hint,
            );
        }
    }

    fn symbols(&mut self, i: usize, name: &str) {
        let p = &self.plan.packets[i];
        let scope = p.scope().ok();
        for (k, written) in p.symbols.iter().enumerate() {
            let loc = self.plan.symbol_location(i, k);
            match symbols::parse_entry(written) {
                Err(problem) => self.push(
                    loc,
                    format!("{name}: symbol `{written}` {problem}"),
                    "write `path:Qualified.name` with a path from `files`, e.g. \"src/app.py:Client.send\"",
                ),
                Ok(entry) => {
                    if scope.as_ref().is_some_and(|s| !s.matches(&entry.file)) {
                        self.push(
                            loc,
                            format!(
                                "{name}: symbol `{written}` is in {}, which is not in the packet's files",
                                entry.file
                            ),
                            format!("add {} to `files` or remove the symbol", entry.file),
                        );
                    } else if p.symbols[..k]
                        .iter()
                        .any(|w| symbols::parse_entry(w).as_ref() == Ok(&entry))
                    {
                        self.push(
                            loc,
                            format!("{name} lists symbol `{written}` twice"),
                            "list each symbol once",
                        );
                    }
                }
            }
        }
    }

    /// Looks every declared symbol up at the plan's base commit, when there is one to read.
    fn symbols_at_base(&mut self, repo_root: &Path) {
        if self.plan.packets.iter().all(|p| p.symbols.is_empty()) {
            return;
        }
        // An unknown base is reported by the callers that resolve it; nothing to look up then.
        let base = self.plan.base.as_deref().unwrap_or("HEAD");
        let Ok(Some(commit)) = orchestra_git::git::Git::new(repo_root).resolve_commit(base) else {
            return;
        };
        let (_, issues) = symbols::resolve(self.plan, repo_root, &commit);
        self.issues.extend(issues);
    }

    fn dependencies(&mut self, i: usize, name: &str, spans: Option<&PacketSpans>) {
        let plan = self.plan;
        let p = &plan.packets[i];
        for (k, dep) in p.depends_on.iter().enumerate() {
            let loc = self.at(spans.and_then(|s| s.depends_on.get(k).cloned()));
            if *dep == p.id {
                self.push(
                    loc,
                    format!("{name} depends on itself"),
                    "remove its own id from depends_on",
                );
            } else if plan.index_of(dep).is_none() {
                let known: Vec<&str> = plan
                    .packets
                    .iter()
                    .filter(|q| q.id != p.id)
                    .map(|q| q.id.as_str())
                    .take(8)
                    .collect();
                let hint = if known.is_empty() {
                    "remove it; the plan has no other packet".to_string()
                } else {
                    format!("use the id of a packet in this plan: {}", known.join(", "))
                };
                self.push(
                    loc,
                    format!("{name} depends on unknown packet `{dep}`"),
                    hint,
                );
            } else if p.depends_on[..k].contains(dep) {
                self.push(
                    loc,
                    format!("{name} lists dependency `{dep}` twice"),
                    "list each dependency once",
                );
            }
        }
    }

    fn cycles(&mut self) {
        let plan = self.plan;
        for cycle in cycles(&plan.dependency_indices()) {
            let names: Vec<&str> = cycle.iter().map(|&k| plan.packets[k].id.as_str()).collect();
            let first = cycle[0];
            let next = &plan.packets[cycle[1]].id;
            let k = plan.packets[first]
                .depends_on
                .iter()
                .position(|d| d == next);
            let loc = self.at(self
                .spans(first)
                .and_then(|s| k.and_then(|k| s.depends_on.get(k).cloned())));
            self.push(
                loc,
                format!("dependency cycle: {}", names.join(" -> ")),
                "remove one of these depends_on entries so the packets can be ordered",
            );
        }
    }
}

/// Returns true if and only if `id` matches `^[a-z0-9]+(-[a-z0-9]+)*$`.
/// Returns why `id` cannot name a packet of `plan`, when a name the engine derives for itself
/// would collide with it: the run's integration branch (`orchestra/<run>/integration`), a
/// subtask's branch (`<packet>-s<n>`) or a review's backup ref (`<packet>-review`) of another
/// packet of the plan.
fn reserved(id: &str, plan: &Plan) -> Option<String> {
    if id == "integration" {
        return Some("the run's integration branch is orchestra/<run>/integration".into());
    }
    let other = |prefix: &str| plan.packets.iter().any(|q| q.id == prefix);
    if let Some(prefix) = id.strip_suffix("-review")
        && other(prefix)
    {
        return Some(format!(
            "the backup of a review of packet `{prefix}` is named {id}"
        ));
    }
    let (prefix, n) = id.rsplit_once("-s")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && other(prefix))
        .then(|| format!("a subtask of packet `{prefix}` gets the branch of that name"))
}

pub(crate) fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Returns true if and only if `role` looks like a role name (`coder`, `code-reviewer`, `qa_2`).
fn is_valid_role(role: &str) -> bool {
    !role.is_empty()
        && role
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Returns how to fix one pattern problem, naming the relative path when that is the fix.
fn pattern_hint(problem: &PatternProblem, written: &str, repo_root: &Path) -> String {
    match problem {
        PatternProblem::Absolute => match Path::new(written).strip_prefix(repo_root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                format!(
                    "write it relative to the repository root: `{}`",
                    rel.display()
                )
            }
            _ => "write a path relative to the repository root, e.g. `src/parser.rs`".into(),
        },
        PatternProblem::Escapes => {
            "packets may only change files inside the repository; remove the `..`".into()
        }
        PatternProblem::GitDir => "remove it; git metadata is never part of a packet".into(),
        PatternProblem::ParentAfterWildcard => "write the path without `..`".into(),
        PatternProblem::Backslash => format!("write `{}`", written.replace('\\', "/")),
        PatternProblem::Empty => {
            "name a file or directory; use `**` to declare the whole repository".into()
        }
        PatternProblem::InvalidGlob(_) => {
            "fix the glob (`*` within a directory, `**` across directories, `[...]`, `{a,b}`)"
                .into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in ["a", "p1", "p1-validate-core", "0-9"] {
            assert!(is_valid_id(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", "é", "a/b"] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }

    fn issues(text: &str) -> Vec<String> {
        let plan = Plan::from_toml_str(text, "plan.toml").unwrap();
        match validate(&plan, Path::new("/repo")) {
            Ok(()) => Vec::new(),
            Err(v) => v.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn collects_every_issue_with_locations() {
        let text = r#"objective = " "
max_parallel = 0

[[packet]]
id = "Bad_Id"
title = "t"
description = "d"
files = []
validation = [""]

[[packet]]
id = "b"
title = "t"
description = "d"
files = ["/repo/src/x.rs", "../up", "src/[x", ".git/config"]
depends_on = ["b", "nope"]

[[packet]]
id = "b"
title = "t"
description = "d"
files = ["src"]
"#;
        let got = issues(text);
        let expect = [
            "plan.toml:1:13: the objective is empty",
            "plan.toml:2:16: max_parallel is 0",
            "plan.toml:5:6: packet `Bad_Id`: id `Bad_Id` is not a valid packet id",
            "plan.toml:8:9: packet `Bad_Id`: `files` is empty, which would forbid every change",
            "plan.toml:9:15: packet `Bad_Id`: validation command #1 is empty",
            "plan.toml:15:10: packet `b`: file pattern `/repo/src/x.rs` is absolute; scopes are relative to the repository root; write it relative to the repository root: `src/x.rs`",
            "plan.toml:15:28: packet `b`: file pattern `../up` leaves the repository",
            "plan.toml:15:37: packet `b`: file pattern `src/[x` is not a valid glob",
            "plan.toml:15:47: packet `b`: file pattern `.git/config` reaches into `.git`",
            "plan.toml:16:15: packet `b` depends on itself",
            "plan.toml:16:20: packet `b` depends on unknown packet `nope`; use the id of a packet in this plan: Bad_Id",
            "plan.toml:19:6: duplicate packet id `b` (first used at line 12)",
        ];
        assert_eq!(got.len(), expect.len(), "{got:#?}");
        for (g, e) in got.iter().zip(expect) {
            assert!(g.starts_with(e), "got {g}\nexpected {e}");
        }
    }

    #[test]
    fn names_the_cycle() {
        let text = r#"objective = "x"
[[packet]]
id = "a"
title = "t"
description = "d"
files = ["a"]
depends_on = ["b"]
[[packet]]
id = "b"
title = "t"
description = "d"
files = ["b"]
depends_on = ["c"]
[[packet]]
id = "c"
title = "t"
description = "d"
files = ["c"]
depends_on = ["a"]
"#;
        let got = issues(text);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("plan.toml:7:15: dependency cycle: a -> b -> c -> a"),
            "{got:?}"
        );
    }

    #[test]
    fn a_good_plan_passes_and_built_plans_have_no_locations() {
        let mut plan = Plan::from_toml_str(
            "objective = \"x\"\n[[packet]]\nid = \"a\"\ntitle = \"t\"\ndescription = \"d\"\nfiles = [\"src/*.rs\"]\n",
            "plan.toml",
        )
        .unwrap();
        assert_eq!(validate(&plan, Path::new("/repo")), Ok(()));
        plan.source = None;
        plan.packets[0].files.clear();
        let issues = validate(&plan, Path::new("/repo")).unwrap_err();
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].location, None);
    }
}

//! The text of a packet's pull request: what the packet does, how it is accepted, the
//! evidence that it works, and what the review found. The same Markdown goes to the forge and
//! into the local `pr/<packet>.md` files, so a user without a forge sees exactly what would
//! have been posted.

use std::fmt::Write;

use crate::gate::{Decision, Verdict};
use crate::plan::Packet;

/// The marker that ends every body; it names the run and packet the pull request belongs to.
pub fn marker(run: &str, packet: &str) -> String {
    format!("<!-- git-orchestra run={run} packet={packet} -->")
}

/// Everything a pull request body is written from.
pub struct PrContext<'a> {
    pub run: &'a str,
    pub objective: &'a str,
    pub packet: &'a Packet,
    pub branch: &'a str,
    /// The packet's commit (its branch tip).
    pub commit: &'a str,
    /// The branch the pull request targets.
    pub base: &'a str,
    pub verdict: Option<&'a Verdict>,
    /// The packets this one depends on, each with how to refer to it (`#12`, or its branch).
    pub depends_on: Vec<(String, String)>,
}

/// Returns the pull request's Markdown body.
pub fn render_body(ctx: &PrContext<'_>) -> String {
    let p = ctx.packet;
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", p.description.trim());
    let _ = writeln!(
        out,
        "Part of run `{}`: {}\n",
        ctx.run,
        one_line(ctx.objective)
    );
    if !ctx.depends_on.is_empty() {
        let list: Vec<String> = ctx
            .depends_on
            .iter()
            .map(|(id, r)| format!("`{id}` ({r})"))
            .collect();
        let _ = writeln!(
            out,
            "**Depends on** {}; base `{}`.\n",
            list.join(", "),
            ctx.base
        );
    }
    if !p.acceptance.is_empty() {
        out.push_str("### Acceptance criteria\n\n");
        for a in &p.acceptance {
            let _ = writeln!(out, "- [ ] {}", one_line(a));
        }
        out.push('\n');
    }
    out.push_str("### Validation\n\n");
    let failed_validation = ctx
        .verdict
        .is_some_and(|v| v.findings.iter().any(|f| f.category == "validation"));
    if p.validation.is_empty() {
        out.push_str("No validation commands were declared for this packet.\n\n");
    } else {
        let status = if failed_validation {
            "failed"
        } else {
            "passed"
        };
        for c in &p.validation {
            let _ = writeln!(out, "- `{c}`: {status} on {}", short(ctx.commit));
        }
        out.push('\n');
    }
    out.push_str("### Review\n\n");
    match ctx.verdict {
        None => out.push_str("Not reviewed yet.\n\n"),
        Some(v) => {
            let decision = match v.verdict {
                Decision::Approve => "approved",
                Decision::Reject => "changes required",
            };
            let _ = writeln!(
                out,
                "**{decision}** by {} on tree `{}` (checks: {}).\n",
                v.reviewer,
                short(&v.tree),
                v.checks.join(", ")
            );
            if v.findings.is_empty() {
                out.push_str("No findings.\n\n");
            } else {
                out.push_str("| severity | category | where | evidence | suggestion |\n");
                out.push_str("|---|---|---|---|---|\n");
                for f in &v.findings {
                    let place = match (&f.file, f.line) {
                        (Some(file), Some(line)) => format!("`{file}:{line}`"),
                        (Some(file), None) => format!("`{file}`"),
                        _ => String::new(),
                    };
                    let _ = writeln!(
                        out,
                        "| {} | {} | {place} | {} | {} |",
                        f.severity.as_str(),
                        cell(&f.category),
                        cell(&f.evidence),
                        cell(&f.suggestion)
                    );
                }
                out.push('\n');
            }
        }
    }
    if !p.risks.is_empty() {
        out.push_str("### Risks\n\n");
        for r in &p.risks {
            let _ = writeln!(out, "- {}", one_line(r));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Scope: {}",
        p.files
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = write!(out, "\n{}\n", marker(ctx.run, &p.id));
    out
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Returns text fit for one table cell: one line, pipes escaped, bounded length.
fn cell(s: &str) -> String {
    let line = one_line(s).replace('|', "\\|");
    if line.chars().count() > 300 {
        let cut: String = line.chars().take(300).collect();
        format!("{cut}…")
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{Finding, Severity};

    #[test]
    fn the_body_carries_plan_evidence_and_findings() {
        let packet = Packet {
            id: "p2".into(),
            title: "Parser".into(),
            role: "coder".into(),
            description: "Write the parser.".into(),
            files: vec!["src/parser.rs".into()],
            symbols: vec![],
            depends_on: vec!["p1".into()],
            validation: vec!["cargo test".into()],
            acceptance: vec!["parses | pipes".into()],
            risks: vec!["slow".into()],
            may_be_empty: false,
            risky: false,
            attempts: None,
        };
        let verdict = Verdict {
            version: 1,
            commit: "c".repeat(40),
            tree: "t".repeat(40),
            base: "b".repeat(40),
            reviewer: "deterministic".into(),
            verdict: Decision::Reject,
            checks: vec!["scope".into()],
            findings: vec![Finding {
                severity: Severity::Major,
                category: "scope".into(),
                file: Some("x.rs".into()),
                line: Some(3),
                evidence: "a|b".into(),
                suggestion: "undo".into(),
            }],
            packet: None,
            timestamp: "2026-01-01T00:00:00Z".into(),
            notes: Vec::new(),
        };
        let body = render_body(&PrContext {
            run: "r-1",
            objective: "Do it",
            packet: &packet,
            branch: "orchestra/r-1/p2",
            commit: &"c".repeat(40),
            base: "orchestra/r-1/p1",
            verdict: Some(&verdict),
            depends_on: vec![("p1".into(), "#4".into())],
        });
        assert!(body.starts_with("Write the parser.\n"), "{body}");
        for part in [
            "**Depends on** `p1` (#4); base `orchestra/r-1/p1`.",
            "- [ ] parses | pipes",
            "- `cargo test`: passed on cccccccccccc",
            "**changes required** by deterministic",
            "| major | scope | `x.rs:3` | a\\|b | undo |",
            "- slow",
            "<!-- git-orchestra run=r-1 packet=p2 -->",
        ] {
            assert!(body.contains(part), "missing {part:?} in\n{body}");
        }
    }
}

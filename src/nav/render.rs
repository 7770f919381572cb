//! Bounded output: every answer fits its character budget by degrading — full context, then
//! locations only, then per-file counts — and says so; it never truncates silently.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::query::{ImportEdge, Location, OutlineItem};

/// How much of each result an answer shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Each result with its signature or source line.
    Full,
    /// Locations only, grouped under their file: `line:col kind name`, the name left out when
    /// every result has the same one, and only candidates labelled (the heading says so).
    Locations,
    /// Result counts per file.
    Counts,
}

/// A rendered answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub detail: Detail,
    pub total: usize,
}

/// One result in its two textual forms and two JSON forms.
struct Row {
    path: String,
    full: String,
    /// The location without its path or name: rows at this detail are printed under a file
    /// heading.
    short: String,
    /// The result's name, for rows of locations (printed unless every row has the same one).
    name: Option<String>,
    /// Set on a candidate location: at the locations detail only candidates carry a label.
    candidate: bool,
    /// The definition a location lies in; locations of a file are listed by it.
    container: Option<String>,
    json_full: Value,
    json_short: Value,
}

fn location_rows(locs: &[Location]) -> Vec<Row> {
    locs.iter()
        .map(|l| {
            let label = match l.resolution {
                super::query::Resolution::Resolved => "resolved",
                super::query::Resolution::Candidate => "candidate",
            };
            let within = l
                .container
                .as_deref()
                .map(|c| format!(" in {c}"))
                .unwrap_or_default();
            Row {
                path: l.path.clone(),
                full: format!(
                    "{}:{}:{} {} {}{} [{label}]\n    {}",
                    l.path, l.line, l.col, l.kind, l.name, within, l.signature
                ),
                short: format!("{}:{} {}", l.line, l.col, l.kind),
                container: l.container.clone(),
                name: Some(l.name.clone()),
                candidate: l.resolution == super::query::Resolution::Candidate,
                json_full: serde_json::to_value(l).unwrap_or(Value::Null),
                json_short: json!({"path": l.path, "line": l.line, "col": l.col, "kind": l.kind,
                                   "name": l.name, "resolution": label}),
            }
        })
        .collect()
}

/// Renders a list of places (references, callers, callees, implementations) within
/// `max_chars`: locations grouped by file, or with each place's source line when `context`.
pub fn render_places(
    title: &str,
    locs: &[Location],
    max_chars: usize,
    json: bool,
    context: bool,
) -> Rendered {
    let first = if context {
        Detail::Full
    } else {
        Detail::Locations
    };
    render_rows_from(title, location_rows(locs), max_chars, json, first)
}

/// Renders locations at one level of detail (`Full` or `Locations`), whatever its length.
pub fn render_locations_at(title: &str, locs: &[Location], detail: Detail, json: bool) -> String {
    assemble(title, &location_rows(locs), detail, json, None)
}

/// Renders locations within `max_chars`, as text or JSON.
pub fn render_locations(title: &str, locs: &[Location], max_chars: usize, json: bool) -> Rendered {
    render_rows(title, location_rows(locs), max_chars, json)
}

/// Renders a file outline within `max_chars`.
pub fn render_outline(path: &str, items: &[OutlineItem], max_chars: usize, json: bool) -> Rendered {
    let rows = items
        .iter()
        .map(|i| Row {
            path: path.to_string(),
            full: format!(
                "{:>5} {}{} {} — {}",
                i.line,
                "  ".repeat(i.depth as usize),
                i.kind,
                i.name,
                i.signature
            ),
            short: format!(
                "{:>5} {}{} {}",
                i.line,
                "  ".repeat(i.depth as usize),
                i.kind,
                i.name
            ),
            json_full: serde_json::to_value(i).unwrap_or(Value::Null),
            json_short: json!({"name": i.name, "kind": i.kind, "line": i.line}),
            name: None,
            candidate: false,
            container: None,
        })
        .collect();
    render_rows(&format!("outline of {path}"), rows, max_chars, json)
}

/// Renders import edges within `max_chars`.
pub fn render_imports(title: &str, edges: &[ImportEdge], max_chars: usize, json: bool) -> Rendered {
    let rows = edges
        .iter()
        .map(|e| {
            let what = match (e.name.is_empty(), e.alias.is_empty()) {
                (true, true) => e.module.clone(),
                (true, false) => format!("{} as {}", e.module, e.alias),
                (false, true) => format!("{} from {}", e.name, e.module),
                (false, false) => format!("{} as {} from {}", e.name, e.alias, e.module),
            };
            let target = e.target.as_deref().unwrap_or("(external)");
            let re = if e.reexport { " (re-export)" } else { "" };
            Row {
                path: e.path.clone(),
                full: format!("{}:{} {what}{re} -> {target}", e.path, e.line),
                short: format!("{} -> {target}", e.line),
                name: None,
                candidate: false,
                container: None,
                json_full: serde_json::to_value(e).unwrap_or(Value::Null),
                json_short: json!({"path": e.path, "line": e.line, "target": e.target}),
            }
        })
        .collect();
    render_rows(title, rows, max_chars, json)
}

fn render_rows(title: &str, rows: Vec<Row>, max_chars: usize, json: bool) -> Rendered {
    render_rows_from(title, rows, max_chars, json, Detail::Full)
}

/// Renders `rows` at `first` detail, or less when that is over `max_chars`.
fn render_rows_from(
    title: &str,
    rows: Vec<Row>,
    max_chars: usize,
    json: bool,
    first: Detail,
) -> Rendered {
    let total = rows.len();
    let wanted = assemble(title, &rows, first, json, None);
    let wanted_len = wanted.chars().count();
    if wanted_len <= max_chars {
        return Rendered {
            text: wanted,
            detail: first,
            total,
        };
    }
    let what_was_wanted = if first == Detail::Full {
        "full output"
    } else {
        "the locations"
    };
    let notice = |what: &str| {
        format!(
            "note: {total} results; {what_was_wanted} would be {wanted_len} characters, over the limit of {max_chars}; showing {what}. Narrow the query or raise --max-chars."
        )
    };
    if first == Detail::Full {
        let locs = assemble(
            title,
            &rows,
            Detail::Locations,
            json,
            Some(&notice("locations only")),
        );
        if locs.chars().count() <= max_chars {
            return Rendered {
                text: locs,
                detail: Detail::Locations,
                total,
            };
        }
    }
    // Counts per file, dropping the least-populated files (and saying how many) if needed.
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *counts.entry(&r.path).or_default() += 1;
    }
    let mut ordered: Vec<(&str, usize)> = counts.into_iter().collect();
    ordered.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut keep = ordered.len();
    loop {
        let shown = &ordered[..keep];
        let hidden_files = ordered.len() - keep;
        let hidden: usize = ordered[keep..].iter().map(|(_, n)| n).sum();
        let note = notice("counts per file");
        let text = if json {
            let map: serde_json::Map<String, Value> = shown
                .iter()
                .map(|(p, n)| (p.to_string(), json!(n)))
                .collect();
            json!({"title": title, "detail": "counts", "total": total, "notice": note,
                   "counts": map, "files_not_shown": hidden_files, "results_not_shown": hidden})
            .to_string()
        } else {
            let mut t = format!(
                "{note}\n{title}: {total} results in {} files\n",
                ordered.len()
            );
            for (p, n) in shown {
                t.push_str(&format!("{p}: {n}\n"));
            }
            if hidden_files > 0 {
                t.push_str(&format!(
                    "… {hidden_files} more files with {hidden} results not shown\n"
                ));
            }
            t
        };
        if text.chars().count() <= max_chars || keep == 0 {
            let text = if text.chars().count() > max_chars {
                // Even the summary line does not fit: say only that.
                let t = format!("{total} results; raise --max-chars to see them");
                t.chars().take(max_chars).collect()
            } else {
                text
            };
            return Rendered {
                text,
                detail: Detail::Counts,
                total,
            };
        }
        keep = keep.saturating_sub((keep / 4).max(1));
    }
}

fn assemble(title: &str, rows: &[Row], detail: Detail, json: bool, notice: Option<&str>) -> String {
    if json {
        let results: Vec<&Value> = rows
            .iter()
            .map(|r| {
                if detail == Detail::Full {
                    &r.json_full
                } else {
                    &r.json_short
                }
            })
            .collect();
        let detail_name = if detail == Detail::Full {
            "full"
        } else {
            "locations"
        };
        let mut v =
            json!({"title": title, "detail": detail_name, "total": rows.len(), "results": results});
        if let Some(n) = notice {
            v["notice"] = json!(n);
        }
        return v.to_string();
    }
    let mut t = String::new();
    if let Some(n) = notice {
        t.push_str(n);
        t.push('\n');
    }
    if detail == Detail::Full {
        t.push_str(&format!("{title}: {} results\n", rows.len()));
        for r in rows {
            t.push_str(&r.full);
            t.push('\n');
        }
        return t;
    }
    // Locations: each file named once, its rows beneath it, files in order of first appearance;
    // a name shared by every row is said once in the heading.
    let first_name = rows.first().and_then(|r| r.name.as_deref());
    let shared_name = first_name.filter(|n| rows.iter().all(|r| r.name.as_deref() == Some(n)));
    let candidates = rows.iter().filter(|r| r.candidate).count();
    let mut heading = if rows.iter().any(|r| r.name.is_some()) {
        let mut h = if candidates == 0 {
            format!("{title}: {} resolved", rows.len())
        } else {
            format!(
                "{title}: {} results, {} resolved, {candidates} marked [candidate] (matched by name only)",
                rows.len(),
                rows.len() - candidates
            )
        };
        if let Some(n) = shared_name.filter(|n| !title.contains(n)) {
            h.push_str(&format!(", all named {n}"));
        }
        h
    } else {
        format!("{title}: {} results", rows.len())
    };
    heading.push('\n');
    t.push_str(&heading);
    let mut files: Vec<(&str, Vec<&Row>)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for r in rows {
        let i = *at.entry(&r.path).or_insert_with(|| {
            files.push((&r.path, Vec::new()));
            files.len() - 1
        });
        files[i].1.push(r);
    }
    let place = |r: &Row| {
        let mut p = r.short.clone();
        if let (Some(name), None) = (&r.name, shared_name) {
            p.push(' ');
            p.push_str(name);
        }
        if r.candidate {
            p.push_str(" [candidate]");
        }
        p
    };
    for (path, file_rows) in files {
        t.push_str(path);
        t.push('\n');
        // Places (rows with a name) go on one line per enclosing definition, in order of first
        // appearance; other rows (outline entries, imports) one per line.
        let mut groups: Vec<(Option<&str>, Vec<String>)> = Vec::new();
        for r in file_rows {
            if r.name.is_none() {
                t.push_str("  ");
                t.push_str(&r.short);
                t.push('\n');
                continue;
            }
            let within = r.container.as_deref();
            match groups.iter_mut().find(|(c, _)| *c == within) {
                Some((_, places)) => places.push(place(r)),
                None => groups.push((within, vec![place(r)])),
            }
        }
        for (within, places) in groups {
            t.push_str("  ");
            if let Some(c) = within {
                t.push_str("in ");
                t.push_str(c);
                t.push_str(": ");
            }
            t.push_str(&places.join(", "));
            t.push('\n');
        }
    }
    t
}

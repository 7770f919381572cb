//! Bounded output: every answer fits its character budget by degrading — full context, then
//! locations only, then per-file counts — and says so; it never truncates silently.
//!
//! Lists of places put the resolved ones first and the candidates (matched by name only) after
//! them under their own heading; in JSON the candidates stay out of `results` unless asked
//! for. The text lists places compactly, one line per file with their line numbers, since an
//! answer much longer than `git grep -w` would not be worth asking for; the JSON groups them by
//! file and enclosing definition.

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
    /// Locations only, grouped by file. Places take one line per file, `src/a.py: 12, 40 read`:
    /// the heading names the common kind and the shared name once, and each place adds its
    /// column, kind or name only where they tell it apart. Other rows (outline entries,
    /// imports) are listed one per line under their file.
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
    /// The definition a location lies in; locations of a file are listed by it in JSON.
    container: Option<String>,
    /// A location's line, column and kind (zero and empty for other rows), for the compact
    /// text of places.
    line: u32,
    col: u32,
    kind: String,
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
                line: l.line,
                col: l.col,
                kind: l.kind.clone(),
                name: Some(l.name.clone()),
                candidate: l.resolution == super::query::Resolution::Candidate,
                json_full: serde_json::to_value(l).unwrap_or(Value::Null),
                json_short: json!({"path": l.path, "line": l.line, "col": l.col, "kind": l.kind,
                                   "name": l.name, "resolution": label}),
            }
        })
        .collect()
}

/// How a list of places is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaceOptions {
    pub max_chars: usize,
    pub json: bool,
    /// Each place with its source line (by default, locations grouped by file).
    pub context: bool,
    /// JSON: list the candidates under `candidates` (by default only counted).
    pub candidates: bool,
}

/// Renders a list of places (references, callers, callees, implementations) within
/// `max_chars`: locations grouped by file, or with each place's source line when `context`;
/// resolved places first, candidates apart (and only counted in JSON).
pub fn render_places(
    title: &str,
    locs: &[Location],
    max_chars: usize,
    json: bool,
    context: bool,
) -> Rendered {
    render_places_with(
        title,
        locs,
        PlaceOptions {
            max_chars,
            json,
            context,
            candidates: false,
        },
    )
}

/// Renders a list of places as [`render_places`] does, with every option.
pub fn render_places_with(title: &str, locs: &[Location], opts: PlaceOptions) -> Rendered {
    let first = if opts.context {
        Detail::Full
    } else {
        Detail::Locations
    };
    let mut rows = location_rows(locs);
    // Resolved first, candidates after, each in the order given.
    rows.sort_by_key(|r| r.candidate);
    let layout = Layout {
        json: opts.json,
        separate: true,
        hidden: 0,
    };
    if opts.json && !opts.candidates {
        let total = rows.len();
        rows.retain(|r| !r.candidate);
        let layout = Layout {
            hidden: total - rows.len(),
            ..layout
        };
        return render_rows_from(title, rows, opts.max_chars, layout, first);
    }
    render_rows_from(title, rows, opts.max_chars, layout, first)
}

/// How rows are laid out.
#[derive(Debug, Clone, Copy)]
struct Layout {
    json: bool,
    /// Places: candidates after the resolved ones under their own heading (in JSON, under
    /// `candidates`).
    separate: bool,
    /// Candidates left out of a JSON answer; counted in it.
    hidden: usize,
}

impl Layout {
    fn plain(json: bool) -> Layout {
        Layout {
            json,
            separate: false,
            hidden: 0,
        }
    }
}

/// Returns "1 result" or "`n` results" (or any other noun).
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Renders locations at one level of detail (`Full` or `Locations`), whatever its length.
pub fn render_locations_at(title: &str, locs: &[Location], detail: Detail, json: bool) -> String {
    assemble(
        title,
        &location_rows(locs),
        detail,
        Layout::plain(json),
        None,
    )
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
            line: 0,
            col: 0,
            kind: String::new(),
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
                line: 0,
                col: 0,
                kind: String::new(),
                json_full: serde_json::to_value(e).unwrap_or(Value::Null),
                json_short: json!({"path": e.path, "line": e.line, "target": e.target}),
            }
        })
        .collect();
    render_rows(title, rows, max_chars, json)
}

fn render_rows(title: &str, rows: Vec<Row>, max_chars: usize, json: bool) -> Rendered {
    render_rows_from(title, rows, max_chars, Layout::plain(json), Detail::Full)
}

/// Renders `rows` at `first` detail, or less when that is over `max_chars`.
fn render_rows_from(
    title: &str,
    rows: Vec<Row>,
    max_chars: usize,
    layout: Layout,
    first: Detail,
) -> Rendered {
    let json = layout.json;
    let total = rows.len();
    let wanted = assemble(title, &rows, first, layout, None);
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
            "note: {}; {what_was_wanted} would be {wanted_len} characters, over the limit of {max_chars}; showing {what}. Narrow the query or raise --max-chars.",
            count(total, "result")
        )
    };
    if first == Detail::Full {
        let locs = assemble(
            title,
            &rows,
            Detail::Locations,
            layout,
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
            let mut v = json!({"title": title, "detail": "counts", "total": total, "notice": note,
                   "counts": map, "files_not_shown": hidden_files, "results_not_shown": hidden});
            if layout.hidden > 0 {
                v["candidates_not_shown"] = json!(layout.hidden);
            }
            v.to_string()
        } else {
            let mut t = format!(
                "{note}\n{title}: {} in {}\n",
                count(total, "result"),
                count(ordered.len(), "file")
            );
            for (p, n) in shown {
                t.push_str(&format!("{p}: {n}\n"));
            }
            if hidden_files > 0 {
                let files = if hidden_files == 1 { "file" } else { "files" };
                t.push_str(&format!(
                    "… {hidden_files} more {files} with {} not shown\n",
                    count(hidden, "result")
                ));
            }
            t
        };
        if text.chars().count() <= max_chars || keep == 0 {
            let text = if text.chars().count() > max_chars {
                // Even the summary line does not fit: say only that.
                let t = format!("{}; raise --max-chars to see them", count(total, "result"));
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

fn assemble(
    title: &str,
    rows: &[Row],
    detail: Detail,
    layout: Layout,
    notice: Option<&str>,
) -> String {
    if layout.json {
        return assemble_json(title, rows, detail, layout, notice);
    }
    let mut t = String::new();
    if let Some(n) = notice {
        t.push_str(n);
        t.push('\n');
    }
    let places = rows.iter().any(|r| r.name.is_some());
    let split = layout.separate && places;
    let (main, cands): (Vec<&Row>, Vec<&Row>) = if split {
        rows.iter().partition(|r| !r.candidate)
    } else {
        (rows.iter().collect(), Vec::new())
    };
    let first_name = rows.first().and_then(|r| r.name.as_deref());
    let shared_name = first_name.filter(|n| rows.iter().all(|r| r.name.as_deref() == Some(n)));
    let kind = common_kind(rows);
    t.push_str(&heading(title, rows, detail, split, shared_name, kind));
    let cand_heading = format!("candidates, matched by name only ({}):\n", cands.len());
    if detail == Detail::Full {
        for r in &main {
            t.push_str(&r.full);
            t.push('\n');
        }
        if !cands.is_empty() {
            t.push_str(&cand_heading);
            for r in &cands {
                t.push_str(&r.full);
                t.push('\n');
            }
        }
        return t;
    }
    if places {
        let mark = Marks {
            shared_name,
            kind,
            label: !split,
            by_container: title.starts_with(CALLERS_TITLE),
        };
        t.push_str(&compact_text(&main, mark));
        if !cands.is_empty() {
            t.push_str(&cand_heading);
            t.push_str(&compact_text(
                &cands,
                Marks {
                    label: false,
                    ..mark
                },
            ));
        }
        return t;
    }
    t.push_str(&grouped_text(&main, shared_name, !split));
    t
}

/// Returns the kind most places of an answer have (the first such in order on a tie), or
/// `None` when the rows are not places.
fn common_kind(rows: &[Row]) -> Option<&str> {
    let mut tally: Vec<(&str, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.name.is_some()) {
        match tally.iter_mut().find(|(k, _)| *k == r.kind) {
            Some((_, n)) => *n += 1,
            None => tally.push((&r.kind, 1)),
        }
    }
    let top = tally.iter().map(|(_, n)| *n).max()?;
    tally.into_iter().find(|(_, n)| *n == top).map(|(k, _)| k)
}

/// What a compact place leaves out because the heading says it once.
#[derive(Clone, Copy)]
struct Marks<'a> {
    /// The name every place has, if they all have one.
    shared_name: Option<&'a str>,
    /// The kind of most places; only the others name theirs.
    kind: Option<&'a str>,
    /// Candidates carry `[candidate]` (they are not listed apart).
    label: bool,
    /// A file's places are grouped by the definition they lie in, named on their line: for
    /// callers, that definition is the answer.
    by_container: bool,
}

/// How an answer listing callers is titled (`callers of NAME`): its places are grouped by the
/// definition they lie in, the calling function.
pub(crate) const CALLERS_TITLE: &str = "callers of ";

/// Returns places as one line per file, `src/a.py: 12, 40 read, 41`: the line of each place
/// in the order given, its column only where the file has more than one place on that line,
/// its kind only where it is not the common one, its name only where names differ, and the
/// candidate label when `marks.label`; for callers, one line per file and calling definition,
/// `src/a.py (in Client.run): 12, 40`.
fn compact_text(rows: &[&Row], marks: Marks) -> String {
    let mut files: Vec<(&str, Option<&str>, Vec<&Row>)> = Vec::new();
    for r in rows {
        let within = r.container.as_deref().filter(|_| marks.by_container);
        match files
            .iter_mut()
            .find(|(p, c, _)| *p == r.path && *c == within)
        {
            Some((_, _, rs)) => rs.push(r),
            None => files.push((&r.path, within, vec![r])),
        }
    }
    let mut t = String::new();
    for (path, within, rs) in files {
        let shown: Vec<String> = rs
            .iter()
            .map(|r| {
                let shared_line = rs.iter().filter(|o| o.line == r.line).count() > 1;
                let mut p = if shared_line {
                    format!("{}:{}", r.line, r.col)
                } else {
                    r.line.to_string()
                };
                if marks.kind != Some(r.kind.as_str()) {
                    p.push(' ');
                    p.push_str(&r.kind);
                }
                if let (Some(name), None) = (&r.name, marks.shared_name) {
                    p.push(' ');
                    p.push_str(name);
                }
                if marks.label && r.candidate {
                    p.push_str(" [candidate]");
                }
                p
            })
            .collect();
        t.push_str(path);
        if let Some(c) = within {
            t.push_str(&format!(" (in {c})"));
        }
        t.push_str(": ");
        t.push_str(&shown.join(", "));
        t.push('\n');
    }
    t
}

/// Returns the first line of a text answer: what it is and how many of each label.
fn heading(
    title: &str,
    rows: &[Row],
    detail: Detail,
    split: bool,
    shared_name: Option<&str>,
    kind: Option<&str>,
) -> String {
    let candidates = rows.iter().filter(|r| r.candidate).count();
    let resolved = rows.len() - candidates;
    let places = rows.iter().any(|r| r.name.is_some());
    let mut h = if !places || (detail == Detail::Full && !split) {
        format!("{title}: {}", count(rows.len(), "result"))
    } else if candidates == 0 {
        format!("{title}: {resolved} resolved")
    } else if split {
        format!(
            "{title}: {resolved} resolved, then {} matched by name only",
            count(candidates, "candidate")
        )
    } else {
        format!(
            "{title}: {}, {resolved} resolved, {candidates} marked [candidate] (matched by name only)",
            count(rows.len(), "result")
        )
    };
    if places
        && detail == Detail::Locations
        && let Some(n) = shared_name.filter(|n| !title.contains(n))
    {
        h.push_str(&format!(", all named {n}"));
    }
    if let Some(k) = kind.filter(|_| places && detail == Detail::Locations) {
        h.push_str(&format!("; each {k} unless marked"));
    }
    h.push('\n');
    h
}

/// Returns the place of a row as listed under its file: `12:9 call`, the name unless shared,
/// the candidate label when `label`.
fn place(r: &Row, shared_name: Option<&str>, label: bool) -> String {
    let mut p = r.short.clone();
    if let (Some(name), None) = (&r.name, shared_name) {
        p.push(' ');
        p.push_str(name);
    }
    if label && r.candidate {
        p.push_str(" [candidate]");
    }
    p
}

/// The rows of one file: places by the definition they lie in, and other rows.
struct FileGroup<'r> {
    path: &'r str,
    /// (enclosing definition, places in it), in order of first appearance.
    places: Vec<(Option<&'r str>, Vec<String>)>,
    /// Rows that are not places (outline entries, imports).
    others: Vec<&'r Row>,
}

/// Returns rows grouped by file (in order of first appearance) and, for places, by the
/// definition they lie in.
fn groups<'r>(rows: &[&'r Row], shared_name: Option<&str>, label: bool) -> Vec<FileGroup<'r>> {
    let mut files: Vec<FileGroup<'r>> = Vec::new();
    for r in rows {
        let i = match files.iter().position(|g| g.path == r.path) {
            Some(i) => i,
            None => {
                files.push(FileGroup {
                    path: &r.path,
                    places: Vec::new(),
                    others: Vec::new(),
                });
                files.len() - 1
            }
        };
        if r.name.is_none() {
            files[i].others.push(r);
            continue;
        }
        let within = r.container.as_deref();
        let entry = &mut files[i].places;
        let p = place(r, shared_name, label);
        match entry.iter_mut().find(|(c, _)| *c == within) {
            Some((_, places)) => places.push(p),
            None => entry.push((within, vec![p])),
        }
    }
    files
}

/// Returns the locations text: each file named once, its rows beneath it; places on one line
/// per enclosing definition, other rows (outline entries, imports) one per line.
fn grouped_text(rows: &[&Row], shared_name: Option<&str>, label: bool) -> String {
    let mut t = String::new();
    for FileGroup {
        path,
        places,
        others,
    } in groups(rows, shared_name, label)
    {
        t.push_str(path);
        t.push('\n');
        for r in others {
            t.push_str("  ");
            t.push_str(&r.short);
            t.push('\n');
        }
        for (within, places) in places {
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

/// Returns the JSON answer: full rows, or locations — places grouped by file and enclosing
/// definition (`{"path", "in", "places": ["12:9 call", …]}`) as the text groups them.
fn assemble_json(
    title: &str,
    rows: &[Row],
    detail: Detail,
    layout: Layout,
    notice: Option<&str>,
) -> String {
    let places = rows.iter().any(|r| r.name.is_some());
    let split = layout.separate && places;
    let (main, cands): (Vec<&Row>, Vec<&Row>) = if split {
        rows.iter().partition(|r| !r.candidate)
    } else {
        (rows.iter().collect(), Vec::new())
    };
    let first_name = rows.first().and_then(|r| r.name.as_deref());
    let shared_name = first_name.filter(|n| rows.iter().all(|r| r.name.as_deref() == Some(n)));
    let listed = |rows: &[&Row]| -> Value {
        if detail == Detail::Full {
            return Value::Array(rows.iter().map(|r| r.json_full.clone()).collect());
        }
        if !places {
            return Value::Array(rows.iter().map(|r| r.json_short.clone()).collect());
        }
        let mut out = Vec::new();
        for g in groups(rows, shared_name, !split) {
            let path = g.path;
            for (within, places) in g.places {
                let mut g = json!({"path": path, "places": places});
                if let Some(c) = within {
                    g["in"] = json!(c);
                }
                out.push(g);
            }
        }
        Value::Array(out)
    };
    let detail_name = if detail == Detail::Full {
        "full"
    } else {
        "locations"
    };
    let mut v = json!({"title": title, "detail": detail_name, "total": rows.len() + layout.hidden,
                       "results": listed(&main)});
    if places
        && detail == Detail::Locations
        && let Some(n) = shared_name
    {
        v["name"] = json!(n);
    }
    if split {
        v["resolved"] = json!(main.len());
        if !cands.is_empty() {
            v["candidates"] = listed(&cands);
        }
    }
    if layout.hidden > 0 {
        v["candidates_not_shown"] = json!(layout.hidden);
        v["hint"] = json!(
            "candidates (matched by name only) are left out; ask for them with --candidates (tool argument `candidates`)"
        );
    }
    if let Some(n) = notice {
        v["notice"] = json!(n);
    }
    v.to_string()
}

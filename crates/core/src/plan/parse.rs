//! Reads a plan file: TOML into typed values, keeping where each value sat in the text.
//!
//! Deserialization goes through private mirror structs whose fields are `toml::Spanned`, so the
//! public `Plan` stays plain data while `validate` can still say `plan.toml:12:9`.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use super::PlanError;
use super::model::{DEFAULT_ROLE, Packet, Plan};

/// A position in a plan file, 1-based, with the column counted in characters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    /// The name the file was read under (as the user typed it, when it came from the CLI).
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    objective: Spanned<String>,
    #[serde(default)]
    base: Option<Spanned<String>>,
    #[serde(default)]
    max_parallel: Option<Spanned<usize>>,
    #[serde(default, rename = "packet")]
    packets: Vec<Spanned<RawPacket>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPacket {
    id: Spanned<String>,
    title: Spanned<String>,
    #[serde(default)]
    role: Option<Spanned<String>>,
    description: Spanned<String>,
    files: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    symbols: Vec<Spanned<String>>,
    #[serde(default)]
    depends_on: Vec<Spanned<String>>,
    #[serde(default)]
    validation: Vec<Spanned<String>>,
    #[serde(default)]
    acceptance: Vec<String>,
    #[serde(default)]
    risks: Vec<String>,
    #[serde(default)]
    may_be_empty: bool,
    #[serde(default)]
    attempts: Option<Spanned<u32>>,
    #[serde(default)]
    risky: bool,
}

/// Where the values of one packet sat in the source text.
#[derive(Debug, Clone)]
pub(crate) struct PacketSpans {
    /// The id as parsed, to detect a packet list edited after parsing.
    pub id_text: String,
    pub id: Range<usize>,
    pub title: Range<usize>,
    pub role: Option<Range<usize>>,
    pub description: Range<usize>,
    pub files: Range<usize>,
    pub file: Vec<Range<usize>>,
    pub symbols: Vec<Range<usize>>,
    pub depends_on: Vec<Range<usize>>,
    pub validation: Vec<Range<usize>>,
    pub attempts: Option<Range<usize>>,
}

/// The source text of a plan and the spans of its values.
#[derive(Debug, Clone)]
pub(crate) struct SourceMap {
    name: String,
    text: String,
    pub objective: Range<usize>,
    pub base: Option<Range<usize>>,
    pub max_parallel: Option<Range<usize>>,
    pub packets: Vec<PacketSpans>,
}

impl SourceMap {
    /// Returns the name the plan was read under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Returns the line and column of byte offset `at`.
    pub fn locate(&self, at: usize) -> Location {
        locate(&self.name, &self.text, at)
    }

    /// Returns the spans of packet `index`, if the plan still holds the packet that was parsed.
    pub fn packet(&self, index: usize, id: &str) -> Option<&PacketSpans> {
        self.packets.get(index).filter(|p| p.id_text == id)
    }
}

/// Returns the 1-based line and character column of byte offset `at` in `text`.
fn locate(name: &str, text: &str, at: usize) -> Location {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Location {
        file: name.to_string(),
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

impl Plan {
    /// Returns the plan written in `text`, naming `source_name` in any error.
    ///
    /// Syntax errors, values of the wrong type, unknown keys and missing required keys are
    /// reported here with their line and column; everything that needs the whole plan (ids,
    /// dependencies, patterns) is left to `validate`, which reports all problems at once.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Plan, PlanError> {
        let raw: RawPlan = toml::from_str(text).map_err(|e| syntax_error(&e, text, source_name))?;
        let mut spans = Vec::with_capacity(raw.packets.len());
        let mut packets = Vec::with_capacity(raw.packets.len());
        for table in raw.packets {
            let p = table.into_inner();
            spans.push(PacketSpans {
                id_text: p.id.get_ref().clone(),
                id: p.id.span(),
                title: p.title.span(),
                role: p.role.as_ref().map(Spanned::span),
                description: p.description.span(),
                files: p.files.span(),
                file: p.files.get_ref().iter().map(Spanned::span).collect(),
                symbols: p.symbols.iter().map(Spanned::span).collect(),
                depends_on: p.depends_on.iter().map(Spanned::span).collect(),
                validation: p.validation.iter().map(Spanned::span).collect(),
                attempts: p.attempts.as_ref().map(Spanned::span),
            });
            packets.push(Packet {
                id: p.id.into_inner(),
                title: p.title.into_inner(),
                role: p
                    .role
                    .map_or_else(|| DEFAULT_ROLE.to_string(), Spanned::into_inner),
                description: p.description.into_inner(),
                files: p
                    .files
                    .into_inner()
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect(),
                symbols: p.symbols.into_iter().map(Spanned::into_inner).collect(),
                depends_on: p.depends_on.into_iter().map(Spanned::into_inner).collect(),
                validation: p.validation.into_iter().map(Spanned::into_inner).collect(),
                acceptance: p.acceptance,
                risks: p.risks,
                may_be_empty: p.may_be_empty,
                attempts: p.attempts.map(Spanned::into_inner),
                risky: p.risky,
            });
        }
        let source = SourceMap {
            name: source_name.to_string(),
            text: text.to_string(),
            objective: raw.objective.span(),
            base: raw.base.as_ref().map(Spanned::span),
            max_parallel: raw.max_parallel.as_ref().map(Spanned::span),
            packets: spans,
        };
        Ok(Plan {
            objective: raw.objective.into_inner(),
            base: raw.base.map(Spanned::into_inner),
            max_parallel: raw.max_parallel.map(Spanned::into_inner),
            packets,
            source: Some(Arc::new(source)),
        })
    }
}

/// Returns a `PlanError::Syntax` with the location and the key path of a TOML error.
fn syntax_error(e: &toml::de::Error, text: &str, source_name: &str) -> PlanError {
    let location = e.span().map(|s| locate(source_name, text, s.start));
    let mut message = e.message().trim().to_string();
    if let Some(key) = key_path(e)
        && !message.contains(&format!("`{key}`"))
    {
        message = format!("{message} (in `{key}`)");
    }
    if message.contains("expected a sequence") || message.contains("expected an array") {
        message.push_str("; write packets as [[packet]] tables and lists as [\"a\", \"b\"]");
    }
    PlanError::Syntax {
        file: source_name.to_string(),
        location,
        message,
    }
}

/// Returns the dotted key the error occurred under, such as `packet.title`, when toml knows it.
///
/// toml keeps the key path private and prints it only when it has no source text to quote, so
/// the error is rendered once without its input and the `in `…`` line read back.
fn key_path(e: &toml::de::Error) -> Option<String> {
    let mut bare = e.clone();
    bare.set_input(None);
    let rendered = bare.to_string();
    let last = rendered.trim_end().lines().last()?;
    let key = last.strip_prefix("in `")?.strip_suffix('`')?;
    (!key.is_empty()).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
objective = "Add input validation"
base = "main"
max_parallel = 4

[[packet]]
id = "p1-validate-core"
title = "Validate inputs in the core parser"
description = "Reject empty input."
files = ["src/parser.rs", "tests/parser_*.rs"]
validation = ["cargo test parser"]
acceptance = ["empty input is an error"]

[[packet]]
id = "p2-docs"
title = "Document it"
role = "docs"
description = "Write it down."
files = ["docs/"]
depends_on = ["p1-validate-core"]
"#;

    fn syntax(text: &str) -> (Option<Location>, String) {
        match Plan::from_toml_str(text, "plan.toml") {
            Err(PlanError::Syntax {
                location, message, ..
            }) => (location, message),
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn reads_a_plan_with_defaults_and_spans() {
        let plan = Plan::from_toml_str(GOOD, "plan.toml").unwrap();
        assert_eq!(plan.objective, "Add input validation");
        assert_eq!(plan.base.as_deref(), Some("main"));
        assert_eq!(plan.max_parallel, Some(4));
        assert_eq!(plan.packets.len(), 2);
        assert_eq!(plan.packets[0].role, "coder");
        assert_eq!(plan.packets[1].role, "docs");
        assert_eq!(plan.packets[1].depends_on, vec!["p1-validate-core"]);
        assert!(plan.packets[1].validation.is_empty());
        let src = plan.source.as_deref().unwrap();
        let id = src.locate(src.packets[1].id.start);
        assert_eq!((id.line, id.column), (15, 6));
        let dep = src.locate(src.packets[1].depends_on[0].start);
        assert_eq!((dep.line, dep.column), (20, 15));
    }

    #[test]
    fn serializes_back_to_an_equal_plan() {
        let plan = Plan::from_toml_str(GOOD, "plan.toml").unwrap();
        let text = toml::to_string(&plan).unwrap();
        let again = Plan::from_toml_str(&text, "again.toml").unwrap();
        assert_eq!(plan.packets, again.packets);
        let json = serde_json::to_value(&plan.packets[0]).unwrap();
        assert_eq!(json["id"], "p1-validate-core");
        assert_eq!(json["files"][1], "tests/parser_*.rs");
    }

    #[test]
    fn malformed_toml_points_at_line_and_column() {
        let (loc, msg) = syntax("objective = \"x\"\n[[packet]]\nid = \"a\ntitle = \"t\"\n");
        let loc = loc.unwrap();
        assert_eq!(loc.line, 3);
        assert!(loc.column >= 6, "{loc}");
        assert!(!msg.is_empty());
    }

    #[test]
    fn unknown_key_is_named_with_its_location() {
        let text = GOOD.replace("acceptance = [", "acceptence = [");
        let (loc, msg) = syntax(&text);
        assert!(msg.contains("unknown field `acceptence`"), "{msg}");
        assert!(msg.contains("`acceptance`"), "{msg}");
        assert_eq!(loc.unwrap().line, 12);
    }

    #[test]
    fn missing_and_mistyped_fields_are_named() {
        let text = GOOD.replace("title = \"Document it\"\n", "");
        let (loc, msg) = syntax(&text);
        assert!(msg.contains("missing field `title`"), "{msg}");
        assert!(loc.is_some());
        let (_, msg) = syntax("base = \"main\"\n");
        assert!(msg.contains("objective"), "{msg}");
        let text = GOOD.replace("max_parallel = 4", "max_parallel = \"four\"");
        let (loc, msg) = syntax(&text);
        assert!(msg.contains("max_parallel"), "{msg}");
        assert!(msg.contains("expected"), "{msg}");
        assert_eq!(loc.unwrap().line, 4);
        let text = GOOD.replace("title = \"Document it\"", "title = 3");
        let (loc, msg) = syntax(&text);
        assert!(msg.contains("title") && msg.contains("string"), "{msg}");
        assert_eq!(loc.unwrap().line, 16);
    }

    #[test]
    fn single_packet_table_gets_a_hint() {
        let (_, msg) = syntax("objective = \"x\"\n[packet]\nid = \"a\"\n");
        assert!(msg.contains("[[packet]]"), "{msg}");
    }

    #[test]
    fn columns_count_characters() {
        let loc = locate("f", "é = 1\nαβ x", 12);
        assert_eq!((loc.line, loc.column), (2, 4));
    }
}

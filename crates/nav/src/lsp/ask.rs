//! Asking a language server about a position — definition, implementations, references,
//! incoming or outgoing calls — in the protocol's types, and turning its answer into the
//! graph's places: repository-relative paths, one-based byte columns, the enclosing
//! definition from the graph.

use std::collections::HashMap;
use std::time::Duration;

use lsp_types::request::{
    CallHierarchyIncomingCalls, CallHierarchyOutgoingCalls, CallHierarchyPrepare, GotoDefinition,
    GotoImplementation, References,
};
use lsp_types::{
    CallHierarchyIncomingCallsParams, CallHierarchyItem, CallHierarchyOutgoingCallsParams,
    CallHierarchyPrepareParams, GotoDefinitionParams, GotoDefinitionResponse, Position, Range,
    ReferenceContext, ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, Uri,
};

use super::client::Connection;
use super::convert::{Encoding, Root, line_of};
use super::tier::Query;
use crate::nav::{At, Index, Location, Resolution};

/// Asks the server and turns its answer into places.
pub(super) fn ask(
    index: &Index,
    conn: &Connection,
    query: Query,
    at: &At,
    timeout: Duration,
) -> Result<Vec<Location>, String> {
    let mut places = Places::new(index);
    let tdp = TextDocumentPositionParams {
        text_document: TextDocumentIdentifier {
            uri: Root::new(index.root()).uri(&at.path),
        },
        position: places.position(at),
    };
    let mut out = Vec::new();
    match query {
        Query::Definition | Query::Implementations => {
            let params = GotoDefinitionParams {
                text_document_position_params: tdp,
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            };
            let r = if query == Query::Definition {
                conn.call::<GotoDefinition>(params, timeout)?
            } else {
                conn.call::<GotoImplementation>(params, timeout)?
            };
            for (uri, range) in targets(r) {
                out.extend(places.location(&uri, &range, "definition"));
            }
        }
        Query::References => {
            let params = ReferenceParams {
                text_document_position: tdp,
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
                context: ReferenceContext {
                    include_declaration: false,
                },
            };
            for l in conn
                .call::<References>(params, timeout)?
                .unwrap_or_default()
            {
                out.extend(places.location(&l.uri, &l.range, "reference"));
            }
        }
        Query::Callers | Query::Callees => {
            let params = CallHierarchyPrepareParams {
                text_document_position_params: tdp,
                work_done_progress_params: Default::default(),
            };
            let items = conn.call::<CallHierarchyPrepare>(params, timeout)?;
            for item in items.unwrap_or_default() {
                out.extend(calls(conn, &mut places, query, item, timeout)?);
            }
        }
    }
    out.sort_by(|a, b| (&a.path, a.line, a.col).cmp(&(&b.path, b.line, b.col)));
    out.dedup_by(|a, b| a.path == b.path && a.line == b.line && a.col == b.col);
    Ok(out)
}

/// The incoming call sites or the outgoing callees of one call hierarchy item.
fn calls(
    conn: &Connection,
    places: &mut Places,
    query: Query,
    item: CallHierarchyItem,
    timeout: Duration,
) -> Result<Vec<Location>, String> {
    let mut out = Vec::new();
    if query == Query::Callers {
        let params = CallHierarchyIncomingCallsParams {
            item,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let calls = conn.call::<CallHierarchyIncomingCalls>(params, timeout)?;
        for c in calls.unwrap_or_default() {
            for range in &c.from_ranges {
                out.extend(places.location(&c.from.uri, range, "call"));
            }
        }
    } else {
        let params = CallHierarchyOutgoingCallsParams {
            item,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let calls = conn.call::<CallHierarchyOutgoingCalls>(params, timeout)?;
        for c in calls.unwrap_or_default() {
            out.extend(places.location(&c.to.uri, &c.to.selection_range, "definition"));
        }
    }
    Ok(out)
}

/// The (uri, range) of each target of a definition or implementation answer: a location, a
/// list of locations, or a list of location links (their target's name).
fn targets(answer: Option<GotoDefinitionResponse>) -> Vec<(Uri, Range)> {
    match answer {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri, l.range)],
        Some(GotoDefinitionResponse::Array(ls)) => {
            ls.into_iter().map(|l| (l.uri, l.range)).collect()
        }
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|l| (l.target_uri, l.target_selection_range))
            .collect(),
    }
}

/// Turns protocol ranges into the graph's places, reading files once.
struct Places<'a> {
    index: &'a Index,
    root: Root,
    texts: HashMap<String, String>,
}

impl<'a> Places<'a> {
    fn new(index: &'a Index) -> Places<'a> {
        Places {
            index,
            root: Root::new(index.root()),
            texts: HashMap::new(),
        }
    }

    fn text(&mut self, path: &str) -> &str {
        if !self.texts.contains_key(path) {
            let data = match self.index.file_id(path) {
                Some(f) => self.index.read_source(f).ok(),
                None => std::fs::read(self.index.root().join(path)).ok(),
            };
            let text = String::from_utf8_lossy(&data.unwrap_or_default()).into_owned();
            self.texts.insert(path.to_string(), text);
        }
        self.texts.get(path).map_or("", String::as_str)
    }

    /// The protocol position (UTF-16) of a graph position.
    fn position(&mut self, at: &At) -> Position {
        let line = at.line.saturating_sub(1);
        let text = line_of(self.text(&at.path), line);
        let byte = at.col.unwrap_or(1).saturating_sub(1) as usize;
        Position::new(line, Encoding::Utf16.column(text, byte))
    }

    /// The place a (uri, range) names; files outside the worktree keep their absolute path.
    fn location(&mut self, uri: &Uri, range: &Range, kind: &str) -> Option<Location> {
        let uri = uri.as_str();
        let path = match self.root.relative(uri) {
            Some(p) => p,
            None => super::convert::uri_path(uri)?
                .to_string_lossy()
                .into_owned(),
        };
        let line0 = range.start.line;
        let ch = range.start.character;
        let end_ch = range.end.character;
        let text = if path.starts_with('/') {
            std::fs::read_to_string(&path).unwrap_or_default()
        } else {
            self.text(&path).to_string()
        };
        let line = line_of(&text, line0);
        let start = Encoding::Utf16.byte(line, ch);
        let end = Encoding::Utf16.byte(line, end_ch).max(start);
        let container = self.container(&path, line0 + 1, start as u32 + 1);
        Some(Location {
            path,
            line: line0 + 1,
            col: start as u32 + 1,
            end_line: line0 + 1,
            kind: kind.to_string(),
            name: line[start..end].to_string(),
            container,
            signature: line.trim().to_string(),
            resolution: Resolution::Resolved,
        })
    }

    /// The qualified name of the innermost definition around a place, from the graph.
    fn container(&self, path: &str, line: u32, col: u32) -> Option<String> {
        let file = self.index.file_id(path)?;
        let facts = &self.index.file(file).facts;
        let mut best: Option<usize> = None;
        for (i, d) in facts.defs.iter().enumerate() {
            let inside = (d.span.line, d.span.col) <= (line, col)
                && line <= d.span.end_line
                && !(d.name_span.line == line && d.name_span.col == col);
            if inside && d.kind != "type_parameter" {
                best = Some(i);
            }
        }
        best.map(|i| facts.qualified_name(i as u32))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::lsp::client::decode;
    use serde_json::{Value, json};

    /// The targets of a `textDocument/definition` answer as a server sends it.
    fn decoded(answer: Value) -> Vec<(String, u32, u32)> {
        targets(decode::<GotoDefinition>(answer).unwrap())
            .into_iter()
            .map(|(uri, r)| (uri.as_str().to_string(), r.start.line, r.start.character))
            .collect()
    }

    #[test]
    fn definition_answers_decode_as_a_location_locations_or_links() {
        let range = |l: u32, c: u32| json!({"start": {"line": l, "character": c}, "end": {"line": l, "character": c + 4}});
        let one = json!({"uri": "file:///r/a.py", "range": range(3, 4)});
        assert_eq!(decoded(one.clone()), [("file:///r/a.py".into(), 3, 4)]);
        let two = json!([one, {"uri": "file:///r/b%20c.py", "range": range(0, 0)}]);
        assert_eq!(
            decoded(two),
            [
                ("file:///r/a.py".into(), 3, 4),
                ("file:///r/b%20c.py".into(), 0, 0)
            ]
        );
        // A link names its target by the target's selection range, not its whole range.
        let link = json!([{
            "originSelectionRange": range(9, 1),
            "targetUri": "file:///r/m.py",
            "targetRange": range(5, 0),
            "targetSelectionRange": range(6, 8),
        }]);
        assert_eq!(decoded(link), [("file:///r/m.py".into(), 6, 8)]);
        assert_eq!(decoded(Value::Null), []);
        assert_eq!(decoded(json!([])), []);
        let bad = decode::<GotoDefinition>(json!({"uri": 3})).unwrap_err();
        assert!(
            bad.contains("malformed answer to textDocument/definition"),
            "{bad}"
        );
    }
}

//! The server's answers: graph queries turned into protocol results.

use std::collections::{BTreeMap, HashMap};

use lsp_types::{
    CallHierarchyIncomingCall, CallHierarchyIncomingCallsParams, CallHierarchyItem,
    CallHierarchyOutgoingCall, CallHierarchyOutgoingCallsParams, CallHierarchyPrepareParams,
    DocumentSymbol, DocumentSymbolParams, GotoDefinitionParams, Hover, HoverContents, HoverParams,
    Location as LspLocation, MarkupContent, MarkupKind, Position, Range, ReferenceParams,
    SymbolInformation, WorkspaceSymbolParams,
};
use serde_json::{Value, json};

use super::convert::{line_of, symbol_kind};
use super::rpc::code;
use super::server::{Failure, Server, parse};
use crate::nav::{At, DefId, Location, NavError, Resolution};

/// Most symbols a workspace search returns.
const MAX_WORKSPACE_SYMBOLS: usize = 500;

/// A query that found nothing to answer about answers nothing; other failures are errors.
fn found<T: Default>(r: Result<T, NavError>) -> Result<T, Failure> {
    match r {
        Ok(v) => Ok(v),
        Err(NavError::UnknownSymbol { .. } | NavError::BadArgument { .. }) => Ok(T::default()),
        Err(NavError::UnknownFile { .. }) => Ok(T::default()),
        Err(e) => Err((code::INTERNAL, e.to_string())),
    }
}

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, Failure> {
    serde_json::to_value(v).map_err(|e| (code::INTERNAL, e.to_string()))
}

/// Texts of files read while answering one request.
struct Texts<'a> {
    server: &'a Server,
    read: HashMap<String, String>,
}

impl<'a> Texts<'a> {
    fn new(server: &'a Server) -> Texts<'a> {
        Texts {
            server,
            read: HashMap::new(),
        }
    }

    fn get(&mut self, path: &str) -> &str {
        if !self.read.contains_key(path) {
            let text = self.server.text_of(path).unwrap_or_default();
            self.read.insert(path.to_string(), text);
        }
        self.read.get(path).map_or("", String::as_str)
    }

    /// The position of 1-based `line` and 1-based byte column `col` of `path`.
    fn position(&mut self, path: &str, line: u32, col: u32) -> Position {
        let enc = self.server.enc;
        let l = line.saturating_sub(1);
        let text = line_of(self.get(path), l);
        Position::new(l, enc.column(text, col.saturating_sub(1) as usize))
    }

    /// The position of byte offset `byte` of `path`.
    fn position_of_byte(&mut self, path: &str, byte: u32) -> Position {
        let enc = self.server.enc;
        let text = self.get(path);
        let byte = (byte as usize).min(text.len());
        let start = text[..byte].rfind('\n').map_or(0, |i| i + 1);
        let line = text[..start].matches('\n').count() as u32;
        Position::new(line, enc.column(&text[start..], byte - start))
    }

    /// The range of a place: from its column over its name.
    fn range(&mut self, loc: &Location) -> Range {
        if loc.kind == "module" {
            let start = self.position(&loc.path, loc.line, loc.col);
            return Range::new(start, start);
        }
        // Some places (an import's) start before the name: the range covers the name.
        let line = line_of(self.get(&loc.path), loc.line.saturating_sub(1));
        let col = name_column(line, &loc.name, loc.col.saturating_sub(1) as usize) as u32 + 1;
        let start = self.position(&loc.path, loc.line, col);
        let end = self.position(&loc.path, loc.line, col + loc.name.len() as u32);
        Range::new(start, end)
    }

    fn location(&mut self, loc: &Location) -> LspLocation {
        LspLocation::new(self.server.root.uri(&loc.path), self.range(loc))
    }

    /// The whole span and the name span of a definition.
    fn def_ranges(&mut self, id: DefId) -> (Range, Range) {
        let index = &self.server.index;
        let path = index.file(id.file).path.clone();
        let d = index.def(id).clone();
        let whole = Range::new(
            self.position_of_byte(&path, d.span.start_byte),
            self.position_of_byte(&path, d.span.end_byte),
        );
        let name = Range::new(
            self.position_of_byte(&path, d.name_span.start_byte),
            self.position_of_byte(&path, d.name_span.end_byte),
        );
        (whole, name)
    }
}

impl Server {
    pub(super) fn definition(&mut self, params: Value) -> Result<Value, Failure> {
        let p: GotoDefinitionParams = parse(params)?;
        let at = self.at(&p.text_document_position_params)?;
        let locs = found(self.index.definition_at(None, Some(&at)))?;
        let mut texts = Texts::new(self);
        let out: Vec<LspLocation> = locs.iter().map(|l| texts.location(l)).collect();
        to_value(out)
    }

    pub(super) fn references(&mut self, params: Value) -> Result<Value, Failure> {
        let p: ReferenceParams = parse(params)?;
        let at = self.at(&p.text_document_position)?;
        let mut locs = Vec::new();
        if p.context.include_declaration {
            locs.extend(found(self.index.definition_at(None, Some(&at)))?);
        }
        locs.extend(found(self.index.references_at(None, Some(&at)))?);
        let mut texts = Texts::new(self);
        let mut out: Vec<LspLocation> = locs.iter().map(|l| texts.location(l)).collect();
        out.dedup();
        to_value(out)
    }

    pub(super) fn implementation(&mut self, params: Value) -> Result<Value, Failure> {
        let p: GotoDefinitionParams = parse(params)?;
        let at = self.at(&p.text_document_position_params)?;
        let locs = found(self.index.implementations_at(None, Some(&at)))?;
        let mut texts = Texts::new(self);
        let out: Vec<LspLocation> = locs.iter().map(|l| texts.location(l)).collect();
        to_value(out)
    }

    pub(super) fn hover(&mut self, params: Value) -> Result<Value, Failure> {
        let p: HoverParams = parse(params)?;
        let at = self.at(&p.text_document_position_params)?;
        let locs = found(self.index.definition_at(None, Some(&at)))?;
        let Some(loc) = locs.iter().find(|l| l.kind != "module") else {
            return Ok(Value::Null);
        };
        let lang = self
            .index
            .file_id(&loc.path)
            .map_or("", |f| self.index.file(f).lang.name());
        let mut text = format!("```{lang}\n{}\n```", loc.signature);
        let source = self.text_of(&loc.path).unwrap_or_default();
        if let Some(doc) = doc_line(&source, loc.line) {
            text.push_str("\n\n");
            text.push_str(&doc);
        }
        let mut place = format!("\n\n{}:{}", loc.path, loc.line);
        if let Some(c) = &loc.container {
            place = format!("\n\nin `{c}`, {}:{}", loc.path, loc.line);
        }
        text.push_str(&place);
        if loc.resolution == Resolution::Candidate || locs.len() > 1 {
            text.push_str(&format!(
                " [candidate{}]",
                if locs.len() > 1 {
                    format!(", one of {}", locs.len())
                } else {
                    String::new()
                }
            ));
        }
        to_value(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: text,
            }),
            range: None,
        })
    }

    pub(super) fn document_symbols(&mut self, params: Value) -> Result<Value, Failure> {
        let p: DocumentSymbolParams = parse(params)?;
        let uri = p.text_document.uri.as_str();
        let Some(file) = self.root.relative(uri).and_then(|p| self.index.file_id(&p)) else {
            return Ok(json!([]));
        };
        let defs = &self.index.file(file).facts.defs;
        // Children by parent, keeping what an outline keeps: no locals, no generic parameters.
        let kept = |d: &crate::nav::Def| {
            d.kind != "type_parameter"
                && d.parent.is_none_or(|p| {
                    !matches!(defs[p as usize].kind.as_str(), "function" | "method")
                })
        };
        let mut children: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
        for (i, d) in defs.iter().enumerate() {
            if kept(d) {
                children.entry(d.parent).or_default().push(i as u32);
            }
        }
        let mut texts = Texts::new(self);
        let out = symbol_tree(&mut texts, file, &children, None);
        to_value(out)
    }

    pub(super) fn workspace_symbols(&mut self, params: Value) -> Result<Value, Failure> {
        let p: WorkspaceSymbolParams = parse(params)?;
        let locs = found(self.index.search(&p.query, None))?;
        let mut texts = Texts::new(self);
        #[allow(deprecated)]
        let out: Vec<SymbolInformation> = locs
            .iter()
            .take(MAX_WORKSPACE_SYMBOLS)
            .map(|l| SymbolInformation {
                name: l.name.clone(),
                kind: symbol_kind(&l.kind),
                tags: None,
                deprecated: None,
                location: texts.location(l),
                container_name: l.container.clone(),
            })
            .collect();
        to_value(out)
    }

    pub(super) fn prepare_call_hierarchy(&mut self, params: Value) -> Result<Value, Failure> {
        let p: CallHierarchyPrepareParams = parse(params)?;
        let at = self.at(&p.text_document_position_params)?;
        let locs = found(self.index.definition_at(None, Some(&at)))?;
        let ids: Vec<DefId> = locs
            .iter()
            .filter_map(|l| self.def_id(&l.path, l.line, &l.name))
            .collect();
        let mut texts = Texts::new(self);
        let items: Vec<CallHierarchyItem> = ids.into_iter().map(|d| item(&mut texts, d)).collect();
        if items.is_empty() {
            return Ok(Value::Null);
        }
        to_value(items)
    }

    pub(super) fn incoming_calls(&mut self, params: Value) -> Result<Value, Failure> {
        let p: CallHierarchyIncomingCallsParams = parse(params)?;
        let at = item_at(&p.item)?;
        let calls = found(self.index.callers_at(None, Some(&at)))?;
        // Call sites grouped by the definition they lie in (or by file, at the top level).
        let mut groups: BTreeMap<(String, Option<DefId>), Vec<Location>> = BTreeMap::new();
        for c in calls {
            let caller = self.enclosing(&c.path, c.line, c.col);
            groups.entry((c.path.clone(), caller)).or_default().push(c);
        }
        let mut texts = Texts::new(self);
        let mut out = Vec::new();
        for ((path, caller), sites) in groups {
            let from = match caller {
                Some(d) => item(&mut texts, d),
                None => module_item(&mut texts, &path),
            };
            let from_ranges = sites.iter().map(|s| texts.range(s)).collect();
            out.push(CallHierarchyIncomingCall { from, from_ranges });
        }
        to_value(out)
    }

    pub(super) fn outgoing_calls(&mut self, params: Value) -> Result<Value, Failure> {
        let p: CallHierarchyOutgoingCallsParams = parse(params)?;
        let at = item_at(&p.item)?;
        let callees = found(self.index.callees_at(None, Some(&at)))?;
        let Some(caller) = self.def_id(&at.path, at.line, &p.item.name) else {
            return Ok(json!([]));
        };
        let span = self.index.def(caller).span;
        let mut out = Vec::new();
        let mut texts = Texts::new(self);
        for callee in callees {
            let Some(id) = self.def_id(&callee.path, callee.line, &callee.name) else {
                continue;
            };
            // The call sites in the caller's body that name the callee.
            let sites: Vec<(u32, u32)> = self
                .index
                .refs_of(caller.file)
                .iter()
                .filter(|r| matches!(r.kind.as_str(), "call" | "new" | "macro"))
                .filter(|r| r.name == callee.name && span.contains(&r.span))
                .map(|r| (r.span.start_byte, r.span.end_byte))
                .collect();
            let path = self.index.file(caller.file).path.clone();
            let from_ranges = sites
                .into_iter()
                .map(|(s, e)| {
                    Range::new(
                        texts.position_of_byte(&path, s),
                        texts.position_of_byte(&path, e),
                    )
                })
                .collect();
            out.push(CallHierarchyOutgoingCall {
                to: item(&mut texts, id),
                from_ranges,
            });
        }
        to_value(out)
    }

    /// Returns the definition named `name` whose name is on `line` of `path`.
    fn def_id(&self, path: &str, line: u32, name: &str) -> Option<DefId> {
        let file = self.index.file_id(path)?;
        let defs = &self.index.file(file).facts.defs;
        defs.iter()
            .position(|d| d.name_span.line == line && d.name == name && d.kind != "impl")
            .or_else(|| self.index.def_at(path, line).map(|d| d.def as usize))
            .map(|def| DefId {
                file,
                def: def as u32,
            })
    }

    /// Returns the innermost function, method or class around a place.
    fn enclosing(&self, path: &str, line: u32, col: u32) -> Option<DefId> {
        let file = self.index.file_id(path)?;
        let defs = &self.index.file(file).facts.defs;
        let mut best: Option<usize> = None;
        for (i, d) in defs.iter().enumerate() {
            let inside = (d.span.line, d.span.col) <= (line, col)
                && line <= d.span.end_line
                && matches!(d.kind.as_str(), "function" | "method" | "class" | "macro");
            if inside && best.is_none_or(|b| defs[b].span.start_byte <= d.span.start_byte) {
                best = Some(i);
            }
        }
        best.map(|def| DefId {
            file,
            def: def as u32,
        })
    }
}

/// Returns the byte column of `name` on `line` at or after `from` as a whole word; `from`
/// itself when the name is there or nowhere after it.
fn name_column(line: &str, name: &str, from: usize) -> usize {
    if name.is_empty() || line.get(from..).is_none_or(|rest| rest.starts_with(name)) {
        return from;
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    line[from..]
        .match_indices(name)
        .map(|(i, _)| from + i)
        .find(|&i| {
            !word(line[..i].chars().next_back()) && !word(line[i + name.len()..].chars().next())
        })
        .unwrap_or(from)
}

/// The graph position of a call hierarchy item: the start of its name.
fn item_at(item: &CallHierarchyItem) -> Result<At, Failure> {
    let data = item.data.as_ref();
    let field = |k: &str| data.and_then(|d| d.get(k));
    match (
        field("path").and_then(Value::as_str),
        field("line").and_then(Value::as_u64),
        field("col").and_then(Value::as_u64),
    ) {
        (Some(path), Some(line), Some(col)) => Ok(At {
            path: path.to_string(),
            line: line as u32,
            col: Some(col as u32),
        }),
        _ => Err((
            code::INVALID_PARAMS,
            "the call hierarchy item carries no data from prepareCallHierarchy".into(),
        )),
    }
}

/// The call hierarchy item of a definition.
fn item(texts: &mut Texts, id: DefId) -> CallHierarchyItem {
    let index = &texts.server.index;
    let path = index.file(id.file).path.clone();
    let d = index.def(id).clone();
    let (range, selection_range) = texts.def_ranges(id);
    CallHierarchyItem {
        name: d.name.clone(),
        kind: symbol_kind(&d.kind),
        tags: None,
        detail: Some(d.signature.clone()),
        uri: texts.server.root.uri(&path),
        range,
        selection_range,
        data: Some(json!({"path": path, "line": d.name_span.line, "col": d.name_span.col})),
    }
}

/// The call hierarchy item of a file's top level.
fn module_item(texts: &mut Texts, path: &str) -> CallHierarchyItem {
    let start = Position::new(0, 0);
    CallHierarchyItem {
        name: path.to_string(),
        kind: symbol_kind("module"),
        tags: None,
        detail: None,
        uri: texts.server.root.uri(path),
        range: Range::new(start, start),
        selection_range: Range::new(start, start),
        data: None,
    }
}

/// The document symbols of `parent`'s kept children, nested.
fn symbol_tree(
    texts: &mut Texts,
    file: u32,
    children: &BTreeMap<Option<u32>, Vec<u32>>,
    parent: Option<u32>,
) -> Vec<DocumentSymbol> {
    let Some(ids) = children.get(&parent) else {
        return Vec::new();
    };
    ids.iter()
        .map(|&def| {
            let id = DefId { file, def };
            let d = texts.server.index.def(id).clone();
            let (range, selection_range) = texts.def_ranges(id);
            let nested = symbol_tree(texts, file, children, Some(def));
            #[allow(deprecated)]
            DocumentSymbol {
                name: d.name,
                detail: Some(d.signature),
                kind: symbol_kind(&d.kind),
                tags: None,
                deprecated: None,
                range,
                selection_range,
                children: (!nested.is_empty()).then_some(nested),
            }
        })
        .collect()
}

/// Returns the first line of the documentation of the definition whose name is on 1-based
/// `line`: the comment lines right above it (`///`, `//`, `#`, `/** … */`), or a Python
/// docstring right below its signature.
pub(super) fn doc_line(source: &str, line: u32) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let at = (line as usize).checked_sub(1)?;
    // Python: the first statement of the body is a string.
    let sig = lines.get(at)?.trim_end();
    if sig.ends_with(':') {
        let body = lines.get(at + 1..)?.iter().find(|l| !l.trim().is_empty())?;
        let t = body.trim();
        for q in ["\"\"\"", "'''", "\"", "'"] {
            if let Some(rest) = t
                .strip_prefix(q)
                .or_else(|| t.strip_prefix('r').and_then(|t| t.strip_prefix(q)))
            {
                let first = rest.split(q).next().unwrap_or(rest).trim();
                return (!first.is_empty()).then(|| first.to_string());
            }
        }
    }
    // Comments above, skipping attributes and decorators.
    let mut comment: Vec<&str> = Vec::new();
    for l in lines[..at].iter().rev() {
        let t = l.trim();
        if t.starts_with("#[") || t.starts_with('@') {
            continue;
        }
        let text = ["///", "//!", "//", "/**", "*/", "*", "#"]
            .iter()
            .find_map(|p| t.strip_prefix(p));
        match text {
            Some(c) => comment.push(c.trim()),
            None => break,
        }
    }
    comment
        .into_iter()
        .rev()
        .find(|c| !c.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::doc_line;

    #[test]
    fn doc_lines_come_from_comments_and_docstrings() {
        let rust = "/// Sends a message.\n/// More.\n#[inline]\npub fn send() {}\n";
        assert_eq!(doc_line(rust, 4).as_deref(), Some("Sends a message."));
        let py = "def greet(name):\n    \"\"\"Say hello.\n\n    Long.\"\"\"\n";
        assert_eq!(doc_line(py, 1).as_deref(), Some("Say hello."));
        let ts = "/**\n * Parses it.\n */\nexport function parse() {}\n";
        assert_eq!(doc_line(ts, 4).as_deref(), Some("Parses it."));
        assert_eq!(doc_line("x = 1\ndef f():\n    return 1\n", 2), None);
    }
}

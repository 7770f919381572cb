//! `git orchestra lsp`: the symbol graph of one worktree served to editors over the Language
//! Server Protocol on standard input and output.
//!
//! Requests are answered by the same queries as `nav` (definition, references,
//! implementation, callers and callees as a call hierarchy, outline, search), each after a
//! refresh of the index, so edits on disk are seen. Documents the editor opens stand for
//! their files while open: their text, kept current through incremental `didChange`, is given
//! to the index as unsaved contents and indexed through the same blob cache and refresh as
//! an agent's edit.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use lsp_types::notification::{
    DidChangeTextDocument, DidOpenTextDocument, Notification, PublishDiagnostics,
};
use lsp_types::{
    CallHierarchyServerCapability, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, HoverProviderCapability,
    ImplementationProviderCapability, InitializeParams, InitializeResult, OneOf,
    PositionEncodingKind, PublishDiagnosticsParams, SaveOptions, ServerCapabilities, ServerInfo,
    TextDocumentPositionParams, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions, Uri,
};
use serde_json::Value;

use super::convert::{Encoding, Root, offset_of};
use super::rpc::{self, code};
use crate::nav::{At, Index, NavError};

/// A failed request: a JSON-RPC error code and a message.
pub(super) type Failure = (i64, String);

/// Where the session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Uninitialized,
    Running,
    ShutDown,
}

/// The state of one session.
pub struct Server {
    pub(super) index: Index,
    pub(super) root: Root,
    /// Open documents: repository-relative path → current text.
    pub(super) docs: HashMap<String, String>,
    pub(super) enc: Encoding,
    phase: Phase,
}

impl Server {
    /// Returns a server over `index` (refreshed before every query).
    pub fn new(index: Index) -> Server {
        let root = Root::new(index.root());
        Server {
            index,
            root,
            docs: HashMap::new(),
            enc: Encoding::Utf16,
            phase: Phase::Uninitialized,
        }
    }

    /// Serves messages from `input` until `exit` or the end of the input; returns true if and
    /// only if the client asked for a shutdown first (the process then exits 0).
    pub fn serve(
        mut self,
        input: &mut impl BufRead,
        output: &mut impl Write,
    ) -> Result<bool, NavError> {
        let io = |source| NavError::Io {
            path: "<stdio>".into(),
            source,
        };
        while let Some(body) = rpc::read_body(input).map_err(io)? {
            // A body that is not JSON has no id to answer to: the error goes to id null, and
            // the session goes on with the next message.
            let message: Value = match serde_json::from_slice(&body) {
                Ok(message) => message,
                Err(e) => {
                    let reply = rpc::error_response(
                        Value::Null,
                        code::PARSE_ERROR,
                        &format!("the message's body is not JSON: {e}"),
                    );
                    rpc::write_message(output, &reply).map_err(io)?;
                    continue;
                }
            };
            let method = message.get("method").and_then(Value::as_str);
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            match (method, message.get("id").cloned()) {
                (Some("exit"), _) => return Ok(self.phase == Phase::ShutDown),
                (Some(method), Some(id)) => {
                    let reply = match self.request(method, params) {
                        Ok(result) => rpc::response(id, result),
                        Err((c, m)) => rpc::error_response(id, c, &m),
                    };
                    rpc::write_message(output, &reply).map_err(io)?;
                }
                (Some(method), None) => {
                    // An opened or changed document is analysed at once: an empty list of
                    // diagnostics tells the client so.
                    let uri = params["textDocument"]["uri"]
                        .as_str()
                        .and_then(|u| u.parse::<Uri>().ok());
                    self.notify(method, params);
                    if let (
                        DidOpenTextDocument::METHOD | DidChangeTextDocument::METHOD,
                        Some(uri),
                    ) = (method, uri)
                    {
                        let none = PublishDiagnosticsParams {
                            uri,
                            diagnostics: Vec::new(),
                            version: None,
                        };
                        let published = rpc::notification(
                            PublishDiagnostics::METHOD,
                            serde_json::to_value(none).unwrap_or_default(),
                        );
                        rpc::write_message(output, &published).map_err(io)?;
                    }
                }
                // Responses to requests this server never sends.
                (None, _) => {}
            }
        }
        Ok(false)
    }

    /// Answers one request.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        match (self.phase, method) {
            (Phase::Uninitialized, "initialize") => return self.initialize(params),
            (Phase::Uninitialized, _) => {
                return Err((
                    code::SERVER_NOT_INITIALIZED,
                    "send `initialize` first".into(),
                ));
            }
            (Phase::ShutDown, _) => {
                return Err((
                    code::INVALID_REQUEST,
                    "the server is shutting down; send `exit`".into(),
                ));
            }
            (Phase::Running, "shutdown") => {
                self.phase = Phase::ShutDown;
                return Ok(Value::Null);
            }
            (Phase::Running, "initialize") => {
                return Err((code::INVALID_REQUEST, "already initialized".into()));
            }
            _ => {}
        }
        self.index
            .refresh()
            .map_err(|e| (code::INTERNAL, e.to_string()))?;
        match method {
            "textDocument/definition" => self.definition(params),
            "textDocument/references" => self.references(params),
            "textDocument/implementation" => self.implementation(params),
            "textDocument/hover" => self.hover(params),
            "textDocument/documentSymbol" => self.document_symbols(params),
            "workspace/symbol" => self.workspace_symbols(params),
            "textDocument/prepareCallHierarchy" => self.prepare_call_hierarchy(params),
            "callHierarchy/incomingCalls" => self.incoming_calls(params),
            "callHierarchy/outgoingCalls" => self.outgoing_calls(params),
            _ => Err((
                code::METHOD_NOT_FOUND,
                format!("`{method}` is not supported by this server"),
            )),
        }
    }

    fn initialize(&mut self, params: Value) -> Result<Value, Failure> {
        let params: InitializeParams = parse(params)?;
        let utf8 = params
            .capabilities
            .general
            .and_then(|g| g.position_encodings)
            .is_some_and(|e| e.contains(&PositionEncodingKind::UTF8));
        self.enc = if utf8 {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        self.phase = Phase::Running;
        let result = InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(self.enc.kind()),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                            include_text: Some(true),
                        })),
                        ..Default::default()
                    },
                )),
                definition_provider: Some(OneOf::Left(true)),
                references_provider: Some(OneOf::Left(true)),
                implementation_provider: Some(ImplementationProviderCapability::Simple(true)),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                call_hierarchy_provider: Some(CallHierarchyServerCapability::Simple(true)),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "git-orchestra".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        };
        serde_json::to_value(result).map_err(|e| (code::INTERNAL, e.to_string()))
    }

    /// Applies a notification: document contents and lifecycle; unknown ones are ignored.
    fn notify(&mut self, method: &str, params: Value) {
        if self.phase == Phase::Uninitialized {
            return;
        }
        let outcome = match method {
            "textDocument/didOpen" => parse::<DidOpenTextDocumentParams>(params).map(|p| {
                let uri = p.text_document.uri.as_str().to_string();
                self.set_text(&uri, Some(p.text_document.text));
            }),
            "textDocument/didChange" => {
                parse::<DidChangeTextDocumentParams>(params).map(|p| self.change(p))
            }
            "textDocument/didSave" => parse::<DidSaveTextDocumentParams>(params).map(|p| {
                if let Some(text) = p.text {
                    self.set_text(p.text_document.uri.as_str(), Some(text));
                }
            }),
            "textDocument/didClose" => parse::<DidCloseTextDocumentParams>(params)
                .map(|p| self.set_text(p.text_document.uri.as_str(), None)),
            _ => Ok(()),
        };
        if let Err((_, message)) = outcome {
            tracing::warn!(method, message, "ignored a malformed notification");
        }
    }

    /// Makes `text` the contents of the document at `uri` (`None`: closed, back to the file).
    fn set_text(&mut self, uri: &str, text: Option<String>) {
        let Some(path) = self.root.relative(uri) else {
            return;
        };
        self.index
            .set_unsaved(&path, text.as_ref().map(|t| t.as_bytes().to_vec()));
        match text {
            Some(t) => self.docs.insert(path, t),
            None => self.docs.remove(&path),
        };
    }

    /// Applies the changes of one `didChange`, in order, to the open document.
    fn change(&mut self, p: DidChangeTextDocumentParams) {
        let uri = p.text_document.uri.as_str().to_string();
        let Some(path) = self.root.relative(&uri) else {
            return;
        };
        let mut text = match self.docs.get(&path) {
            Some(t) => t.clone(),
            None => self.text_of(&path).unwrap_or_default(),
        };
        for change in p.content_changes {
            match change.range {
                None => text = change.text,
                Some(r) => {
                    let start = offset_of(&text, self.enc, r.start.line, r.start.character);
                    let end = offset_of(&text, self.enc, r.end.line, r.end.character).max(start);
                    text.replace_range(start..end, &change.text);
                }
            }
        }
        self.set_text(&uri, Some(text));
    }

    /// Returns the current text of a file: the open document's, else the indexed file's.
    pub(super) fn text_of(&self, path: &str) -> Option<String> {
        if let Some(t) = self.docs.get(path) {
            return Some(t.clone());
        }
        let data = match self.index.file_id(path) {
            Some(id) => self.index.read_source(id).ok()?,
            None => std::fs::read(self.index.root().join(path)).ok()?,
        };
        Some(String::from_utf8_lossy(&data).into_owned())
    }

    /// Returns the graph position of a request's document position.
    pub(super) fn at(&self, p: &TextDocumentPositionParams) -> Result<At, Failure> {
        let uri = p.text_document.uri.as_str();
        let path = self.root.relative(uri).ok_or_else(|| {
            (
                code::INVALID_PARAMS,
                format!(
                    "{uri} is not a file of the worktree at {}",
                    self.index.root().display()
                ),
            )
        })?;
        let text = self.text_of(&path).unwrap_or_default();
        let line = super::convert::line_of(&text, p.position.line);
        let byte = self.enc.byte(line, p.position.character);
        Ok(At {
            path,
            line: p.position.line + 1,
            col: Some(byte as u32 + 1),
        })
    }
}

/// Decodes request parameters.
pub(super) fn parse<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, Failure> {
    serde_json::from_value(params).map_err(|e| (code::INVALID_PARAMS, e.to_string()))
}

/// Serves `index` over LSP on standard input and output; returns true if and only if the
/// session ended with `shutdown` then `exit`.
pub fn serve_stdio(index: Index) -> Result<bool, NavError> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stdout().lock();
    Server::new(index).serve(&mut input, &mut output)
}

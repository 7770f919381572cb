//! The navigation tools as an MCP server on standard input and output, scoped to one
//! worktree: `tools/list` declares every tool of [`super::tools::tool_specs`] with its JSON
//! schema, and `tools/call` answers with the same bounded text the agents get.
//!
//! rmcp is asynchronous; the server runs on a single-threaded tokio runtime built here, so
//! tokio stays inside this module and the rest of the crate stays synchronous. A call locks
//! the index, refreshes it (re-indexing only what changed in the worktree) and answers.

use std::sync::Mutex;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use super::NavError;
use super::index::Index;
use super::tools::{self, NavCounter, Precise, ToolError};

/// What the server tells clients about itself.
const INSTRUCTIONS: &str = "Code navigation over a symbol graph of this git worktree (Rust, Python, TypeScript, JavaScript, Go). Use nav_def, nav_refs, nav_callers, nav_impls and nav_outline instead of grep: they resolve imports and scopes, label answers resolved or candidate, and bound their output.";

/// An MCP server answering navigation queries on one worktree's index.
pub struct NavServer {
    index: Mutex<Index>,
    counter: NavCounter,
    precise: Option<Box<dyn Precise>>,
}

impl NavServer {
    /// Returns a server over `index` (refreshed on every call).
    pub fn new(index: Index) -> NavServer {
        NavServer {
            index: Mutex::new(index),
            counter: NavCounter::default(),
            precise: None,
        }
    }

    /// Returns the server asking `precise` (language servers) before the graph.
    pub fn with_precise(mut self, precise: Box<dyn Precise>) -> NavServer {
        self.precise = Some(precise);
        self
    }

    /// Returns the symbolic and textual calls served so far.
    pub fn counter(&self) -> &NavCounter {
        &self.counter
    }

    /// Returns the MCP declarations of the navigation tools.
    pub fn tools() -> Vec<Tool> {
        tools::tool_specs()
            .into_iter()
            .map(|spec| {
                let schema = match spec.parameters {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                let mut tool = Tool::new(spec.name, spec.description, schema);
                tool.annotations = Some(ToolAnnotations::new().read_only(true));
                tool
            })
            .collect()
    }

    /// Runs tool `name` with `args` and returns the answer for the client.
    pub fn call(&self, name: &str, args: &Value) -> Result<CallToolResult, ErrorData> {
        if !tools::tool_specs().iter().any(|t| t.name == name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`; call tools/list for the available tools"),
                None,
            ));
        }
        let mut index = self
            .index
            .lock()
            .map_err(|_| ErrorData::internal_error("the index lock is poisoned", None))?;
        let precise = self.precise.as_deref();
        Ok(
            match tools::call_with(&mut index, &self.counter, name, args, precise) {
                Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                Err(ToolError::Arguments(m)) => CallToolResult::error(vec![ContentBlock::text(m)]),
                Err(ToolError::Failed(e)) => {
                    return Err(ErrorData::internal_error(e.to_string(), None));
                }
            },
        )
    }
}

impl ServerHandler for NavServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "git-orchestra-nav",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(NavServer::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        self.call(&request.name, &args).map(Into::into)
    }
}

/// Serves `index` over MCP on standard input and output until the client disconnects.
pub fn serve_stdio(index: Index) -> Result<(), NavError> {
    serve_stdio_with(NavServer::new(index))
}

/// Serves `server` over MCP on standard input and output until the client disconnects.
pub fn serve_stdio_with(server: NavServer) -> Result<(), NavError> {
    let io = |e: std::io::Error| NavError::Io {
        path: "<stdio>".into(),
        source: e,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io)?;
    runtime.block_on(async {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| NavError::Mcp {
                message: e.to_string(),
            })?;
        service.waiting().await.map_err(|e| NavError::Mcp {
            message: e.to_string(),
        })?;
        Ok(())
    })
}

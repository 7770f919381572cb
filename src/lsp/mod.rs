//! Language servers and the symbol graph: `server` serves the graph to editors over the
//! Language Server Protocol (`git orchestra lsp`). Beside `nav`, not inside it: the graph
//! knows nothing of the protocol; this module speaks it with `lsp-types`' types and its own
//! JSON-RPC framing (`rpc`), and maps positions and URIs (`convert`).

mod answers;
pub mod convert;
pub mod rpc;
pub mod server;

pub use server::{Server, serve_stdio};

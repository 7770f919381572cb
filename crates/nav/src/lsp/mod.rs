//! Language servers and the symbol graph, both ways, beside `nav` and outside its core: the
//! graph knows nothing of the protocol. `server` serves the graph to editors (`git orchestra
//! lsp`); `settings`, `client`, `tier` and `ask` put installed language servers behind navigation
//! (`[nav.lsp]`): answers from a server once it is ready, from the graph until then and
//! whenever it fails, each saying where it came from. Both sides use `lsp-types`' types and
//! this module's JSON-RPC framing (`rpc`); `convert` maps positions and URIs.

mod answers;
mod ask;
pub mod client;
pub mod config;
pub mod convert;
pub mod launch;
pub mod rpc;
pub mod server;
pub mod settings;
pub mod tier;

pub use server::{Server, serve_stdio};
pub use settings::Settings;
pub use tier::{Outcome, Query, Tier};

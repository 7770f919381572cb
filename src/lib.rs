//! git-orchestra as one library: the workspace's crates under the module names the binary,
//! the tests and the benchmarks use, and the offline demo.
//!
//! The library never prints and never reads the user's home configuration on its own; the
//! `git-orchestra` binary (`src/main.rs`, `src/commands/`, `src/web/`) owns the terminal.

pub use orchestra_agents::eval as eval_run;
pub use orchestra_agents::{agent, crew, executor, land, orchestrator, run, status};
pub use orchestra_core::{
    config, engine, eval, forecast, forge, gate, llm, merge, plan, project, store,
};
pub use orchestra_git::git;
pub use orchestra_nav::{lsp, nav};
pub use orchestra_sys::{confine, exec, names, redact};

pub mod demo;

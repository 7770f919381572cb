//! git-orchestra's core: model clients, configuration, plans, the run store, gates, the forge, the
//! packet engine, the merge coordinator and project detection.

pub mod config;
pub mod engine;
pub mod eval;
pub mod forecast;
pub mod forge;
pub mod gate;
pub mod llm;
pub mod merge;
pub mod plan;
pub mod project;
pub mod routing;
pub mod store;

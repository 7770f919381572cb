//! Code navigation: the symbol graph built with tree-sitter, and the language-server tier that
//! refines it. Usable on its own.

pub mod lsp;
pub mod nav;

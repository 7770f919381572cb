(use_declaration
  (visibility_modifier)
  argument: (_) @tree) @reexport.rust

(use_declaration
  argument: (_) @tree) @import.rust

(extern_crate_declaration
  (visibility_modifier)
  name: (identifier) @module
  alias: (identifier)? @alias) @reexport.module

(extern_crate_declaration
  name: (identifier) @module
  alias: (identifier)? @alias) @import.module

; Shared by JavaScript, TypeScript and TSX.

(import_statement
  (import_clause (named_imports (import_specifier name: (_) @name alias: (identifier) @alias)))
  source: (string (string_fragment) @module)) @import.name

(import_statement
  (import_clause (named_imports (import_specifier !alias name: (_) @name)))
  source: (string (string_fragment) @module)) @import.name

(import_statement
  (import_clause (identifier) @alias)
  source: (string (string_fragment) @module)) @import.default

(import_statement
  (import_clause (namespace_import (identifier) @alias))
  source: (string (string_fragment) @module)) @import.module

(lexical_declaration
  (variable_declarator
    name: (identifier) @alias
    value: (call_expression
      function: (identifier) @require
      arguments: (arguments . (string (string_fragment) @module)))
    (#eq? @require "require"))) @import.module

(lexical_declaration
  (variable_declarator
    name: (object_pattern (shorthand_property_identifier_pattern) @name)
    value: (call_expression
      function: (identifier) @require
      arguments: (arguments . (string (string_fragment) @module)))
    (#eq? @require "require"))) @import.name

(export_statement
  (export_clause (export_specifier name: (_) @name alias: (_) @alias))
  source: (string (string_fragment) @module)) @reexport.name

(export_statement
  (export_clause (export_specifier !alias name: (_) @name))
  source: (string (string_fragment) @module)) @reexport.name

(export_statement
  (namespace_export (identifier) @alias)
  source: (string (string_fragment) @module)) @reexport.module

(export_statement
  "*"
  source: (string (string_fragment) @module)) @reexport.glob

(export_statement
  (export_clause (export_specifier name: (identifier) @name alias: (_) @alias))
  !source) @export.local

(export_statement
  "default"
  declaration: [(function_declaration name: (identifier) @name)
                (class_declaration name: (_) @name)]) @export.default

(export_statement
  "default"
  value: (identifier) @name) @export.default

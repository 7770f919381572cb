(import_statement
  name: (dotted_name) @module) @reexport.module

(import_statement
  name: (aliased_import
    name: (dotted_name) @module
    alias: (identifier) @alias)) @reexport.module

(import_from_statement
  module_name: (_) @module
  name: (dotted_name) @name) @reexport.name

(import_from_statement
  module_name: (_) @module
  name: (aliased_import
    name: (dotted_name) @name
    alias: (identifier) @alias)) @reexport.name

(import_from_statement
  module_name: (_) @module
  (wildcard_import)) @reexport.glob

(future_import_statement
  "__future__" @module
  name: (dotted_name) @name) @reexport.name

(import_spec
  name: (package_identifier) @alias
  path: (_) @module) @import.module

(import_spec
  name: (dot) 
  path: (_) @module) @import.glob

(import_spec
  !name
  path: (_) @module) @import.module

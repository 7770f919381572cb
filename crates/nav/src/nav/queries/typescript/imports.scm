; TypeScript and TSX (loaded after ecma/imports.scm).

(import_statement
  (import_require_clause (identifier) @alias source: (string (string_fragment) @module))) @import.module

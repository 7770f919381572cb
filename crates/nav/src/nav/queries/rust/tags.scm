; Definitions

(struct_item name: (type_identifier) @name body: (_)? @body) @definition.struct
(enum_item name: (type_identifier) @name body: (_) @body) @definition.enum
(union_item name: (type_identifier) @name body: (_) @body) @definition.struct
(type_item name: (type_identifier) @name) @definition.type
(trait_item name: (type_identifier) @name body: (_) @body) @definition.trait
(function_item name: (identifier) @name body: (_) @body) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(enum_variant name: (identifier) @name) @definition.variant
(field_declaration name: (field_identifier) @name) @definition.field
(associated_type name: (type_identifier) @name) @definition.type

; Generic parameters (`fn f<T: Bound>`, `struct S<T>`, `impl<T>`, `const N: usize`): visible
; inside the item that declares them, where they shadow every global of the same name.
(type_parameter name: (type_identifier) @name) @definition.type_parameter
(const_parameter name: (identifier) @name) @definition.type_parameter

; Impl blocks contain methods; `impl Trait for Type` is also a relation.

(impl_item
  type: [(type_identifier) @name
         (generic_type type: (type_identifier) @name)
         (scoped_type_identifier name: (type_identifier) @name)
         (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
         (primitive_type) @name
         (reference_type) @name
         (pointer_type) @name
         (array_type) @name
         (tuple_type) @name
         (unit_type) @name
         (function_type) @name
         (dynamic_type) @name]
  body: (_) @body) @container.impl

(impl_item
  trait: [(type_identifier) @target
          (generic_type type: (type_identifier) @target)
          (scoped_type_identifier path: (_) @qualifier name: (type_identifier) @target)
          (generic_type type: (scoped_type_identifier path: (_) @qualifier name: (type_identifier) @target))]
  type: [(type_identifier) @subject
         (generic_type type: (type_identifier) @subject)
         (scoped_type_identifier name: (type_identifier) @subject)
         (generic_type type: (scoped_type_identifier name: (type_identifier) @subject))
         (primitive_type) @subject
         (reference_type) @subject
         (pointer_type) @subject
         (array_type) @subject
         (tuple_type) @subject
         (unit_type) @subject
         (function_type) @subject
         (dynamic_type) @subject]) @relation.implements

(trait_item
  name: (type_identifier) @subject
  bounds: (trait_bounds [(type_identifier) @target
                         (generic_type type: (type_identifier) @target)])) @relation.inherits

; Local bindings

(parameter pattern: (identifier) @local)
(let_declaration pattern: (identifier) @local)
(let_declaration pattern: (tuple_pattern (identifier) @local))
(let_declaration pattern: (mut_pattern (identifier) @local))
(closure_parameters (identifier) @local)
(for_expression pattern: (identifier) @local)
(tuple_struct_pattern (identifier) @local)
(tuple_pattern (identifier) @local)
(let_condition pattern: (tuple_struct_pattern (identifier) @local))
(match_pattern (identifier) @local)

; Type facts: what a name holds (`@binding.<kind>` + `@name` + `@type`). A name matched by
; several patterns keeps the most telling kind: annotation, then call, then unknown.

(parameter
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  type: (_) @type) @binding.annotation
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  type: (_) @type) @binding.annotation
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: (call_expression function: [(identifier) (scoped_identifier) (field_expression)] @type)) @binding.call
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: (try_expression (call_expression function: [(identifier) (scoped_identifier) (field_expression)] @type))) @binding.unwrap
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: (call_expression
    function: (field_expression
      value: (call_expression function: [(identifier) (scoped_identifier)] @type)
      field: (field_identifier) @unwrap)
    (#match? @unwrap "^(unwrap|expect)$"))) @binding.unwrap
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: (struct_expression name: [(type_identifier) (scoped_type_identifier)] @type)) @binding.annotation
; `let m = RegexMatcher;`: a unit struct's value.
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: [(identifier) (scoped_identifier name: (identifier))] @type
  (#match? @type "(^|::)[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*$")) @binding.call
; `let t = s;`: what `s` holds.
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: (identifier) @type
  (#match? @type "^[a-z_]")) @binding.alias
; `let cache = &self.cache;`, `let c = self.client;`: what the field holds.
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: [(field_expression) (reference_expression value: (field_expression))] @type) @binding.alias
; `let s = "text";`, `let v = vec![…];`: a value of a standard library type, whose methods are
; the standard library's (the value is kept as the binding's text; see `rust_foreign`).
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: [(string_literal) (raw_string_literal) (array_expression)
          (reference_expression value: (array_expression))] @type) @binding.unknown
(let_declaration
  pattern: [(identifier) @name (mut_pattern (identifier) @name)]
  value: (macro_invocation macro: (identifier) @unwrap
    (#match? @unwrap "^(vec|format)$")) @type) @binding.unknown
(let_declaration pattern: [(identifier) @name (mut_pattern (identifier) @name)]) @binding.unknown
; `const LONG: &[u8] = b"…";`, `static POOL: Pool = …;`: what the item holds, as declared.
(const_item name: (identifier) @name type: (_) @type) @binding.annotation
(static_item name: (identifier) @name type: (_) @type) @binding.annotation
(function_item return_type: (_) @type) @binding.returns
(function_signature_item return_type: (_) @type) @binding.returns
(field_declaration name: (field_identifier) @name type: (_) @type) @binding.annotation
; A generic parameter is typed by its first bound (`<M: Matcher>`, `where M: Matcher`).
(type_parameter
  name: (type_identifier) @name
  bounds: (trait_bounds . [(type_identifier) (scoped_type_identifier) (generic_type)] @type)) @binding.annotation
(where_predicate
  left: (type_identifier) @name
  bounds: (trait_bounds . [(type_identifier) (scoped_type_identifier) (generic_type)] @type)) @binding.annotation
(closure_parameters (identifier) @name) @binding.unknown
; `for m in &self.matchers`: an element of the collection.
(for_expression pattern: (identifier) @name value: (_) @type) @binding.element
(for_expression pattern: (identifier) @name) @binding.unknown
; `Entry::Vacant(e) => e.key()`, `if let Value::Number(n) = v`: the field of the variant or
; tuple struct at the name's position.
(tuple_struct_pattern type: (_) @type (identifier) @name) @binding.variant
; `let (pre, text) = parse(text)?;`: the element of the tuple the function returns.
(let_declaration
  pattern: (tuple_pattern (identifier) @name)
  value: (try_expression (call_expression function: [(identifier) (scoped_identifier)] @type))) @binding.tuple_unwrap
(let_declaration
  pattern: (tuple_pattern (identifier) @name)
  value: (call_expression function: [(identifier) (scoped_identifier)] @type)) @binding.tuple
(let_declaration pattern: (tuple_pattern (identifier) @name)) @binding.unknown
(tuple_struct_pattern (identifier) @name) @binding.unknown
(match_pattern (identifier) @name) @binding.unknown

; Names that are not references

(field_initializer field: (field_identifier) @ignore)

; References

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (scoped_identifier
    path: (_) @qualifier
    name: (identifier) @name)) @reference.call

(call_expression
  function: (field_expression
    value: (_) @qualifier
    field: (field_identifier) @name)) @reference.call

(call_expression
  function: (generic_function
    function: (identifier) @name)) @reference.call

(call_expression
  function: (generic_function
    function: (scoped_identifier path: (_) @qualifier name: (identifier) @name))) @reference.call

(call_expression
  function: (generic_function
    function: (field_expression value: (_) @qualifier field: (field_identifier) @name))) @reference.call

(macro_invocation macro: (identifier) @name) @reference.macro
(macro_invocation macro: (scoped_identifier path: (_) @qualifier name: (identifier) @name)) @reference.macro

; Calls inside macro arguments and macro_rules! bodies appear as token trees. A path call
; `Type::new(…)` (or `$t::new(…)`) keeps the segment before `new` as its qualifier, so `new` is
; looked up in `Type`, never bound to an unrelated `new`.
(token_tree
  [(identifier) (metavariable)] @qualifier
  .
  "::"
  .
  (identifier) @name
  .
  (token_tree)) @reference.call

; `a.name(…)`, `self.name(…)`, `f(x).name(…)`: a method call on whatever stands before the
; dot (its qualifier), never a free function `name` — a test named like the method it tests
; must not capture it.
(token_tree
  (_) @qualifier
  .
  "."
  .
  (identifier) @name
  .
  (token_tree)) @reference.call

; `name(…)`.
(token_tree
  (identifier) @name
  .
  (token_tree)) @reference.call

(impl_item trait: (type_identifier) @name) @reference.implementation
(impl_item type: (type_identifier) @name) @reference.implementation

(struct_expression name: (type_identifier) @name) @reference.new
(struct_expression name: (scoped_type_identifier path: (_) @qualifier name: (type_identifier) @name)) @reference.new

(scoped_type_identifier path: (_) @qualifier name: (type_identifier) @name) @reference.type
(type_identifier) @name @reference.type

(scoped_identifier path: (_) @qualifier name: (identifier) @name) @reference.read

(field_expression value: (_) @qualifier field: (field_identifier) @name) @reference.field

(identifier) @name @reference.read

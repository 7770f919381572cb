; Definitions

(class_definition
  name: (identifier) @name
  body: (_) @body) @definition.class

(function_definition
  name: (identifier) @name
  body: (_) @body) @definition.function

(module
  (expression_statement
    (assignment
      left: (identifier) @name) @definition.constant))

(class_definition
  body: (block
    (expression_statement
      (assignment
        left: (identifier) @name) @definition.field)))

; Relations

(class_definition
  name: (identifier) @subject
  superclasses: (argument_list
    [(identifier) @target
     (attribute object: (_) @qualifier attribute: (identifier) @target)
     (subscript value: (identifier) @target)
     (subscript value: (attribute object: (_) @qualifier attribute: (identifier) @target))])) @relation.inherits

; Local bindings (only those inside functions shadow anything)

(parameters (identifier) @local)
(parameters (default_parameter name: (identifier) @local))
(parameters (typed_parameter (identifier) @local))
(parameters (typed_default_parameter name: (identifier) @local))
(lambda_parameters (identifier) @local)
(assignment left: (identifier) @local)
(assignment left: (pattern_list (identifier) @local))
(assignment left: (tuple_pattern (identifier) @local))
(for_statement left: (identifier) @local)
(for_statement left: (pattern_list (identifier) @local))
(for_in_clause left: (identifier) @local)
(as_pattern alias: (as_pattern_target (identifier) @local))
(named_expression name: (identifier) @local)

; Type facts: what a name holds (`@binding.<kind>` + `@name` + `@type`). A name matched by
; several patterns keeps the most telling kind: annotation, then call, then none/unknown.

(typed_parameter (identifier) @name type: (type) @type) @binding.annotation
(typed_default_parameter name: (identifier) @name type: (type) @type) @binding.annotation
(function_definition return_type: (type) @type) @binding.returns
(assignment left: [(identifier) (attribute)] @name type: (type) @type) @binding.annotation
(assignment left: [(identifier) (attribute)] @name right: (none)) @binding.none
(assignment
  left: [(identifier) (attribute)] @name
  right: (call function: [(identifier) (attribute)] @type)) @binding.call
(assignment
  left: [(identifier) (attribute)] @name
  right: (await (call function: [(identifier) (attribute)] @type))) @binding.unwrap
(assignment left: [(identifier) (attribute)] @name right: (identifier) @type) @binding.alias
; `session = self.session`: what the attribute holds.
(assignment left: (identifier) @name right: (attribute) @type) @binding.alias
(assignment left: [(identifier) (attribute)] @name) @binding.unknown
(with_item
  value: (as_pattern
    (call function: [(identifier) (attribute)] @type)
    alias: (as_pattern_target (identifier) @name))) @binding.call
(as_pattern alias: (as_pattern_target (identifier) @name)) @binding.unknown
(parameters (identifier) @name) @binding.unknown
(parameters (default_parameter name: (identifier) @name)) @binding.unknown
; `for item in self.items`: an element of the collection.
(for_statement left: (identifier) @name right: (_) @type) @binding.element
(for_in_clause left: (identifier) @name right: (_) @type) @binding.element
(for_statement left: (identifier) @name) @binding.unknown
(for_statement left: (pattern_list (identifier) @name)) @binding.unknown
(assignment left: (pattern_list (identifier) @name)) @binding.unknown
(assignment left: (tuple_pattern (identifier) @name)) @binding.unknown

; Names that are not references

(keyword_argument name: (identifier) @ignore)
(global_statement (identifier) @ignore)
(nonlocal_statement (identifier) @ignore)

; References

(decorator (identifier) @name) @reference.call
(decorator (call function: (identifier) @name)) @reference.call

(call
  function: (identifier) @name) @reference.call

(call
  function: (attribute
    object: (_) @qualifier
    attribute: (identifier) @name)) @reference.call

(type (identifier) @name) @reference.type

(attribute
  object: (_) @qualifier
  attribute: (identifier) @name) @reference.read

; Plain names; built-in constants are dropped in code (cheaper than a predicate per name).
(identifier) @name @reference.read

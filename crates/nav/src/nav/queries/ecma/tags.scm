; Shared by JavaScript, TypeScript and TSX.

; Definitions

(function_declaration name: (identifier) @name body: (_) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (_) @body) @definition.function
(class_declaration name: (_) @name body: (_) @body) @definition.class
(method_definition name: (property_identifier) @name body: (_) @body) @definition.method
(method_definition name: (private_property_identifier) @name body: (_) @body) @definition.method

(program (lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function))
(program (variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function))
(program (export_statement (lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function)))
(program (lexical_declaration
  (variable_declarator name: (identifier) @name) @definition.constant))
(program (variable_declaration
  (variable_declarator name: (identifier) @name) @definition.variable))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name) @definition.constant)))
(program (export_statement (variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function)))
(program (export_statement (variable_declaration
  (variable_declarator name: (identifier) @name) @definition.variable)))

(assignment_expression
  left: (member_expression
    object: (_) @qualifier
    property: (property_identifier) @name)
  right: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function

(pair
  key: (property_identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function

; Local bindings

(arrow_function parameter: (identifier) @local)
(variable_declarator name: (identifier) @local)
(object_pattern (shorthand_property_identifier_pattern) @local)
(array_pattern (identifier) @local)
(catch_clause parameter: (identifier) @local)
(for_in_statement left: (identifier) @local)

; Type facts: what a name holds (`@binding.<kind>` + `@name` + `@type`). A name matched by
; several patterns keeps the most telling kind: annotation, then call, then none/unknown.

(variable_declarator
  name: (identifier) @name
  value: (new_expression constructor: [(identifier) (member_expression)] @type)) @binding.call
(variable_declarator
  name: (identifier) @name
  value: (call_expression function: [(identifier) (member_expression)]) @type) @binding.call
(variable_declarator
  name: (identifier) @name
  value: (await_expression (call_expression function: [(identifier) (member_expression)] @type))) @binding.unwrap
(variable_declarator name: (identifier) @name value: (identifier) @type) @binding.alias
; `const cache = this.#queryCache`: what the member holds.
(variable_declarator name: (identifier) @name value: (member_expression) @type) @binding.alias
(variable_declarator name: (identifier) @name) @binding.unknown
; `return { batch() {…} }`, `() => ({ … })`: the object literal a factory returns, whose
; methods are the members of what it makes.
(return_statement (object) @type) @binding.literal
(arrow_function body: (parenthesized_expression (object) @type)) @binding.literal
; `for (const o of observers)`, `observers.forEach((o) => …)`: an element of the collection.
(for_in_statement left: (identifier) @name operator: "of" right: (_) @type) @binding.element
(call_expression
  function: (member_expression object: (_) @type property: (property_identifier) @method)
  arguments: (arguments . (arrow_function parameters: (formal_parameters . (_ pattern: (identifier) @name))))
  (#match? @method "^(forEach|map|filter|find|findLast|some|every|flatMap)$")) @binding.element
(call_expression
  function: (member_expression object: (_) @type property: (property_identifier) @method)
  arguments: (arguments . (arrow_function parameter: (identifier) @name))
  (#match? @method "^(forEach|map|filter|find|findLast|some|every|flatMap)$")) @binding.element
; `createReducer(init, (builder) => …)`: a callback's parameter, typed by the parameter the
; called function declares for the callback.
(call_expression
  function: [(identifier) (member_expression)]
  arguments: (arguments (arrow_function parameter: (identifier) @name))) @type @binding.callback
(assignment_expression
  left: [(identifier) (member_expression object: (this))] @name
  right: (new_expression constructor: [(identifier) (member_expression)] @type)) @binding.call
(assignment_expression
  left: (member_expression object: (this)) @name
  right: (call_expression function: [(identifier) (member_expression)]) @type) @binding.call
(assignment_expression left: (member_expression object: (this)) @name right: [(null) (undefined)]) @binding.none
(assignment_expression
  left: [(identifier) (member_expression object: (this))] @name
  right: (identifier) @type) @binding.alias
(assignment_expression left: [(identifier) (member_expression object: (this))] @name) @binding.unknown

; `if (x instanceof C)`, `if (isC(x))`, `if (!(x instanceof C)) return`: the check narrows the
; name where it holds (worked out in code from the condition and its `if` statement).
(if_statement condition: (parenthesized_expression) @type) @binding.narrow

; References

(call_expression
  function: (identifier) @name
  (#not-eq? @name "require")) @reference.call
(call_expression
  function: (member_expression
    object: (_) @qualifier
    property: [(property_identifier) (private_property_identifier)] @name)) @reference.call
(new_expression constructor: (identifier) @name) @reference.new
(new_expression constructor: (member_expression
  object: (_) @qualifier
  property: (property_identifier) @name)) @reference.new
(decorator (identifier) @name) @reference.call
(decorator (call_expression function: (identifier) @name)) @reference.call

(member_expression
  object: (_) @qualifier
  property: (property_identifier) @name) @reference.read
(shorthand_property_identifier) @name @reference.read

; Plain names; built-in constants are dropped in code (cheaper than a predicate per name).
(identifier) @name @reference.read

; Documentation comments that link to names (`{@link Observable}`, `@see mergeMap`); the
; names are read from the comment text in code (doc_links.rs).
((comment) @doc (#match? @doc "\\{@link|@see "))

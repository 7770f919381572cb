; TypeScript and TSX (loaded after ecma/tags.scm).

(function_signature name: (identifier) @name) @definition.function
(method_signature name: (property_identifier) @name) @definition.method
(abstract_method_signature name: (property_identifier) @name) @definition.method
(abstract_class_declaration name: (type_identifier) @name body: (_) @body) @definition.class
(interface_declaration name: (type_identifier) @name body: (_) @body) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name body: (_) @body) @definition.enum
(enum_body (property_identifier) @name @definition.constant)
(enum_body (enum_assignment name: (property_identifier) @name) @definition.constant)
(internal_module name: (identifier) @name body: (_) @body) @definition.module
(module name: (identifier) @name body: (_) @body) @definition.module
(public_field_definition name: (property_identifier) @name) @definition.field
(property_signature name: (property_identifier) @name) @definition.field
; `constructor(private onInvalidate_: () => void)` declares a property of the class.
(required_parameter (accessibility_modifier) pattern: (identifier) @name) @definition.field
(optional_parameter (accessibility_modifier) pattern: (identifier) @name) @definition.field

; Generic parameters (`function f<T>()`, `class C<T>`, `interface I<T>`): visible inside the
; declaration that introduces them, where they shadow every global of the same name.
(type_parameter name: (type_identifier) @name) @definition.type_parameter
; `{ [K in keyof T]: … }` and `T extends Array<infer U> ? U : never` declare parameters too.
(mapped_type_clause name: (type_identifier) @name) @definition.type_parameter
(infer_type . (type_identifier) @name) @definition.type_parameter

; Type facts (after ecma/tags.scm's): annotations of parameters, variables, fields and
; returns; `constructor(private x: X)` declares the property `this.x`.

(required_parameter
  (accessibility_modifier)
  pattern: (identifier) @name
  type: (type_annotation (_) @type)) @binding.property
(required_parameter pattern: (identifier) @name type: (type_annotation (_) @type)) @binding.annotation
(optional_parameter pattern: (identifier) @name type: (type_annotation (_) @type)) @binding.annotation
(required_parameter pattern: (identifier) @name) @binding.unknown
(optional_parameter pattern: (identifier) @name) @binding.unknown
(public_field_definition name: (property_identifier) @name type: (type_annotation (_) @type)) @binding.annotation
(public_field_definition name: (private_property_identifier) @name type: (type_annotation (_) @type)) @binding.annotation
(property_signature name: (property_identifier) @name type: (type_annotation (_) @type)) @binding.annotation
(public_field_definition
  name: (property_identifier) @name
  value: (new_expression constructor: [(identifier) (member_expression)] @type)) @binding.call
(variable_declarator name: (identifier) @name type: (type_annotation (_) @type)) @binding.annotation
; `defs[path] as Procedure | undefined`: as if annotated so.
(variable_declarator name: (identifier) @name value: (as_expression) @type) @binding.cast
(call_expression
  function: [(identifier) (member_expression)]
  arguments: (arguments (arrow_function
    parameters: (formal_parameters (required_parameter pattern: (identifier) @name))))) @type @binding.callback
; `new Map<string, Entry>()`: as if annotated `Map<string, Entry>`.
(variable_declarator
  name: (identifier) @name
  value: (new_expression type_arguments: (type_arguments)) @type) @binding.construct
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: (new_expression type_arguments: (type_arguments)) @type) @binding.construct
(required_parameter
  (accessibility_modifier)
  pattern: (identifier) @name
  value: (new_expression type_arguments: (type_arguments)) @type) @binding.construct_property
(assignment_expression
  left: (member_expression object: (this)) @name
  right: (new_expression type_arguments: (type_arguments)) @type) @binding.construct
; `return { batch() {…} } as const`: the object literal a factory returns.
(return_statement [(as_expression (object) @type) (satisfies_expression (object) @type)]) @binding.literal
(arrow_function body: (parenthesized_expression [(as_expression (object) @type) (satisfies_expression (object) @type)])) @binding.literal
(function_declaration return_type: (type_annotation (_) @type)) @binding.returns
(variable_declarator value: (arrow_function return_type: (type_annotation (_) @type))) @binding.returns
(variable_declarator value: (function_expression return_type: (type_annotation (_) @type))) @binding.returns
(method_definition return_type: (type_annotation (_) @type)) @binding.returns
(method_signature return_type: (type_annotation (_) @type)) @binding.returns
(abstract_method_signature return_type: (type_annotation (_) @type)) @binding.returns
(function_signature return_type: (type_annotation (_) @type)) @binding.returns
; `function isC(v): v is C`: a user type guard, kept as `v is C`.
(function_declaration return_type: (type_predicate_annotation (type_predicate) @type)) @binding.returns
(variable_declarator value: (arrow_function return_type: (type_predicate_annotation (type_predicate) @type))) @binding.returns
(method_definition return_type: (type_predicate_annotation (type_predicate) @type)) @binding.returns
; `type Entry = A | B`: what the alias stands for (a receiver so typed has each type's members).
(type_alias_declaration name: (type_identifier) @name value: (union_type) @type) @binding.type_alias

(required_parameter pattern: (identifier) @local)
(optional_parameter pattern: (identifier) @local)

([(class_declaration name: (type_identifier) @subject
    (class_heritage (extends_clause value: [(identifier) @target
                                            (member_expression object: (_) @qualifier property: (property_identifier) @target)])))
  (abstract_class_declaration name: (type_identifier) @subject
    (class_heritage (extends_clause value: [(identifier) @target
                                            (member_expression object: (_) @qualifier property: (property_identifier) @target)])))]) @relation.inherits

([(class_declaration name: (type_identifier) @subject
    (class_heritage (implements_clause [(type_identifier) @target
                                        (generic_type name: (type_identifier) @target)])))
  (abstract_class_declaration name: (type_identifier) @subject
    (class_heritage (implements_clause [(type_identifier) @target
                                        (generic_type name: (type_identifier) @target)])))]) @relation.implements

(interface_declaration
  name: (type_identifier) @subject
  (extends_type_clause type: [(type_identifier) @target
                              (generic_type name: (type_identifier) @target)])) @relation.inherits

(nested_type_identifier module: (_) @qualifier name: (type_identifier) @name) @reference.type
(type_identifier) @name @reference.type

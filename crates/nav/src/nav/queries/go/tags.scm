; Definitions

(function_declaration name: (identifier) @name body: (_)? @body) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      name: (identifier)? @receiver_var
      type: [(type_identifier) @receiver
             (pointer_type (type_identifier) @receiver)
             (generic_type type: (type_identifier) @receiver)
             (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name
  body: (_)? @body) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type) @body) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type) @body) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(method_elem name: (field_identifier) @name) @definition.method
(field_declaration name: (field_identifier) @name) @definition.field
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))

; Relations: struct embedding and interface embedding

(type_spec
  name: (type_identifier) @subject
  type: (struct_type (field_declaration_list
    (field_declaration . type: [(type_identifier) @target
                                (pointer_type (type_identifier) @target)
                                (qualified_type package: (package_identifier) @qualifier name: (type_identifier) @target)] .)))) @relation.inherits

(type_spec
  name: (type_identifier) @subject
  type: (interface_type (type_elem [(type_identifier) @target
                                    (qualified_type package: (package_identifier) @qualifier name: (type_identifier) @target)]))) @relation.inherits

; Local bindings

(parameter_declaration name: (identifier) @local)
(variadic_parameter_declaration name: (identifier) @local)
(short_var_declaration left: (expression_list (identifier) @local))
(range_clause left: (expression_list (identifier) @local))
(var_spec name: (identifier) @local)
(const_spec name: (identifier) @local)

; Names that are not references

(keyed_element . (literal_element (identifier) @ignore))

; References

(call_expression
  function: (identifier) @name) @reference.call
(call_expression
  function: (selector_expression
    operand: (_) @qualifier
    field: (field_identifier) @name)) @reference.call
(call_expression
  function: (parenthesized_expression (identifier) @name)) @reference.call

(composite_literal type: (type_identifier) @name) @reference.new
(composite_literal type: (qualified_type package: (package_identifier) @qualifier name: (type_identifier) @name)) @reference.new

(qualified_type package: (package_identifier) @qualifier name: (type_identifier) @name) @reference.type
(type_identifier) @name @reference.type

(selector_expression operand: (_) @qualifier field: (field_identifier) @name) @reference.read

; Plain names; built-in constants are dropped in code (cheaper than a predicate per name).
(identifier) @name @reference.read

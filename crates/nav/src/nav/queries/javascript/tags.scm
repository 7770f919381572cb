; JavaScript only (loaded after ecma/tags.scm).

(formal_parameters (identifier) @local)
(formal_parameters (assignment_pattern left: (identifier) @local))

(class name: (_) @name body: (_) @body) @definition.class
(field_definition property: (property_identifier) @name) @definition.field

(class_declaration
  name: (identifier) @subject
  (class_heritage [(identifier) @target
                   (member_expression object: (_) @qualifier property: (property_identifier) @target)])) @relation.inherits

(jsx_opening_element name: (identifier) @name) @reference.new
(jsx_self_closing_element name: (identifier) @name) @reference.new

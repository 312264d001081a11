; Definitions for Go (tree-sitter-go 0.25).
; A declaration holding a single spec (`type Foo struct {...}`, `const X = 1`) is captured
; whole; the specs of a grouped declaration (`type ( ... )`, `const ( ... )`) one by one.

(function_declaration
  name: (identifier) @name) @definition.function

(method_declaration
  name: (field_identifier) @name) @definition.method

; Types, by what they define.
(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.struct

(type_declaration
  .
  (type_spec
    name: (type_identifier) @name
    type: (struct_type))
  .) @definition.struct

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(type_declaration
  .
  (type_spec
    name: (type_identifier) @name
    type: (interface_type))
  .) @definition.interface

[
  (type_spec
    name: (type_identifier) @name
    type: [
      (type_identifier)
      (generic_type)
      (qualified_type)
      (pointer_type)
      (array_type)
      (slice_type)
      (map_type)
      (channel_type)
      (function_type)
      (negated_type)
      (parenthesized_type)
    ])
  (type_alias
    name: (type_identifier) @name)
] @definition.type

(type_declaration
  .
  [
    (type_spec
      name: (type_identifier) @name
      type: [
        (type_identifier)
        (generic_type)
        (qualified_type)
        (pointer_type)
        (array_type)
        (slice_type)
        (map_type)
        (channel_type)
        (function_type)
        (negated_type)
        (parenthesized_type)
      ])
    (type_alias
      name: (type_identifier) @name)
  ]
  .) @definition.type

; Package-level constants.
(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name) @definition.constant))

(source_file
  (const_declaration
    .
    (const_spec
      name: (identifier) @name)
    .) @definition.constant)

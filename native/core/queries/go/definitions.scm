; Definitions for Go (tree-sitter-go 0.25).
; A declaration holding a single spec (`type Foo struct {...}`, `const X = 1`) is captured
; whole; the specs of a grouped declaration (`type ( ... )`, `const ( ... )`) one by one.

(function_declaration
  name: (identifier) @name) @definition.function

; Methods: `@receiver` is the receiver's type name, which the chunker uses as the parent of the
; method's path (`func (g *Greeter) Speak()` -> `Greeter.Speak`, `func (b Box[T]) Get()` ->
; `Box.Get`).
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @receiver
        (generic_type
          type: (type_identifier) @receiver)
        (pointer_type
          [
            (type_identifier) @receiver
            (generic_type
              type: (type_identifier) @receiver)
          ])
      ]))
  name: (field_identifier) @name) @definition.method

; Parenthesized receiver types (`func (g (*Greeter)) Speak()`, legal but rare) keep the bare name.
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: (parenthesized_type)))
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

; Package-level variables (sentinel errors, defaults, registries), not locals in bodies;
; `var _ Interface = (*T)(nil)` only asserts and names nothing.
(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name)) @definition.variable
  (#not-eq? @name "_"))

(source_file
  (var_declaration
    (var_spec_list
      (var_spec
        name: (identifier) @name) @definition.variable))
  (#not-eq? @name "_"))

; A named struct's fields (`Router.NotFoundHandler`), one per name of a declaration
; (`X, Y int`); embedded types declare no name of their own.
(type_spec
  type: (struct_type
    (field_declaration_list
      (field_declaration
        name: (field_identifier) @name @definition.field))))

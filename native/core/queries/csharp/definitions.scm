; Definitions for C# (tree-sitter-c-sharp 0.23).
; Attribute lists and modifiers are children of the declaration, so they are part of its
; range. Members without a body (interface or abstract methods) are not captured.
; File-scoped namespaces (`namespace A.B;`) are a single line that does not contain the types,
; so only block namespaces are captured.

(namespace_declaration
  name: (_) @name) @definition.module

[
  (class_declaration
    name: (identifier) @name)
  (record_declaration
    name: (identifier) @name)
] @definition.class

(struct_declaration
  name: (identifier) @name) @definition.struct

(interface_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.enum

(delegate_declaration
  name: (identifier) @name) @definition.type

[
  (method_declaration
    name: (identifier) @name
    body: (_))
  (constructor_declaration
    name: (identifier) @name
    body: (_))
  (destructor_declaration
    name: (identifier) @name
    body: (_))
] @definition.method

; Local functions inside method bodies.
(local_function_statement
  name: (identifier) @name
  body: (_)) @definition.function

; An enum's members (`Mood.Happy`).
(enum_member_declaration_list
  (enum_member_declaration
    name: (identifier) @name) @definition.variant)

; A type's fields and properties (`Options.Timeout`), one per declarator.
(declaration_list
  (field_declaration
    (variable_declaration
      (variable_declarator
        name: (identifier) @name))) @definition.field)

(declaration_list
  (property_declaration
    name: (identifier) @name) @definition.field)

; A positional record's parameters are its properties (`record Person(string Name)`).
(record_declaration
  (parameter_list
    (parameter
      name: (identifier) @name) @definition.field))

; Definitions for Java (tree-sitter-java 0.23).
; Annotations and modifiers are children of the declaration, so they are part of its range.
; Abstract and interface methods without a body are not captured.

[
  (class_declaration
    name: (identifier) @name)
  (record_declaration
    name: (identifier) @name)
] @definition.class

[
  (interface_declaration
    name: (identifier) @name)
  (annotation_type_declaration
    name: (identifier) @name)
] @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.enum

(method_declaration
  name: (identifier) @name
  body: (block)) @definition.method

[
  (constructor_declaration
    name: (identifier) @name)
  (compact_constructor_declaration
    name: (identifier) @name)
] @definition.method

; Constants: `static final` fields (`public static final int MAX_DEPTH = 64;`), one per
; declarator (`static final int A = 1, B = 2;` defines two).
(field_declaration
  [
    (modifiers
      "static"
      "final")
    (modifiers
      "final"
      "static")
  ]
  declarator: (variable_declarator
    name: (identifier) @name) @definition.constant)

; A declaration of one constant is captured whole as well (the wider capture wins), so its
; Javadoc, which precedes the modifiers rather than the declarator, stays with it.
(field_declaration
  [
    (modifiers
      "static"
      "final")
    (modifiers
      "final"
      "static")
  ]
  type: (_)
  .
  declarator: (variable_declarator
    name: (identifier) @name)
  .) @definition.constant

; An enum's constants (`Mood.HAPPY`).
(enum_body
  (enum_constant
    name: (identifier) @name) @definition.variant)

; A class's fields (`Client.timeoutMillis`), one per declarator; a `static final` one is a
; constant (the patterns above capture it too, and the constant wins).
(class_body
  (field_declaration
    declarator: (variable_declarator
      name: (identifier) @name) @definition.field))

(class_body
  (field_declaration
    type: (_)
    .
    declarator: (variable_declarator
      name: (identifier) @name)
    .) @definition.field)

; A record's components are its fields (`record Point(int x, int y)`).
(record_declaration
  parameters: (formal_parameters
    (formal_parameter
      name: (identifier) @name) @definition.field))

; References only TypeScript has (appended to queries/ecmascript/references.scm; the TSX
; query adds queries/ecmascript/jsx.scm; tree-sitter-typescript 0.23).

; `import config = require('./config')`.
(import_statement
  (import_require_clause
    (identifier) @import.alias
    source: (string
      (string_fragment) @import.module)))

; `class Repo extends Base<User> implements Store, ns.Named<T>` (abstract classes too).
; Mixin calls in `extends` are not followed.
([
  (class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (extends_clause
        value: [
          (identifier)
          (member_expression)
        ] @inherit.base)))
  (abstract_class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (extends_clause
        value: [
          (identifier)
          (member_expression)
        ] @inherit.base)))
])

([
  (class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (implements_clause
        [
          (type_identifier)
          (nested_type_identifier)
          (generic_type)
        ] @inherit.base)))
  (abstract_class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (implements_clause
        [
          (type_identifier)
          (nested_type_identifier)
          (generic_type)
        ] @inherit.base)))
])

; `const Repo = class extends Base {}`.
(variable_declarator
  name: (identifier) @inherit.class
  value: (class
    (class_heritage
      (extends_clause
        value: [
          (identifier)
          (member_expression)
        ] @inherit.base))))

; `interface Entity extends Named, Partial<Base>`.
(interface_declaration
  name: (type_identifier) @inherit.class
  (extends_type_clause
    type: [
      (type_identifier)
      (nested_type_identifier)
      (generic_type)
    ] @inherit.base))

; Parameters declared with a type (`store: Store`, `h: http.Headers`, `s?: Store`,
; `s: Store | null`): a call on the parameter is a call on that type (src/refs.rs reads it).
(required_parameter
  pattern: (identifier) @bind.name
  type: (type_annotation
    [
      (type_identifier)
      (nested_type_identifier)
      (union_type)
    ] @bind.type))

(optional_parameter
  pattern: (identifier) @bind.name
  type: (type_annotation
    [
      (type_identifier)
      (nested_type_identifier)
      (union_type)
    ] @bind.type))

; Variables and fields declared with a type (`let store: Store`, `private store: Store;`,
; `constructor(private store: Store)`) or a class field constructed with `new`.
(variable_declarator
  name: (identifier) @bind.name
  type: (type_annotation
    [
      (type_identifier)
      (nested_type_identifier)
      (union_type)
    ] @bind.type))

(public_field_definition
  name: (property_identifier) @bind.field
  type: (type_annotation
    [
      (type_identifier)
      (nested_type_identifier)
      (union_type)
    ] @bind.type))

(public_field_definition
  name: (property_identifier) @bind.field
  value: (new_expression
    constructor: [
      (identifier)
      (member_expression)
    ] @bind.type))

(required_parameter
  (accessibility_modifier)
  pattern: (identifier) @bind.field
  type: (type_annotation
    [
      (type_identifier)
      (nested_type_identifier)
      (union_type)
    ] @bind.type))

; Definitions for Swift (tree-sitter-swift 0.7).
; `class_declaration` covers class, struct, enum, actor and extension (`declaration_kind`).
; Quirk: this grammar also labels a typealias value and a function's return type with the
; `name` field, so names are matched by node type (`type_identifier`, `simple_identifier`)
; rather than by the field alone. Protocol requirements have no body and are not captured.

[
  (class_declaration
    declaration_kind: "class"
    name: (type_identifier) @name)
  (class_declaration
    declaration_kind: "actor"
    name: (type_identifier) @name)
] @definition.class

(class_declaration
  declaration_kind: "struct"
  name: (type_identifier) @name) @definition.struct

(class_declaration
  declaration_kind: "enum"
  name: (type_identifier) @name) @definition.enum

; `extension Greeter: CustomStringConvertible { ... }`, `extension Foo.Bar { ... }`.
(class_declaration
  declaration_kind: "extension"
  name: [
    (type_identifier)
    (user_type)
  ] @name) @definition.impl

(protocol_declaration
  name: (type_identifier) @name) @definition.interface

; The name as a checked wildcard: a typed child here made compiling Swift's queries take 20
; times as long (tree-sitter analyses it against every state of this large node). The field
; also holds operators and, per the quirk above, the return type; `#kind?` keeps the name.
(function_declaration
  name: _ @name
  (#kind? @name "simple_identifier")) @definition.function

; Initialisers and deinitialisers are named by their keyword.
(init_declaration
  name: "init" @name
  body: (function_body)) @definition.function

(deinit_declaration
  "deinit" @name
  body: (function_body)) @definition.function

(typealias_declaration
  name: (type_identifier) @name) @definition.type

; An enum's cases, one per name (`case north, south`).
(enum_entry
  name: _ @name) @definition.variant

; A type's stored and computed properties (`Config.timeout`) and a protocol's required ones.
(class_body
  (property_declaration
    name: (pattern
      bound_identifier: (simple_identifier) @name)) @definition.field)

(protocol_body
  (protocol_property_declaration
    name: (pattern
      bound_identifier: (simple_identifier) @name)) @definition.field)

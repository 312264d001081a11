; References for Scala 2 and 3 (tree-sitter-scala 0.26); capture names in src/refs.rs.

; Calls: `f(x)`, `f[T](x)`, `f { ... }`, `Foo(x)` (a case class's or object's apply).
(call_expression
  function: [
    (identifier) @call.name
    (generic_function
      function: (identifier) @call.name)
  ])

; `obj.m(x)`, `Type.m(x)`, `this.m()`, `super.m()`, `pkg.sub.f()`, `xs.map[T](f)`.
((call_expression
  function: [
    (field_expression
      value: (_) @call.receiver
      field: (identifier) @call.name)
    (generic_function
      function: (field_expression
        value: (_) @call.receiver
        field: (identifier) @call.name))
  ])
  (#not-match? @call.receiver "^new\\s"))

; `new App().run()`: the receiver's type is the class created.
(call_expression
  function: (field_expression
    value: (instance_expression
      [
        (type_identifier) @call.receiver
        (generic_type
          type: (type_identifier) @call.receiver)
      ])
    field: (identifier) @call.name))

; `new User(1, name)`, `new Box[Int]`, `new pkg.User()` call the class.
(instance_expression
  [
    (type_identifier) @call.name
    (stable_type_identifier) @call.name
    (generic_type
      type: [
        (type_identifier)
        (stable_type_identifier)
      ] @call.name)
  ])

; `import a.b.C`: the path's last name is the imported name, the names before it (one
; capture each, joined back into one path) its package, or its object for
; `import a.b.Obj.f`.
(import_declaration
  .
  ((identifier) @import.module
    ".")+
  (identifier) @import.name .)

; `import a.b._` (Scala 2) and `import a.b.*` (Scala 3): every name of the package or object.
(import_declaration
  .
  ((identifier) @import.module
    ".")+
  (namespace_wildcard) @import.name)

; `import a.b.{C, D => E, F as G}`: one import per selector.
(import_declaration
  .
  ((identifier) @import.module
    ".")+
  (namespace_selectors
    [
      (identifier) @import.name
      (arrow_renamed_identifier
        name: (identifier) @import.name
        alias: (identifier) @import.alias)
      (as_renamed_identifier
        name: (identifier) @import.name
        alias: (identifier) @import.alias)
    ]))

; `class User extends Entity(id) with Named with Ordered[User]`, and the same for objects,
; traits and enums. (The bases are matched without their `type:` field name, which would
; only ever match the first.)
([
  (class_definition
    name: (identifier) @inherit.class
    extend: (extends_clause
      [
        (type_identifier)
        (stable_type_identifier)
        (generic_type)
      ] @inherit.base))
  (object_definition
    name: (identifier) @inherit.class
    extend: (extends_clause
      [
        (type_identifier)
        (stable_type_identifier)
        (generic_type)
      ] @inherit.base))
  (trait_definition
    name: (identifier) @inherit.class
    extend: (extends_clause
      [
        (type_identifier)
        (stable_type_identifier)
        (generic_type)
      ] @inherit.base))
  (enum_definition
    name: (identifier) @inherit.class
    extend: (extends_clause
      [
        (type_identifier)
        (stable_type_identifier)
        (generic_type)
      ] @inherit.base))
])

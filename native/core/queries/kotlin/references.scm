; References for Kotlin (tree-sitter-kotlin-ng 1.1); capture names in src/refs.rs.

; Calls: `f()`, `f<T>()`, `Foo(x)` (a constructor call looks the same), `f { ... }`.
(call_expression
  .
  (identifier) @call.name)

; The grammar reads `!isBlank(x)` as `(!isBlank)(x)`: the operand is the called name.
(call_expression
  .
  (unary_expression
    argument: (identifier) @call.name))

; `obj.m()`, `Type.m()`, `this.m()`, `super.m()`, `a?.m()`, `pkg.sub.f()`.
((call_expression
  .
  (navigation_expression
    .
    (_) @call.receiver
    (identifier) @call.name .))
  (#not-match? @call.receiver "^([A-Z][A-Za-z0-9_]*\\s*\\(|super\\s*<|this@)"))

; `super<Entity>.m()` is a call on super; `this@App.m()` on the enclosing class App.
(call_expression
  .
  (navigation_expression
    .
    (super_expression
      "super" @call.receiver
      (user_type))
    (identifier) @call.name .))

(call_expression
  .
  (navigation_expression
    .
    (this_expression
      (identifier) @call.receiver)
    (identifier) @call.name .))

; `App().run()`: a capitalised callee is a constructor, so the receiver's type is known.
((call_expression
  .
  (navigation_expression
    .
    (call_expression
      .
      (identifier) @call.receiver
      .
      (value_arguments))
    (identifier) @call.name .))
  (#match? @call.receiver "^[A-Z]"))

; `import a.b.C` and `import a.b.C as D`: the path's last name is the imported name, the
; names before it (one capture each, joined back into one path) its package, or its class
; for `import a.b.Obj.f`.
((import
  (qualified_identifier
    .
    ((identifier) @import.module
      ".")+
    (identifier) @import.name .)
  (identifier)? @import.alias .) @_import
  (#not-match? @_import "\\*"))

; `import a.b.*`: every name of the package (or of the object).
(import
  (qualified_identifier) @import.module
  "*" @import.name)

; `class User(id: Long) : Entity(id), Named, Comparable<User>`, `object Registry : Base()`,
; `class Repo(db: Db) : Store by db`.
(class_declaration
  name: (identifier) @inherit.class
  (delegation_specifiers
    (delegation_specifier
      [
        (user_type) @inherit.base
        (constructor_invocation
          (user_type) @inherit.base)
        (explicit_delegation
          (user_type) @inherit.base)
      ])))

(object_declaration
  name: (identifier) @inherit.class
  (delegation_specifiers
    (delegation_specifier
      [
        (user_type) @inherit.base
        (constructor_invocation
          (user_type) @inherit.base)
        (explicit_delegation
          (user_type) @inherit.base)
      ])))

; Parameters, variables and properties declared with a type or built by a constructor call
; (`s: Store`, `s: Store?`, `val s = Store()`, `private val store: Store`,
; `class Service(private val store: Store)`): a call on them, or on `this.store`, is a call
; on that type. A property of a class body is its field; any other is a variable.
(parameter
  (identifier) @bind.name
  [
    (user_type) @bind.type
    (nullable_type
      (user_type) @bind.type)
  ])

(property_declaration
  (variable_declaration
    (identifier) @bind.name
    [
      (user_type) @bind.type
      (nullable_type
        (user_type) @bind.type)
    ]))

((property_declaration
  (variable_declaration
    (identifier) @bind.name .)
  (call_expression
    .
    (identifier) @bind.type
    .
    (value_arguments)))
  (#match? @bind.type "^[A-Z]"))

(class_body
  (property_declaration
    (variable_declaration
      (identifier) @bind.field
      [
        (user_type) @bind.type
        (nullable_type
          (user_type) @bind.type)
      ])))

(class_body
  ((property_declaration
    (variable_declaration
      (identifier) @bind.field .)
    (call_expression
      .
      (identifier) @bind.type
      .
      (value_arguments)))
    (#match? @bind.type "^[A-Z]")))

(class_parameter
  (identifier) @bind.field
  [
    (user_type) @bind.type
    (nullable_type
      (user_type) @bind.type)
  ])

; References for Java (tree-sitter-java 0.23); capture names in src/refs.rs.

; Calls: `f()`, `obj.m()`, `Type.staticM()`, `this.m()`, `super.m()`, `a.b.c.m()`.
(method_invocation
  !object
  name: (identifier) @call.name)

((method_invocation
  object: (_) @call.receiver
  name: (identifier) @call.name)
  (#not-match? @call.receiver "^new\\s"))

; `new App().run()`: the receiver's type is the class created.
(method_invocation
  object: (object_creation_expression
    type: [
      (type_identifier) @call.receiver
      (generic_type
        (type_identifier) @call.receiver)
    ])
  name: (identifier) @call.name)

; `new User(name)` and `new pkg.User()` call the class (its constructor); generic
; arguments are dropped (`new Box<T>()` -> `Box`).
(object_creation_expression
  type: [
    (type_identifier) @call.name
    (scoped_type_identifier) @call.name
    (generic_type
      [
        (type_identifier) @call.name
        (scoped_type_identifier) @call.name
      ])
  ])

; Method references: `User::of`, `this::validate`.
(method_reference
  .
  (_) @call.receiver
  .
  (identifier) @call.name .)

; `import a.b.C;` binds `C`, a name of package `a.b` (module `a.b`, name `C`), so that a
; class is found in its package's directory whatever the file is called.
; `import static a.b.C.f;` binds the member `f` of class `a.b.C` (module `a.b.C`, name `f`).
(import_declaration
  (scoped_identifier
    scope: (_) @import.module
    name: (identifier) @import.name) .)

; `import a.b.*;` and `import static a.b.C.*;`: every name of the package or class.
(import_declaration
  [
    (scoped_identifier)
    (identifier)
  ] @import.module
  (asterisk) @import.name)

; `class User extends Entity implements Named, Comparable<User>`.
(class_declaration
  name: (identifier) @inherit.class
  superclass: (superclass
    (_) @inherit.base))

(class_declaration
  name: (identifier) @inherit.class
  interfaces: (super_interfaces
    (type_list
      (_) @inherit.base)))

; `interface Job extends Runnable, Named`.
(interface_declaration
  name: (identifier) @inherit.class
  (extends_interfaces
    (type_list
      (_) @inherit.base)))

; `enum Kind implements Named`, `record Point(int x) implements Shape`.
(enum_declaration
  name: (identifier) @inherit.class
  interfaces: (super_interfaces
    (type_list
      (_) @inherit.base)))

(record_declaration
  name: (identifier) @inherit.class
  interfaces: (super_interfaces
    (type_list
      (_) @inherit.base)))

; Parameters declared with a type (`Store store`, `final pkg.Store s`): a call on the
; parameter is a call on that type.
(formal_parameter
  type: [
    (type_identifier)
    (scoped_type_identifier)
  ] @bind.type
  name: (identifier) @bind.name)

; Local variables and fields declared with a type (`Store store = open();`,
; `private final Store store;`) or constructed (`var store = new Store();`).
(local_variable_declaration
  type: [
    (type_identifier)
    (scoped_type_identifier)
  ] @bind.type
  declarator: (variable_declarator
    name: (identifier) @bind.name)
  (#not-eq? @bind.type "var"))

(local_variable_declaration
  declarator: (variable_declarator
    name: (identifier) @bind.name
    value: (object_creation_expression
      type: [
        (type_identifier)
        (scoped_type_identifier)
      ] @bind.type)))

(field_declaration
  type: [
    (type_identifier)
    (scoped_type_identifier)
  ] @bind.type
  declarator: (variable_declarator
    name: (identifier) @bind.field))

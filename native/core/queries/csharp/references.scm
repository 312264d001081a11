; References for C# (tree-sitter-c-sharp 0.23); capture names in src/refs.rs.

; Calls: `F()`, `F<T>()`.
(invocation_expression
  function: [
    (identifier) @call.name
    (generic_name
      (identifier) @call.name)
  ])

; `obj.M()`, `Type.M<T>()`, `this.M()`, `base.M()`, `Ns.Type.M()` (`this` and `base` are
; anonymous nodes, hence `_`).
((invocation_expression
  function: (member_access_expression
    expression: _ @call.receiver
    name: [
      (identifier) @call.name
      (generic_name
        (identifier) @call.name)
    ]))
  (#not-match? @call.receiver "^new\\s"))

; `new Program().Run()`: the receiver's type is the class created.
(invocation_expression
  function: (member_access_expression
    expression: (object_creation_expression
      type: [
        (identifier) @call.receiver
        (generic_name
          (identifier) @call.receiver)
      ])
    name: [
      (identifier) @call.name
      (generic_name
        (identifier) @call.name)
    ]))

; `obj?.M()`.
(invocation_expression
  function: (conditional_access_expression
    condition: (_) @call.receiver
    (member_binding_expression
      name: [
        (identifier) @call.name
        (generic_name
          (identifier) @call.name)
      ])))

; `new User(name)`, `new List<int>()`, `new Ns.User()` call the class (its constructor).
(object_creation_expression
  type: [
    (identifier) @call.name
    (qualified_name) @call.name
    (generic_name
      (identifier) @call.name)
  ])

; `using Shop.Models;`, `global using System.Linq;`: a namespace's names in scope, binding
; none. `using static Shop.Util.Strings;` the same for a class's static members.
(using_directive
  !name
  [
    (identifier)
    (qualified_name)
  ] @import.module)

; `using Json = System.Text.Json.JsonSerializer;`: a type or namespace bound to a name.
(using_directive
  name: (identifier) @import.alias
  [
    (identifier)
    (qualified_name)
    (generic_name)
  ] @import.module)

; `class User : Entity, INamed, IComparable<User>`, structs, interfaces, records
; (`record R(int X) : Base(X)`).
(_
  name: (identifier) @inherit.class
  (base_list
    [
      (identifier)
      (qualified_name)
      (generic_name)
      (primary_constructor_base_type
        type: (_))
    ] @inherit.base))

; Parameters, locals, fields and properties declared with a type (`Store store`,
; `Store s = Open();`, `var s = new Store();`, `private readonly Store _store;`,
; `public Store Store { get; }`): a call on them, or on `this._store`, is a call on that type.
(parameter
  type: [
    (identifier)
    (qualified_name)
  ] @bind.type
  name: (identifier) @bind.name)

(local_declaration_statement
  (variable_declaration
    type: [
      (identifier)
      (qualified_name)
    ] @bind.type
    (variable_declarator
      name: (identifier) @bind.name)))

(local_declaration_statement
  (variable_declaration
    type: (implicit_type)
    (variable_declarator
      name: (identifier) @bind.name
      (object_creation_expression
        type: [
          (identifier)
          (qualified_name)
        ] @bind.type))))

(field_declaration
  (variable_declaration
    type: [
      (identifier)
      (qualified_name)
    ] @bind.type
    (variable_declarator
      name: (identifier) @bind.field)))

(property_declaration
  type: [
    (identifier)
    (qualified_name)
  ] @bind.type
  name: (identifier) @bind.field)

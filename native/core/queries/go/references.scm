; References for Go (tree-sitter-go 0.25); capture names in src/refs.rs.

; ---------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------

; `helper()`, `NewStore()`, and conversions that look like calls (`MyInt(3)`).
(call_expression
  function: (identifier) @call.name)

; `fmt.Println()` (a package), `s.Put()` (a value or the method's receiver),
; `s.log.Printf()`.
(call_expression
  function: (selector_expression
    operand: (_) @call.receiver
    field: (field_identifier) @call.name))

; Explicit instantiation of a generic function: `Map[int](xs)`, `slices.Index[T](xs)`.
(call_expression
  function: (index_expression
    operand: (identifier) @call.name))

(call_expression
  function: (index_expression
    operand: (selector_expression
      operand: (_) @call.receiver
      field: (field_identifier) @call.name)))

; `New[int](2)` parses as a conversion to a generic type.
(type_conversion_expression
  type: (generic_type
    type: (type_identifier) @call.name))

(type_conversion_expression
  type: (generic_type
    type: (qualified_type
      package: (package_identifier) @call.receiver
      name: (type_identifier) @call.name)))

; ---------------------------------------------------------------------------------------
; Imports. The path is the module; the package is bound to its last path segment (or the
; alias). Packages in the repository are found by the directory ending the import path.
; ---------------------------------------------------------------------------------------

; `import "example.com/app/store"`, `import ("fmt"; "strings")`.
(import_spec
  !name
  path: (_) @import.module)

; `import st "example.com/app/store"`.
(import_spec
  name: (package_identifier) @import.alias
  path: (_) @import.module)

; `import . "example.com/app/store"`: every exported name of the package is in scope
; (the `.` is read as a wildcard). Blank imports (`_`) bind nothing and are skipped.
(import_spec
  name: (dot) @import.name
  path: (_) @import.module)

; ---------------------------------------------------------------------------------------
; Inheritance: struct embedding (`type Store struct { *Logger; sync.Mutex }`) promotes
; the embedded type's methods, so `s.Log()` on a Store reaches Logger.Log; interface
; embedding (`type ReadWriter interface { Reader; io.Writer }`).
; ---------------------------------------------------------------------------------------

(type_spec
  name: (type_identifier) @inherit.class
  type: (struct_type
    (field_declaration_list
      (field_declaration
        !name
        type: [
          (type_identifier)
          (qualified_type)
          (generic_type)
        ] @inherit.base))))

(type_spec
  name: (type_identifier) @inherit.class
  type: (interface_type
    (type_elem
      .
      [
        (type_identifier)
        (qualified_type)
        (generic_type)
      ] @inherit.base
      .)))

; Parameters declared with a type (`s *Store`, `t Store`, `u pkg.Store`): a call on the
; parameter is a call on that type.
(parameter_declaration
  name: (identifier) @bind.name
  type: [
    (type_identifier)
    (qualified_type)
    (pointer_type
      [
        (type_identifier)
        (qualified_type)
      ])
  ] @bind.type)

; Variables declared with a type or built from a literal (`var st Store`,
; `st := &Store{}`, `st := store.Store{}`) and struct fields (`db *DB`): a call on them,
; or on `s.db` in a method of the struct, is a call on that type.
(var_spec
  name: (identifier) @bind.name
  type: [
    (type_identifier)
    (qualified_type)
    (pointer_type
      [
        (type_identifier)
        (qualified_type)
      ])
  ] @bind.type)

(short_var_declaration
  left: (expression_list
    .
    (identifier) @bind.name .)
  right: (expression_list
    .
    [
      (composite_literal
        type: [
          (type_identifier)
          (qualified_type)
        ] @bind.type)
      (unary_expression
        operand: (composite_literal
          type: [
            (type_identifier)
            (qualified_type)
          ] @bind.type))
    ] .))

(field_declaration
  name: (field_identifier) @bind.field
  type: [
    (type_identifier)
    (qualified_type)
    (pointer_type
      [
        (type_identifier)
        (qualified_type)
      ])
  ] @bind.type)

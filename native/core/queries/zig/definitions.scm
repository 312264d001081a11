; Definitions for Zig (tree-sitter-zig 1.1).
; Zig names containers by binding them: `const Greeter = struct { ... };` is a struct named
; Greeter, captured with its whole declaration. Functions nested in containers are
; reclassified as methods by the chunker.

(function_declaration
  name: (identifier) @name) @definition.function

[
  (variable_declaration
    .
    (identifier) @name
    (struct_declaration))
  (variable_declaration
    .
    (identifier) @name
    (union_declaration))
] @definition.struct

(variable_declaration
  .
  (identifier) @name
  (enum_declaration)) @definition.enum

; `const Handle = opaque {};`, `const Error = error{ A, B };`.
[
  (variable_declaration
    .
    (identifier) @name
    (opaque_declaration))
  (variable_declaration
    .
    (identifier) @name
    (error_set_declaration))
] @definition.type

; `test "name" { ... }` and doctests `test Greeter { ... }`.
(test_declaration
  [
    (string
      (string_content) @name)
    (identifier) @name
  ]) @definition.function

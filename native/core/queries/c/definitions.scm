; Definitions for C (tree-sitter-c 0.24).
; Only functions with a body are captured, not prototypes.

; `int f(void) {}`, `char *f(void) {}`, `char **f(void) {}`.
(function_definition
  declarator: [
    (function_declarator
      declarator: (identifier) @name)
    (pointer_declarator
      declarator: (function_declarator
        declarator: (identifier) @name))
    (pointer_declarator
      declarator: (pointer_declarator
        declarator: (function_declarator
          declarator: (identifier) @name)))
  ]) @definition.function

; Tagged types with a body: `struct greeter { ... };`.
[
  (struct_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
  (union_specifier
    name: (type_identifier) @name
    body: (field_declaration_list))
] @definition.struct

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.enum

; `typedef struct node { ... } node_t;`: the typedef wraps the tagged definition (same name).
(type_definition
  type: [
    (struct_specifier
      name: (type_identifier) @name
      body: (field_declaration_list))
    (union_specifier
      name: (type_identifier) @name
      body: (field_declaration_list))
  ]) @definition.struct

(type_definition
  type: (enum_specifier
    name: (type_identifier) @name
    body: (enumerator_list))) @definition.enum

; `typedef struct { ... } greeting_t;`: an anonymous body named by the typedef.
(type_definition
  type: [
    (struct_specifier
      !name
      body: (field_declaration_list))
    (union_specifier
      !name
      body: (field_declaration_list))
  ]
  declarator: (type_identifier) @name) @definition.struct

(type_definition
  type: (enum_specifier
    !name
    body: (enumerator_list))
  declarator: (type_identifier) @name) @definition.enum

; Plain aliases: `typedef unsigned long counter_t;`, `typedef struct opaque opaque_t;`.
(type_definition
  type: [
    (primitive_type)
    (sized_type_specifier)
    (type_identifier)
    (struct_specifier
      !body)
    (union_specifier
      !body)
    (enum_specifier
      !body)
  ]
  declarator: (type_identifier) @name) @definition.type

; Function-like macros: `#define MIN(a, b) ...`.
(preproc_function_def
  name: (identifier) @name) @definition.macro

; Object-like macros with a value: `#define MAX_DEPTH 64` (an include guard has none).
(preproc_def
  name: (identifier) @name
  value: (preproc_arg)) @definition.constant

; An enum's constants (`REDIS_OK`, `Color::Red`).
(enumerator_list
  (enumerator
    name: (identifier) @name) @definition.variant)

; A struct's or union's fields (`client.flags`), through pointer and array declarators
; (`char *name`, `int argv[8]`); a bit-field's name as well.
(field_declaration_list
  (field_declaration
    declarator: [
      (field_identifier) @name
      (pointer_declarator
        declarator: (field_identifier) @name)
      (pointer_declarator
        declarator: (pointer_declarator
          declarator: (field_identifier) @name))
      (array_declarator
        declarator: (field_identifier) @name)
    ]) @definition.field)

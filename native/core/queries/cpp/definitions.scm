; Definitions for C++ (tree-sitter-cpp 0.23).
; Only functions with a body are captured: not prototypes, `= default`, `= delete` or pure
; virtual declarations. The name of an out-of-class definition is the whole qualified name
; (`Greeter::speak`); in-class definitions are named by their field identifier, destructor or
; operator name. Every function definition is a `function`: the chunker reclassifies those
; nested directly in a class body as methods (a query cannot tell a constructor defined in a
; class from a free function without listing every possible parent). Names are wildcards
; whose kind `#kind?` checks after the match: typed alternatives cost tree-sitter's query
; analysis about a quarter more to compile (see `SyntaxQuery` in src/lang.rs).

(function_definition
  declarator: [
    (function_declarator
      declarator: _ @name)
    (pointer_declarator
      declarator: (function_declarator
        declarator: _ @name))
    (pointer_declarator
      declarator: (pointer_declarator
        declarator: (function_declarator
          declarator: _ @name)))
    (reference_declarator
      (function_declarator
        declarator: _ @name))
  ]
  body: (_)
  (#kind? @name "identifier" "field_identifier" "qualified_identifier" "destructor_name"
    "operator_name" "template_function")) @definition.function

; Templated functions and member functions: the template declaration wraps the definition.
(template_declaration
  (function_definition
    declarator: [
      (function_declarator
        declarator: _ @name)
      (pointer_declarator
        declarator: (function_declarator
          declarator: _ @name))
      (reference_declarator
        (function_declarator
          declarator: _ @name))
    ]
    body: (_))
  (#kind? @name "identifier" "field_identifier" "qualified_identifier" "operator_name"
    "template_function")) @definition.function

; Classes, structs, unions and enums with a body; `Foo<int>` specialisations are named `Foo`.
(class_specifier
  name: [
    (type_identifier) @name
    (qualified_identifier) @name
    (template_type
      name: (type_identifier) @name)
  ]
  body: (field_declaration_list)) @definition.class

[
  (struct_specifier
    name: [
      (type_identifier) @name
      (qualified_identifier) @name
      (template_type
        name: (type_identifier) @name)
    ]
    body: (field_declaration_list))
  (union_specifier
    name: [
      (type_identifier) @name
      (qualified_identifier) @name
    ]
    body: (field_declaration_list))
] @definition.struct

(enum_specifier
  name: [
    (type_identifier) @name
    (qualified_identifier) @name
  ]
  body: (enumerator_list)) @definition.enum

(template_declaration
  (class_specifier
    name: [
      (type_identifier) @name
      (qualified_identifier) @name
      (template_type
        name: (type_identifier) @name)
    ]
    body: (field_declaration_list))) @definition.class

(template_declaration
  [
    (struct_specifier
      name: [
        (type_identifier) @name
        (qualified_identifier) @name
        (template_type
          name: (type_identifier) @name)
      ]
      body: (field_declaration_list))
    (union_specifier
      name: [
        (type_identifier) @name
        (qualified_identifier) @name
      ]
      body: (field_declaration_list))
  ]) @definition.struct

; C-style typedefs, as in C: the typedef wraps a tagged body (same name), names an anonymous
; body, or is a plain alias.
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
  type: [
    (primitive_type)
    (sized_type_specifier)
    (type_identifier)
    (qualified_identifier)
    (template_type)
  ]
  declarator: (type_identifier) @name) @definition.type

; `using Names = std::vector<std::string>;`, optionally templated.
(alias_declaration
  name: (type_identifier) @name) @definition.type

(template_declaration
  (alias_declaration
    name: (type_identifier) @name)) @definition.type

; `namespace greet { ... }`, `namespace a::b { ... }`; anonymous namespaces have no name.
(namespace_definition
  name: _ @name
  (#kind? @name "namespace_identifier" "nested_namespace_specifier")) @definition.module

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

; A class's or struct's data members (`Options.block_size`), through pointer, reference and
; array declarators; member functions declared in the class are not fields.
(field_declaration_list
  (field_declaration
    declarator: [
      (field_identifier) @name
      (pointer_declarator
        declarator: (field_identifier) @name)
      (reference_declarator
        (field_identifier) @name)
      (array_declarator
        declarator: (field_identifier) @name)
    ]) @definition.field)

; Definitions for TypeScript and TSX (tree-sitter-typescript 0.23, both grammars).
; Signatures without a body (`declare function`, abstract methods, overloads) are not captured.

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

[
  (class_declaration
    name: (type_identifier) @name)
  (abstract_class_declaration
    name: (type_identifier) @name)
] @definition.class

(interface_declaration
  name: (type_identifier) @name) @definition.interface

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.enum

; `namespace A.B { ... }`, `module Legacy { ... }`, `declare module "pkg" { ... }`.
[
  (internal_module
    name: [
      (identifier)
      (nested_identifier)
    ] @name)
  (module
    name: [
      (identifier)
      (nested_identifier)
    ] @name)
  (module
    name: (string
      (string_fragment) @name))
] @definition.module

(method_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.method

; Class fields holding a function: `handle = (event: Event) => { ... }`.
(public_field_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name
  value: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.method

; `const f = () => {}`, `let g = function () {}`, `var C = class {}`: the whole declaration.
([
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: [
        (arrow_function)
        (function_expression)
        (generator_function)
      ]))
  (variable_declaration
    (variable_declarator
      name: (identifier) @name
      value: [
        (arrow_function)
        (function_expression)
        (generator_function)
      ]))
] @definition.function)

([
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: (class)))
  (variable_declaration
    (variable_declarator
      name: (identifier) @name
      value: (class)))
] @definition.class)

; `Foo.prototype.bar = function () {}`, `exports.baz = () => {}`.
(expression_statement
  (assignment_expression
    left: (member_expression
      property: (property_identifier) @name)
    right: [
      (arrow_function)
      (function_expression)
      (generator_function)
    ])) @definition.function

; `export` / `export default` / `declare` wrappers: the same names with the outer statement.
(export_statement
  declaration: [
    (function_declaration
      name: (identifier) @name)
    (generator_function_declaration
      name: (identifier) @name)
  ]) @definition.function

(export_statement
  declaration: [
    (class_declaration
      name: (type_identifier) @name)
    (abstract_class_declaration
      name: (type_identifier) @name)
  ]) @definition.class

(export_statement
  declaration: (interface_declaration
    name: (type_identifier) @name)) @definition.interface

(export_statement
  declaration: (type_alias_declaration
    name: (type_identifier) @name)) @definition.type

(export_statement
  declaration: (enum_declaration
    name: (identifier) @name)) @definition.enum

(export_statement
  declaration: (internal_module
    name: [
      (identifier)
      (nested_identifier)
    ] @name)) @definition.module

(ambient_declaration
  [
    (internal_module
      name: [
        (identifier)
        (nested_identifier)
      ] @name)
    (module
      name: [
        (identifier)
        (nested_identifier)
      ] @name)
    (module
      name: (string
        (string_fragment) @name))
  ]) @definition.module

(export_statement
  declaration: (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: [
        (arrow_function)
        (function_expression)
        (generator_function)
      ]))) @definition.function

(export_statement
  declaration: (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: (class)))) @definition.class

; An enum's members (`SyntaxKind.Identifier`), with a value or without.
(enum_body
  name: (property_identifier) @name @definition.variant)

(enum_body
  (enum_assignment
    name: (property_identifier) @name) @definition.variant)

; A class's fields and an interface's properties (`Options.timeout`); a field holding a
; function is a method (above: of two captures as wide, the field gives way).
(public_field_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.field

(interface_body
  (property_signature
    name: (property_identifier) @name) @definition.field)

; A constructor's parameter properties (`constructor(private readonly http: Http)`): an
; access modifier or `readonly` makes a parameter a field.
([
  (required_parameter
    (accessibility_modifier)
    pattern: (identifier) @name)
  (optional_parameter
    (accessibility_modifier)
    pattern: (identifier) @name)
  (required_parameter
    "readonly"
    pattern: (identifier) @name)
  (optional_parameter
    "readonly"
    pattern: (identifier) @name)
] @definition.field)

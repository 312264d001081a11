; Definitions for PHP (tree-sitter-php 0.24, the `php` grammar with inline HTML).
; Attributes (`#[...]`) are children of the declaration. Abstract and interface methods
; without a body are not captured. The statement form `namespace App\Greet;` is one line that
; does not contain the file's definitions, so only block namespaces are captured.

(namespace_definition
  name: (namespace_name) @name
  body: (compound_statement)) @definition.module

(class_declaration
  name: (name) @name) @definition.class

(interface_declaration
  name: (name) @name) @definition.interface

(trait_declaration
  name: (name) @name) @definition.trait

(enum_declaration
  name: (name) @name) @definition.enum

(function_definition
  name: (name) @name) @definition.function

(method_declaration
  name: (name) @name
  body: (compound_statement)) @definition.method

; Class and namespace constants: `const MAX_DEPTH = 64;`, `public const A = 1, B = 2;` (one
; per element).
(const_declaration
  (const_element
    (name) @name) @definition.constant)

; An enum's cases (`Suit::Hearts`).
(enum_case
  name: (name) @name) @definition.variant

; A class's properties (`Client::$timeout`, named without the `$`), and a constructor's
; promoted parameters (`__construct(private int $port)`).
(property_declaration
  (property_element
    name: (variable_name
      (name) @name)) @definition.field)

(property_promotion_parameter
  name: (variable_name
    (name) @name)) @definition.field

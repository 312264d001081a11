; Definitions for Scala 2 and 3 (tree-sitter-scala 0.26).
; Annotations and modifiers are children of the definition. Abstract members (`def f: Int`
; without a body, `type T` without a right-hand side) and vals are not captured; neither are
; anonymous givens and extension blocks (the methods inside them are).

(class_definition
  name: (identifier) @name) @definition.class

; Objects are singleton classes; their methods are methods.
(object_definition
  name: (identifier) @name) @definition.class

(package_object
  name: (identifier) @name) @definition.module

(trait_definition
  name: (identifier) @name) @definition.trait

(enum_definition
  name: (identifier) @name) @definition.enum

(function_definition
  name: [
    (identifier)
    (operator_identifier)
  ] @name) @definition.function

(type_definition
  name: (type_identifier) @name
  type: (_)) @definition.type

; An enum's cases (`case Red, Green` and `case Planet(mass: Double)`).
(simple_enum_case
  name: (identifier) @name) @definition.variant

(full_enum_case
  name: (identifier) @name) @definition.variant

; A class's or object's `val`s and `var`s (`Config.timeout`).
(template_body
  [
    (val_definition
      pattern: (identifier) @name)
    (var_definition
      pattern: (identifier) @name)
  ] @definition.field)

; Class parameters that are fields: `val` and `var` ones, and every parameter of a case
; class (`case class Point(x: Int, y: Int)`).
(class_parameter
  [
    "val"
    "var"
  ]
  name: (identifier) @name) @definition.field

(class_definition
  "case"
  (class_parameters
    (class_parameter
      name: (_) @name) @definition.field))

; Definitions for Kotlin (tree-sitter-kotlin-ng 1.1).
; Annotations and modifiers are children of the declaration. `class_declaration` covers
; classes, interfaces and enum classes: the keyword token tells interfaces apart, and enum
; classes are told apart by their leading text (a query cannot test for a missing child), so
; each class matches exactly one pattern. Functions without a body (abstract or interface
; members) are not captured; functions nested in classes are reclassified by the chunker.

(class_declaration
  "interface"
  name: (identifier) @name) @definition.interface

((class_declaration
  "class"
  name: (identifier) @name) @definition.class
  (#not-match? @definition.class "^[^{]*\\benum\\s+class\\b"))

((class_declaration
  "class"
  name: (identifier) @name) @definition.enum
  (#match? @definition.enum "^[^{]*\\benum\\s+class\\b"))

; `object Registry { ... }` and named companions (`companion object Factory { ... }`).
[
  (object_declaration
    name: (identifier) @name)
  (companion_object
    name: (identifier) @name)
] @definition.class

(function_declaration
  name: (identifier) @name
  (function_body)) @definition.function

(type_alias
  type: (identifier) @name) @definition.type

; An enum class's entries (`Mood.HAPPY`).
(enum_entry
  (identifier) @name) @definition.variant

; A class's properties (`User.email`); upper-case names are left to constants.
((class_body
  (property_declaration
    (variable_declaration
      (identifier) @name)) @definition.field)
  (#not-match? @name "^_*[A-Z][A-Z0-9_]+$"))

; A primary constructor's `val` and `var` parameters are properties too (`data class
; User(val email: String)`); plain parameters are not.
(class_parameter
  [
    "val"
    "var"
  ]
  .
  (identifier) @name) @definition.field

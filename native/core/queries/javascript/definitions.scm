; Definitions for JavaScript (tree-sitter-javascript 0.25).

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(class_declaration
  name: (identifier) @name) @definition.class

(method_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.method

; Class fields holding a function: `onClick = (event) => { ... }`.
(field_definition
  property: [
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

; `export` / `export default` wrappers: the same names with the outer statement.
(export_statement
  declaration: [
    (function_declaration
      name: (identifier) @name)
    (generator_function_declaration
      name: (identifier) @name)
  ]) @definition.function

(export_statement
  declaration: (class_declaration
    name: (identifier) @name)) @definition.class

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

; A class's fields (`count = 0`, `#secret`); a field holding a function is a method (above:
; of two captures as wide, the field gives way).
(field_definition
  property: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.field

; References for C++ (tree-sitter-cpp 0.23); capture names in src/refs.rs.
; Not covered: calls through overloaded operators, implicit constructor calls in
; declarations (`Circle c{1.0};`), ADL, and which override a virtual call runs.

; ---------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------

; `helper()`, `Circle(2.0)` (a temporary), function-like macros.
(call_expression
  function: (identifier) @call.name)

; `obj.area()`, `ptr->area()`, `this->log()`, `obj.get<int>()`.
(call_expression
  function: (field_expression
    argument: (_) @call.receiver
    field: [
      (field_identifier) @call.name
      (template_method
        name: (field_identifier) @call.name)
      (dependent_name
        (template_method
          name: (field_identifier) @call.name))
    ]))

; Qualified calls, captured whole and split on the last `::`: `Shape::log()` (a base
; class's method or a static one), `util::clamp()`, `a::b::f()`, `::global()`.
; One pattern for any depth: the name is a wildcard whose kind is checked (#kind?), which
; compiles in a fraction of the time of the nested patterns it replaced; template arguments
; anywhere in the name are left to the template patterns below.
((call_expression
  function: (qualified_identifier
    scope: (namespace_identifier)
    name: _ @_name) @call.name)
  (#kind? @_name "identifier" "qualified_identifier")
  (#not-match? @call.name "<"))

(call_expression
  function: (qualified_identifier
    !scope
    name: (identifier)) @call.name)

; `Base<T>::f()`: the class without its template arguments.
(call_expression
  function: (qualified_identifier
    scope: (template_type
      name: (type_identifier) @call.receiver)
    name: (identifier) @call.name))

; Template calls: `make<int>()`, `std::make_unique<Circle>()`.
(call_expression
  function: (template_function
    name: (identifier) @call.name))

(call_expression
  function: (qualified_identifier
    scope: (namespace_identifier) @call.receiver
    name: (template_function
      name: (identifier) @call.name)))

; `new Circle(1.0)`, `new shapes::Circle(1.0)`: a call of the class (its constructor).
(new_expression
  type: [
    (type_identifier)
    (qualified_identifier)
  ] @call.name)

(new_expression
  type: (template_type
    name: (type_identifier) @call.name))

; ---------------------------------------------------------------------------------------
; Imports
; ---------------------------------------------------------------------------------------

; `#include "shapes/circle.hpp"`, `#include <vector>`: the header's names and those of its
; source file are in scope (quoted paths relative to the including file first, then by
; path suffix anywhere in the tree).
(preproc_include
  path: [
    (string_literal)
    (system_lib_string)
  ] @import.module)

; `using namespace shapes;`: every name of the namespace (in the files defining it) is in
; scope; a namespace the repository does not define (`std`) brings nothing.
(using_declaration
  "namespace"
  [
    (identifier)
    (qualified_identifier)
  ] @import.module)

; `using std::max;`, `using shapes::Circle;`: one name of a namespace.
((using_declaration
  (qualified_identifier
    scope: (_) @import.module
    name: (identifier) @import.name)) @_using
  (#not-match? @_using "^using\\s+namespace"))

; `namespace fs = std::filesystem;`: `fs::exists()` calls into std::filesystem.
(namespace_alias_definition
  name: (namespace_identifier) @import.alias
  "="
  [
    (namespace_identifier)
    (nested_namespace_specifier)
  ] @import.module)

; ---------------------------------------------------------------------------------------
; Inheritance: `class Circle : public Shape, private util::Base<T>`.
; ---------------------------------------------------------------------------------------

(class_specifier
  name: [
    (type_identifier) @inherit.class
    (template_type
      name: (type_identifier) @inherit.class)
  ]
  (base_class_clause
    [
      (type_identifier)
      (qualified_identifier)
      (template_type)
    ] @inherit.base))

(struct_specifier
  name: [
    (type_identifier) @inherit.class
    (template_type
      name: (type_identifier) @inherit.class)
  ]
  (base_class_clause
    [
      (type_identifier)
      (qualified_identifier)
      (template_type)
    ] @inherit.base))

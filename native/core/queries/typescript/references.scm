; References for TypeScript and TSX (tree-sitter-typescript 0.23, both grammars: only
; nodes the two share, so JSX elements are not captured); capture names in src/refs.rs.

; Calls: `f()`, `f<T>()`, `obj.m()`, `this.m()`, `this.#m()`, `super.m()`, `a?.b()`.
; `require('./m')` is an import (below), not a call.
((call_expression
  function: (identifier) @call.name)
  (#not-eq? @call.name "require"))

(call_expression
  function: (member_expression
    object: (_) @call.receiver
    property: [
      (property_identifier)
      (private_property_identifier)
    ] @call.name))

; `new User()`, `new Box<T>()` and `new models.User()` call the class.
(new_expression
  constructor: (identifier) @call.name)

(new_expression
  constructor: (member_expression
    object: (_) @call.receiver
    property: (property_identifier) @call.name))

; `import Base from './base'`: a file of the repository's default export, looked up by the
; name it is bound to (default exports are usually named so).
((import_statement
  (import_clause
    (identifier) @import.name)
  source: (string
    (string_fragment) @import.module))
  (#match? @import.module "^\\."))

; `import express from 'express'`: a package bound as a whole.
((import_statement
  (import_clause
    (identifier) @import.alias)
  source: (string
    (string_fragment) @import.module))
  (#not-match? @import.module "^\\."))

; `import { a, b as c } from './m'`, `import type { T } from './m'`.
(import_statement
  (import_clause
    (named_imports
      (import_specifier
        name: (identifier) @import.name
        alias: (identifier)? @import.alias)))
  source: (string
    (string_fragment) @import.module))

; `import * as text from './text'`: the module bound to a name.
(import_statement
  (import_clause
    (namespace_import
      (identifier) @import.alias))
  source: (string
    (string_fragment) @import.module))

; `import config = require('./config')`.
(import_statement
  (import_require_clause
    (identifier) @import.alias
    source: (string
      (string_fragment) @import.module)))

; CommonJS: `const util = require('./util')`, `const { a, b: c } = require('./m')`.
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string
        (string_fragment) @import.module)))
  (#eq? @_require "require"))

(variable_declarator
  name: (object_pattern
    (shorthand_property_identifier_pattern) @import.name)
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string
        (string_fragment) @import.module)))
  (#eq? @_require "require"))

(variable_declarator
  name: (object_pattern
    (pair_pattern
      key: (property_identifier) @import.name
      value: (identifier) @import.alias))
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string
        (string_fragment) @import.module)))
  (#eq? @_require "require"))

; `class Repo extends Base<User> implements Store, ns.Named<T>` (abstract classes too).
; Mixin calls in `extends` are not followed.
([
  (class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (extends_clause
        value: [
          (identifier)
          (member_expression)
        ] @inherit.base)))
  (abstract_class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (extends_clause
        value: [
          (identifier)
          (member_expression)
        ] @inherit.base)))
])

([
  (class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (implements_clause
        [
          (type_identifier)
          (nested_type_identifier)
          (generic_type)
        ] @inherit.base)))
  (abstract_class_declaration
    name: (type_identifier) @inherit.class
    (class_heritage
      (implements_clause
        [
          (type_identifier)
          (nested_type_identifier)
          (generic_type)
        ] @inherit.base)))
])

; `const Repo = class extends Base {}`.
(variable_declarator
  name: (identifier) @inherit.class
  value: (class
    (class_heritage
      (extends_clause
        value: [
          (identifier)
          (member_expression)
        ] @inherit.base))))

; `interface Entity extends Named, Partial<Base>`.
(interface_declaration
  name: (type_identifier) @inherit.class
  (extends_type_clause
    type: [
      (type_identifier)
      (nested_type_identifier)
      (generic_type)
    ] @inherit.base))

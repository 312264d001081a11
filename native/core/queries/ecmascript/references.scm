;; References shared by JavaScript, TypeScript and TSX (the grammars name these nodes
;; alike); each language's own file adds what only it has. Capture names in src/refs.rs.

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

; `import Base from './base.js'`: a file of the repository's default export, looked up by
; the name it is bound to (default exports are usually named so).
((import_statement
  (import_clause
    (identifier) @import.name)
  source: (string
    (string_fragment) @import.module))
  (#match? @import.module "^\\."))

; `import fs from 'fs'`, `import React from 'react'`: a package bound as a whole.
((import_statement
  (import_clause
    (identifier) @import.alias)
  source: (string
    (string_fragment) @import.module))
  (#not-match? @import.module "^\\."))

; `import { a, b as c } from './m'`.
(import_statement
  (import_clause
    (named_imports
      (import_specifier
        name: (identifier) @import.name
        alias: (identifier)? @import.alias)))
  source: (string
    (string_fragment) @import.module))

; `import * as util from './util'`: the module bound to a name.
(import_statement
  (import_clause
    (namespace_import
      (identifier) @import.alias))
  source: (string
    (string_fragment) @import.module))

; CommonJS: `const util = require('./util')`.
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string
        (string_fragment) @import.module)))
  (#eq? @_require "require"))

; `const { a, b: c } = require('./m')`.
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

; Variables and fields constructed with `new` (`const store = new Store()`,
; `this.store = new db.Store()`): a call on them is a call on that type.
(variable_declarator
  name: (identifier) @bind.name
  value: (new_expression
    constructor: [
      (identifier)
      (member_expression)
    ] @bind.type))

(assignment_expression
  left: (member_expression
    object: (this)
    property: (property_identifier) @bind.field)
  right: (new_expression
    constructor: [
      (identifier)
      (member_expression)
    ] @bind.type))

; References for Lua (tree-sitter-lua 0.4); capture names in src/refs.rs.
; A module is a table returned by its file and bound with `local m = require("a.b")`;
; `a.b` is the file `a/b.lua` (or `a/b/init.lua`). Functions stored in tables are named by
; their last segment and owned by the table (see `Graph::build`).

; `helper(1)`, `print(x)`.
(function_call
  name: (identifier) @call.name
  (#not-eq? @call.name "require"))

; `util.helper(1)`, `M.shout(s)`, `json.encode(t)`.
(function_call
  name: (dot_index_expression
    table: (_) @call.receiver
    field: (identifier) @call.name))

; `self:log("x")`, `s:upper()`: a method call passing the receiver as `self`.
(function_call
  name: (method_index_expression
    table: (_) @call.receiver
    method: (identifier) @call.name))

; `local util = require("lib.util")`, `local json = require "cjson"`.
(variable_declaration
  (assignment_statement
    (variable_list
      .
      name: (identifier) @import.alias
      .)
    (expression_list
      .
      value: (function_call
        name: (identifier) @_require
        arguments: (arguments
          .
          (string
            content: (string_content) @import.module)))
      .))
  (#eq? @_require "require"))

; `util = require("lib.util")` (a global binding).
(assignment_statement
  (variable_list
    .
    name: (identifier) @import.alias
    .)
  (expression_list
    .
    value: (function_call
      name: (identifier) @_require
      arguments: (arguments
        .
        (string
          content: (string_content) @import.module)))
    .)
  (#eq? @_require "require"))

; `require("strict")` for its effects: binds the module's last segment by default.
(chunk
  (function_call
    name: (identifier) @_require
    arguments: (arguments
      .
      (string
        content: (string_content) @import.module)))
  (#eq? @_require "require"))

; `local Dog = setmetatable({}, { __index = Animal })`: Dog's missing fields (its methods)
; are looked up in Animal, Lua's inheritance.
(variable_declaration
  (assignment_statement
    (variable_list
      .
      name: (identifier) @inherit.class
      .)
    (expression_list
      .
      value: (function_call
        name: (identifier) @_setmetatable
        arguments: (arguments
          (table_constructor
            (field
              name: (identifier) @_index
              value: [
                (identifier)
                (dot_index_expression)
              ] @inherit.base))))
      .))
  (#eq? @_setmetatable "setmetatable")
  (#eq? @_index "__index"))

; `setmetatable(Dog, { __index = Animal })` as a statement.
(function_call
  name: (identifier) @_setmetatable
  arguments: (arguments
    .
    (identifier) @inherit.class
    .
    (table_constructor
      (field
        name: (identifier) @_index
        value: [
          (identifier)
          (dot_index_expression)
        ] @inherit.base)))
  (#eq? @_setmetatable "setmetatable")
  (#eq? @_index "__index"))

; `local Dog = Animal:extend()` (the `classic` library and its kin).
(variable_declaration
  (assignment_statement
    (variable_list
      .
      name: (identifier) @inherit.class
      .)
    (expression_list
      .
      value: (function_call
        name: (method_index_expression
          table: [
            (identifier)
            (dot_index_expression)
          ] @inherit.base
          method: (identifier) @_extend))
      .))
  (#eq? @_extend "extend"))

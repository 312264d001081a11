; Definitions for Lua (tree-sitter-lua 0.4).
; Names are the full name as written: `Greeter.new`, `Greeter:greet`, `shout`.

; `function f()`, `local function f()`, `function M.f()`, `function M:f()`.
(function_declaration
  name: [
    (identifier)
    (dot_index_expression)
    (method_index_expression)
  ] @name) @definition.function

; `M.f = function () end`, `f = function () end` (one target, one value).
(assignment_statement
  (variable_list
    .
    name: [
      (identifier)
      (dot_index_expression)
    ] @name
    .)
  (expression_list
    .
    value: (function_definition)
    .)) @definition.function

; `local f = function () end`: the whole local declaration.
(variable_declaration
  (assignment_statement
    (variable_list
      .
      name: (identifier) @name
      .)
    (expression_list
      .
      value: (function_definition)
      .))) @definition.function

; Definitions for Bash and POSIX shells (tree-sitter-bash 0.25).
; Both `name() { ... }` and `function name { ... }` are function_definition nodes.

(function_definition
  name: (word) @name) @definition.function

; Constants for JavaScript, TypeScript and TSX (their grammars share these nodes).
; Upper-case module-level constants: `const MAX_DEPTH = 64`, `export const API_URL = "..."`,
; one per declarator (`const A = 1, B = 2` defines two).
(program
  [
    (lexical_declaration
      (variable_declarator
        name: (identifier) @name) @definition.constant)
    (variable_declaration
      (variable_declarator
        name: (identifier) @name) @definition.constant)
  ]
  (#match? @name "^_*[A-Z][A-Z0-9_]+$"))

(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator
        name: (identifier) @name) @definition.constant))
  (#match? @name "^_*[A-Z][A-Z0-9_]+$"))

; Definitions for Python (tree-sitter-python 0.25).
; Methods are plain function_definitions nested in a class body; the chunker reclassifies them.

(function_definition
  name: (identifier) @name) @definition.function

(class_definition
  name: (identifier) @name) @definition.class

; Decorators belong to the definition: capture the decorated_definition as well.
(decorated_definition
  definition: (function_definition
    name: (identifier) @name)) @definition.function

(decorated_definition
  definition: (class_definition
    name: (identifier) @name)) @definition.class

; PEP 695: `type Vector = list[float]`, `type Pair[T] = tuple[T, T]`.
(type_alias_statement
  left: (type
    [
      (identifier) @name
      (generic_type
        (identifier) @name)
    ])) @definition.type

; Module-level constants: `DEFAULT_TIMEOUT = 30`, `MAX_SIZE: int = 1 << 20`. Upper-case names
; only: other module-level assignments are code, not names a reader looks up.
(module
  (expression_statement
    (assignment
      left: (identifier) @name)) @definition.constant
  (#match? @name "^_*[A-Z][A-Z0-9_]+$"))

; Class-level constants and enum members: `TIMEOUT = 30` and `RED = 1` in a class body.
(class_definition
  body: (block
    (expression_statement
      (assignment
        left: (identifier) @name)) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]+$"))

; A class's fields: `name: str`, `timeout: int = 30`, `title = models.CharField(...)` in a
; class body (lower-case names; dunders such as `__slots__` are not fields).
(class_definition
  body: (block
    (expression_statement
      (assignment
        left: (identifier) @name)) @definition.field)
  (#not-match? @name "^_*[A-Z][A-Z0-9_]+$")
  (#not-match? @name "^__.*__$"))

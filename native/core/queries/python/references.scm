; References for Python (tree-sitter-python 0.25); capture names in src/refs.rs.

; Calls: `f()`, `obj.method()`, `pkg.mod.f()`, `super().f()`.
(call
  function: (identifier) @call.name)

(call
  function: (attribute
    object: (_) @call.receiver
    attribute: (identifier) @call.name))

; `import a.b` binds `a`; `import a.b as m` binds `m`.
(import_statement
  name: (dotted_name) @import.module)

(import_statement
  name: (aliased_import
    name: (dotted_name) @import.module
    alias: (identifier) @import.alias))

; `from a.b import c`, `from . import c as d`, `from .m import *`.
(import_from_statement
  module_name: (_) @import.module
  name: (dotted_name) @import.name)

(import_from_statement
  module_name: (_) @import.module
  name: (aliased_import
    name: (dotted_name) @import.name
    alias: (identifier) @import.alias))

(import_from_statement
  module_name: (_) @import.module
  (wildcard_import) @import.name)

; `class Child(Base, mod.Mixin, Generic[T])`.
(class_definition
  name: (identifier) @inherit.class
  superclasses: (argument_list
    [
      (identifier) @inherit.base
      (attribute) @inherit.base
      (subscript
        value: (_) @inherit.base)
    ]))

; Parameters declared with a type (`store: Store`, `headers: httpx.Headers = None`): a call
; on the parameter is a call on that type. src/refs.rs reads the type as written: a forward
; reference (`"Console"`), `Optional[Store]` and `Store | None` name one type, other generic
; types none.
(typed_parameter
  .
  (identifier) @bind.name
  type: (type) @bind.type)

(typed_default_parameter
  name: (identifier) @bind.name
  type: (type) @bind.type)

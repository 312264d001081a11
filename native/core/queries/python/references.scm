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

; Variables constructed from a class (`store = Store()`, `store = app.Store(path)`; a name
; in CapWords, so `rows = fetch()` binds nothing) or annotated (`store: Store = open_it()`):
; a call on the variable is a call on that type.
(assignment
  left: (identifier) @bind.name
  right: (call
    function: [
      (identifier)
      (attribute)
    ] @bind.type)
  (#match? @bind.type "^([A-Za-z_][A-Za-z0-9_]*\\.)*_?[A-Z][A-Za-z0-9_]*$"))

(assignment
  left: (identifier) @bind.name
  type: (type) @bind.type)

; Fields: `self.store = Store()`, `self.store: Store = ...`, and a class body's
; `store: Store` (dataclasses, attrs, pydantic): `self.store.put()` in any method of the
; class is a call on that type.
(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @bind.field)
  right: (call
    function: [
      (identifier)
      (attribute)
    ] @bind.type)
  (#eq? @_self "self")
  (#match? @bind.type "^([A-Za-z_][A-Za-z0-9_]*\\.)*_?[A-Z][A-Za-z0-9_]*$"))

(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @bind.field)
  type: (type) @bind.type
  (#eq? @_self "self"))

(class_definition
  body: (block
    (expression_statement
      (assignment
        left: (identifier) @bind.field
        type: (type) @bind.type))))

; Definitions for Rust (tree-sitter-rust 0.24).
; Trait method signatures without a body are not captured (the trait itself is).

; Free functions: at the top level, in inline modules and nested in function bodies.
(source_file
  (function_item
    name: (identifier) @name) @definition.function)

(mod_item
  body: (declaration_list
    (function_item
      name: (identifier) @name) @definition.function))

(block
  (function_item
    name: (identifier) @name) @definition.function)

; Methods: functions in impl blocks and default methods in traits.
(impl_item
  body: (declaration_list
    (function_item
      name: (identifier) @name) @definition.method))

(trait_item
  body: (declaration_list
    (function_item
      name: (identifier) @name) @definition.method))

(struct_item
  name: (type_identifier) @name) @definition.struct

(union_item
  name: (type_identifier) @name) @definition.struct

(enum_item
  name: (type_identifier) @name) @definition.enum

(trait_item
  name: (type_identifier) @name) @definition.trait

; `impl Type`, `impl<T> Trait for Type<T>`, `impl fmt::Display for crate::Type`: the name is
; the implementing type's identifier.
(impl_item
  type: [
    (type_identifier) @name
    (generic_type
      type: (type_identifier) @name)
    (scoped_type_identifier
      name: (type_identifier) @name)
    (generic_type
      type: (scoped_type_identifier
        name: (type_identifier) @name))
    (primitive_type) @name
    (reference_type) @name
    (array_type) @name
    (tuple_type) @name
    (dynamic_type) @name
  ]) @definition.impl

; Inline modules only: `mod name;` has no body here.
(mod_item
  name: (identifier) @name
  body: (declaration_list)) @definition.module

(macro_definition
  name: (identifier) @name) @definition.macro

(type_item
  name: (type_identifier) @name) @definition.type

; Constants and statics wherever an item may stand (top level, modules, impls, traits, and a
; function's body: `const DASH_SPACE: usize = 2;` is an item there too); `let` bindings are
; not definitions.
[
  (const_item
    name: (identifier) @name)
  (static_item
    name: (identifier) @name)
] @definition.constant

; An enum's variants (`ErrorKind::NotFound`), each a definition of its own.
(enum_variant_list
  (enum_variant
    name: (identifier) @name) @definition.variant)

; A struct's or union's named fields (`Config.timeout`), each a definition of its own.
(struct_item
  body: (field_declaration_list
    (field_declaration
      name: (field_identifier) @name) @definition.field))

(union_item
  body: (field_declaration_list
    (field_declaration
      name: (field_identifier) @name) @definition.field))

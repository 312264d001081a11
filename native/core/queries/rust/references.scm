; References for Rust (tree-sitter-rust 0.24); capture names in src/refs.rs.

; ---------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------

; `helper()`, and tuple-struct / enum-variant constructors `Point(1, 2)`.
(call_expression
  function: (identifier) @call.name)

; `self.put()`, `db.open()`, `self.inner.flush()`.
(call_expression
  function: (field_expression
    value: (_) @call.receiver
    field: (field_identifier) @call.name))

; `Store::open()`, `Self::new()`, `crate::util::checksum()`, `super::helper()`.
(call_expression
  function: (scoped_identifier
    path: [
      (identifier)
      (scoped_identifier)
      (self)
      (super)
      (crate)
    ] @call.receiver
    name: (identifier) @call.name))

; `Vec::<u8>::new()`, `Store::<T>::open()`: the receiver without its type arguments.
(call_expression
  function: (scoped_identifier
    path: (generic_type
      type: [
        (type_identifier)
        (scoped_type_identifier)
      ] @call.receiver)
    name: (identifier) @call.name))

; Turbofish calls: `parse::<u8>()`, `iter.collect::<Vec<_>>()`, `mem::take::<T>()`.
(call_expression
  function: (generic_function
    function: (identifier) @call.name))

(call_expression
  function: (generic_function
    function: (field_expression
      value: (_) @call.receiver
      field: (field_identifier) @call.name)))

(call_expression
  function: (generic_function
    function: (scoped_identifier
      path: [
        (identifier)
        (scoped_identifier)
        (self)
        (super)
        (crate)
      ] @call.receiver
      name: (identifier) @call.name)))

; Macro invocations: `log_line!(..)`, `crate::log!(..)`. Macros from `macro_rules!` are
; definitions, so their callers are found; std macros (`println!`) end up unknown.
(macro_invocation
  macro: (identifier) @call.name)

(macro_invocation
  macro: (scoped_identifier
    path: (_) @call.receiver
    name: (identifier) @call.name))

; ---------------------------------------------------------------------------------------
; Imports. A `use` path is split like Python's `from a import b`: the module is the path
; before the last segment, the name its last segment (which may itself be a module:
; `use crate::util; util::f()` is found as a submodule). `crate::`, `self::` and `super::`
; are resolved against the file's module path.
; ---------------------------------------------------------------------------------------

; `use crate::store::Store;`, `use std::fmt;`.
(use_declaration
  argument: (scoped_identifier
    path: (_) @import.module
    name: (identifier) @import.name))

; `use crate::store::Store as Db;`.
(use_declaration
  argument: (use_as_clause
    path: (scoped_identifier
      path: (_) @import.module
      name: (identifier) @import.name)
    alias: (identifier) @import.alias))

; `use regex;`, `use serde as sd;` (an external crate, or a module in scope).
(use_declaration
  argument: (identifier) @import.module)

(use_declaration
  argument: (use_as_clause
    path: (identifier) @import.module
    alias: (identifier) @import.alias))

; `use crate::util::*;`, `use super::*;`.
(use_declaration
  argument: (use_wildcard
    [
      (identifier)
      (scoped_identifier)
      (self)
      (super)
      (crate)
    ] @import.module
    "*" @import.name))

; Use lists, at the top of a `use` or nested one level: `use crate::store::{Store, Cache};`,
; `use crate::{store::Store, util};` (a nested `a::b` name extends the module).
(scoped_use_list
  path: (_) @import.module
  list: (use_list
    [
      (identifier)
      (scoped_identifier)
    ] @import.name))

; `use crate::store::{Store as Db};`, `use crate::{store::Store as Db};`.
(scoped_use_list
  path: (_) @import.module
  list: (use_list
    (use_as_clause
      path: (_) @import.name
      alias: (identifier) @import.alias)))

; `use crate::util::{self, checksum};` binds the module itself (`util`).
(scoped_use_list
  path: (_) @import.module
  list: (use_list
    (self)))

; `use crate::util::{self as u};`.
(scoped_use_list
  path: (_) @import.module
  list: (use_list
    (use_as_clause
      path: (self)
      alias: (identifier) @import.alias)))

; `mod util;` declares the submodule `self::util` and binds `util`: `util::f()` then resolves
; to `util.rs` or `util/mod.rs` beside this module (a bare first segment is looked up
; relative to the current module first).
(mod_item
  name: (identifier) @import.module
  !body)

; ---------------------------------------------------------------------------------------
; Inheritance: `impl Trait for Type` (Type implements Trait, so `self.default_method()` in
; Type's impl reaches the trait's default methods) and supertraits `trait Cache: Storage`.
; ---------------------------------------------------------------------------------------

(impl_item
  trait: [
    (type_identifier)
    (scoped_type_identifier)
    (generic_type)
  ] @inherit.base
  type: [
    (type_identifier) @inherit.class
    (generic_type
      type: (type_identifier) @inherit.class)
    (scoped_type_identifier
      name: (type_identifier) @inherit.class)
    (generic_type
      type: (scoped_type_identifier
        name: (type_identifier) @inherit.class))
  ])

(trait_item
  name: (type_identifier) @inherit.class
  bounds: (trait_bounds
    [
      (type_identifier)
      (scoped_type_identifier)
      (generic_type)
    ] @inherit.base))

; Parameters declared with a type (`store: &Store`, `s: &mut Store`, `s: crate::a::Store`,
; `lines: &Lines<'_>`):
; a call on the parameter is a call on that type.
(parameter
  pattern: (identifier) @bind.name
  type: [
    (type_identifier) @bind.type
    (scoped_type_identifier) @bind.type
    ; With lifetimes alone (`Lines<'_>`); other generic types name no one type.
    (generic_type) @bind.type
    ; The referenced type alone: `&'a Store` would compact to one word with its lifetime.
    (reference_type
      type: [
        (type_identifier)
        (scoped_type_identifier)
        (generic_type)
      ] @bind.type)
  ])

; Variables declared with a type or built by their type (`let s: Store = ..`,
; `let s = Store::new(..)`, `let s = Store::open(..)?`, `let s = Store { .. }`; a path in
; CamelCase, so `let v = util::load()` binds nothing) and struct fields (`db: Db`,
; `db: &'a Db`): a call on them, or on `self.db` in the type's impl, is a call on that type.
(let_declaration
  pattern: (identifier) @bind.name
  type: [
    (type_identifier) @bind.type
    (scoped_type_identifier) @bind.type
    ; With lifetimes alone (`Lines<'_>`); other generic types name no one type.
    (generic_type) @bind.type
    ; The referenced type alone: `&'a Store` would compact to one word with its lifetime.
    (reference_type
      type: [
        (type_identifier)
        (scoped_type_identifier)
        (generic_type)
      ] @bind.type)
  ])

(let_declaration
  pattern: (identifier) @bind.name
  value: [
    (call_expression
      function: (scoped_identifier
        path: [
          (identifier)
          (scoped_identifier)
        ] @bind.type))
    (try_expression
      (call_expression
        function: (scoped_identifier
          path: [
            (identifier)
            (scoped_identifier)
          ] @bind.type)))
    (struct_expression
      name: [
        (type_identifier)
        (scoped_type_identifier)
      ] @bind.type)
  ]
  (#match? @bind.type "(^|::)[A-Z][A-Za-z0-9_]*$"))

(field_declaration
  name: (field_identifier) @bind.field
  type: [
    (type_identifier) @bind.type
    (scoped_type_identifier) @bind.type
    ; With lifetimes alone (`Lines<'_>`); other generic types name no one type.
    (generic_type) @bind.type
    ; The referenced type alone: `&'a Store` would compact to one word with its lifetime.
    (reference_type
      type: [
        (type_identifier)
        (scoped_type_identifier)
        (generic_type)
      ] @bind.type)
  ])

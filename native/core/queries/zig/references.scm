; References for Zig (tree-sitter-zig 1.1); capture names in src/refs.rs.
; Zig has no inheritance (no `@inherit` captures). Not covered: calls through function
; pointers or `anytype` duck typing (found by name only), comptime-generated functions.

; ---------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------

; `report(n)`, and inside a container its own declarations (`valid(key)` in a method).
(call_expression
  function: (identifier) @call.name)

; `util.checksum(x)` (an imported file), `self.accepts(v)`, `Store.init(a)`,
; `std.debug.print(..)`.
((call_expression
  function: (field_expression
    object: (_) @call.receiver
    member: (identifier) @call.name))
  (#not-match? @call.receiver "^!"))

; The grammar reads a negated call `!valid(k)` / `!self.ok(v)` as an error union type
; being called: the call is the same.
(call_expression
  function: (error_union_type
    ok: (identifier) @call.name))

(call_expression
  function: (field_expression
    object: (error_union_type
      ok: (_) @call.receiver)
    member: (identifier) @call.name))

; ---------------------------------------------------------------------------------------
; Imports: `@import` binds a file (a struct) or a package to a constant.
; ---------------------------------------------------------------------------------------

; `const util = @import("util.zig");`, `const std = @import("std");`. A path is relative to
; the importing file; a bare name is a package (`std`, `builtin`, build.zig modules).
(variable_declaration
  (identifier) @import.alias
  (builtin_function
    (builtin_identifier) @_builtin
    (arguments
      (string) @import.module))
  (#eq? @_builtin "@import"))

; `const Store = @import("store.zig").Store;`: one declaration of the file.
(variable_declaration
  (identifier) @import.alias
  (field_expression
    object: (builtin_function
      (builtin_identifier) @_builtin
      (arguments
        (string) @import.module))
    member: (identifier) @import.name)
  (#eq? @_builtin "@import"))

; `const print = std.debug.print;`, `const checksum = util.checksum;` at the top of a file:
; a declaration of an imported namespace bound to a local name.
(source_file
  (variable_declaration
    (identifier) @import.alias
    (field_expression
      object: [
        (identifier)
        (field_expression)
      ] @import.module
      member: (identifier) @import.name)))

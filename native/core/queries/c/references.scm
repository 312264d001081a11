; References for C (tree-sitter-c 0.24); capture names in src/refs.rs.
; C has no classes, so no inheritance; calls through function pointers (`c->ops->send()`)
; have a receiver and never resolve to a free function of the same name.

; `helper()`, and calls of function-like macros (`CLAMP(x, 0, 9)`), which are definitions.
(call_expression
  function: (identifier) @call.name)

; `obj.fn()`, `ptr->fn()`, `c->ops->send()`: calls through function pointers in structs.
(call_expression
  function: (field_expression
    argument: (_) @call.receiver
    field: (field_identifier) @call.name))

; `#include "util.h"`, `#include "../net/conn.h"`, `#include <stdio.h>`: the header's names
; (and those of the source file implementing it) are in scope. Quoted paths are resolved
; against the including file's directory, then anywhere in the tree by path suffix (include
; directories); a header outside the repository brings nothing, so a libc call is unknown
; rather than external (which header declares it is not knowable from the call).
(preproc_include
  path: [
    (string_literal)
    (system_lib_string)
  ] @import.module)

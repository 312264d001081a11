; References for Bash and POSIX shells (tree-sitter-bash 0.25); capture names in src/refs.rs.
; Every command is a call: of a function of the script or of a sourced file, otherwise of a
; program on PATH or a builtin (unknown: where a program comes from is not knowable here).
; Bash has no classes, so no inheritance.

; `helper 1 2`, `log_info "x"`, `$(helper)`, `if check; then`, `a | b`.
(command
  name: (command_name
    (word) @call.name)
  (#not-any-of? @call.name "source" "."))

; `source ./lib/util.sh`, `. lib/log.sh`, `source 'lib/x.sh'`: the file's functions come
; into scope.
(command
  name: (command_name
    (word) @_source)
  .
  argument: [
    (word)
    (raw_string)
  ] @import.module
  (#any-of? @_source "source" "."))

; `. "$(dirname "$0")/lib/log.sh"`, `source "${BASH_SOURCE%/*}/common.sh"`,
; `source "./lib/x.sh"`: the literal after the expansion, a path from the script's own
; directory (it starts with `/`, see `path_files` in src/graph.rs).
(command
  name: (command_name
    (word) @_source)
  .
  argument: (string
    (string_content) @import.module .)
  (#any-of? @_source "source" "."))

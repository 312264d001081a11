; Definitions for Ruby (tree-sitter-ruby 0.23).
; Every `def` is a method in Ruby, including top-level ones (private methods of Object).
; `class << self` has no name of its own; the methods inside it are captured.

(class
  name: [
    (constant)
    (scope_resolution)
  ] @name) @definition.class

(module
  name: [
    (constant)
    (scope_resolution)
  ] @name) @definition.module

(method
  name: (_) @name) @definition.method

; `def self.build` / `def obj.method`.
(singleton_method
  name: (_) @name) @definition.method

; Constants: `MAX_RETRIES = 3` in a file, class or module body (a method cannot assign one).
(assignment
  left: (constant) @name) @definition.constant

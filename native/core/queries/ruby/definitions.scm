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

; Attributes: `attr_accessor :name, :age` defines a field per symbol (named without its colon).
; (Wildcards and the predicate outside: a third less compile time than spelled out.)
((call
  method: (identifier) @_attr
  arguments: (_
    (simple_symbol) @name)) @definition.field
  (#any-of? @_attr "attr_reader" "attr_writer" "attr_accessor"))

; Constants: `MAX_RETRIES = 3` in a file, class or module body (a method cannot assign one).
(assignment
  left: (constant) @name) @definition.constant

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
(call
  !receiver
  method: (identifier) @_attr
  arguments: (argument_list
    (simple_symbol) @name)
  (#any-of? @_attr "attr_reader" "attr_writer" "attr_accessor")) @definition.field

; Constants: `MAX_RETRIES = 3` in a file, class or module body (a method cannot assign one).
(assignment
  left: (constant) @name) @definition.constant

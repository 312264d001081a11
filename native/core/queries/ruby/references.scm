; References for Ruby (tree-sitter-ruby 0.23); capture names in src/refs.rs.
; Ruby's bare calls may call the enclosing class's methods (implicit self), and `require`
; binds no name: it loads a file whose top-level names become visible.

; `Client.new(...)`, `Net::HTTP.new`: constructing a class is a call of the class.
(call
  receiver: [
    (constant)
    (scope_resolution)
  ] @call.name
  method: (identifier) @_new
  (#eq? @_new "new"))

; `obj.send(x)`, `self.save`, `Util.helper 1`, `Foo::bar()`, `@repo.find(id)`.
(call
  receiver: (_) @call.receiver
  method: [
    (identifier)
    (constant)
  ] @call.name
  (#not-eq? @call.name "new"))

; `helper(1)`, `puts "x"`, `Integer("3")`: receiverless calls with arguments or parentheses.
; Loads and mixins are imports and inheritance below, and declarations are no calls.
(call
  !receiver
  method: [
    (identifier)
    (constant)
  ] @call.name
  (#not-any-of? @call.name
    "require" "require_relative" "load" "autoload" "include" "extend" "prepend"
    "attr_reader" "attr_writer" "attr_accessor" "private" "public" "protected"
    "module_function" "private_constant" "alias_method"))

; `validate` alone on its line: a bare identifier statement that is not the last of its body
; is a method call (a local variable there would do nothing; the last one may be a returned
; variable, so it is left out). `private` alone is a visibility switch, no call.
(body_statement
  (identifier) @call.name
  .
  (_)
  (#not-any-of? @call.name "private" "public" "protected" "module_function"))

(then
  (identifier) @call.name
  .
  (_)
  (#not-any-of? @call.name "private" "public" "protected" "module_function"))

(else
  (identifier) @call.name
  .
  (_)
  (#not-any-of? @call.name "private" "public" "protected" "module_function"))

(block_body
  (identifier) @call.name
  .
  (_)
  (#not-any-of? @call.name "private" "public" "protected" "module_function"))

; `super` / `super(x)` as a statement of a method: the method of the same name in a base.
; The body and the call are wildcards (a method's body is a body_statement, and only a call
; has a method field): spelled out, the pattern took 21 ms of the query's compile time.
(method
  name: (_) @call.name
  body: (_
    [
      (super) @call.receiver
      (_
        method: (super) @call.receiver)
    ]))

; `require 'json'`, `require_relative '../lib/util'`, `load 'tasks.rb'`: file loads whose
; names all come into scope (no alias, see `default_module_alias`).
(call
  !receiver
  method: (identifier) @_load
  arguments: (argument_list
    .
    (string
      (string_content) @import.module))
  (#any-of? @_load "require" "require_relative" "load"))

; `class Admin < User`, `class Admin < Auth::User`.
(class
  name: [
    (constant)
    (scope_resolution)
  ] @inherit.class
  superclass: (superclass
    [
      (constant)
      (scope_resolution)
    ] @inherit.base))

; `include Comparable`, `extend Forwardable`, `prepend Logging` in a class or module body:
; the module's methods become the class's, so it is a base for `self.f()` and bare calls.
; Wildcards checked by #kind? (the nested call spelled out for classes and modules took 34 ms
; to compile).
((_
  name: _ @inherit.class
  body: (_
    (call
      !receiver
      method: _ @_mixin
      arguments: (_
        _ @inherit.base)))) @_owner
  (#any-of? @_mixin "include" "extend" "prepend")
  (#kind? @_owner "class" "module")
  (#kind? @inherit.class "constant" "scope_resolution")
  (#kind? @inherit.base "constant" "scope_resolution"))

; Variables and instance variables built with `new` (`store = Store.new`,
; `@store = Shop::Store.new(path)`): a call on them is a call on that class.
((assignment
  left: [
    (identifier) @bind.name
    (instance_variable) @bind.field
  ]
  right: (call
    receiver: [
      (constant)
      (scope_resolution)
    ] @bind.type
    method: (identifier) @_new))
  (#eq? @_new "new"))

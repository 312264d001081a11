; References only JavaScript has (appended to queries/ecmascript/references.scm and, with
; JSX, queries/ecmascript/jsx.scm; tree-sitter-javascript 0.25).

; `class User extends Base`, `class App extends React.Component`, and class expressions
; bound to a name (`const User = class extends Base {}`). Mixin calls are not followed.
(class_declaration
  name: (identifier) @inherit.class
  (class_heritage
    [
      (identifier)
      (member_expression)
    ] @inherit.base))

(variable_declarator
  name: (identifier) @inherit.class
  value: (class
    (class_heritage
      [
        (identifier)
        (member_expression)
      ] @inherit.base)))

; A class field constructed with `new` (`store = new Store();`): a call on `this.store` is a
; call on that type.
(field_definition
  property: (property_identifier) @bind.field
  value: (new_expression
    constructor: [
      (identifier)
      (member_expression)
    ] @bind.type))

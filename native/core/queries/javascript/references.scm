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

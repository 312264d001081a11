;; JSX, for JavaScript and TSX (appended to their queries).

; JSX: `<Badge />` and `<Badge>...</Badge>` render (call) a component; lower-case tags are
; HTML elements. `<ui.Button />` names it through a module.
((jsx_self_closing_element
  name: (identifier) @call.name)
  (#match? @call.name "^[A-Z]"))

((jsx_opening_element
  name: (identifier) @call.name)
  (#match? @call.name "^[A-Z]"))

(jsx_self_closing_element
  name: (member_expression
    object: (_) @call.receiver
    property: (property_identifier) @call.name))

(jsx_opening_element
  name: (member_expression
    object: (_) @call.receiver
    property: (property_identifier) @call.name))

; References for Swift (tree-sitter-swift 0.7); capture names in src/refs.rs.
; Bare calls inside a type may call its methods (implicit self). `import Core` makes every
; public name of the module visible, and `Core.name` names one explicitly.

; `helper(1)`, `Greeter(name: "x")` (constructing a type is a call of the type).
(call_expression
  .
  (simple_identifier) @call.name)

; `self.save()`, `super.init()`, `g.greet()`, `Logger.shared.log("x")`, `Foundation.exit(1)`.
(call_expression
  .
  (navigation_expression
    target: (_) @call.receiver
    suffix: (navigation_suffix
      suffix: (simple_identifier) @call.name)))

; `import Foundation`, `@testable import Core`, `import struct Core.Point`: the module's names
; come into scope (no alias)...
(import_declaration
  (identifier) @import.module)

; ...and the module's name qualifies them (`Core.helper()`, `Foundation.exit(1)`).
(import_declaration
  (identifier) @import.module @import.alias)

; `class Admin: User, Codable`, `struct Point: Equatable`, `enum E: String, CaseIterable`,
; `actor Cache: Store`.
(class_declaration
  name: (type_identifier) @inherit.class
  (inheritance_specifier
    inherits_from: (user_type) @inherit.base))

; `extension User: Printable`: the conformance is declared on the extended type.
(class_declaration
  declaration_kind: "extension"
  name: (user_type
    (type_identifier) @inherit.class .)
  (inheritance_specifier
    inherits_from: (user_type) @inherit.base))

; `protocol Store: AnyObject, Reader`.
(protocol_declaration
  name: (type_identifier) @inherit.class
  (inheritance_specifier
    inherits_from: (user_type) @inherit.base))

; References for PHP (tree-sitter-php 0.24); capture names in src/refs.rs.
; `use A\B\C` binds `C` to a class (PSR-4: a file `.../B/C.php`); `require` loads a file whose
; top-level names come into scope.

; `helper($x)`, `\App\Support\format_name($x)`.
(function_call_expression
  function: [
    (name)
    (qualified_name)
  ] @call.name)

; `$this->save()`, `$user->name()`, `$this->repo?->find($id)`.
(member_call_expression
  object: (_) @call.receiver
  name: (name) @call.name)

(nullsafe_member_call_expression
  object: (_) @call.receiver
  name: (name) @call.name)

; `Helper::clean()`, `self::make()`, `static::make()`, `parent::__construct()`.
(scoped_call_expression
  scope: (_) @call.receiver
  name: (name) @call.name)

; `new User()`, `new \App\Models\User`: constructing a class is a call of the class.
(object_creation_expression
  [
    (name)
    (qualified_name)
  ] @call.name)

; `use App\Models\User;`, `use GuzzleHttp\Client as Http;`: a class by its full name.
(namespace_use_declaration
  !type
  (namespace_use_clause
    !type
    [
      (name)
      (qualified_name)
    ] @import.module
    !alias))

(namespace_use_declaration
  !type
  (namespace_use_clause
    !type
    [
      (name)
      (qualified_name)
    ] @import.module
    alias: (name) @import.alias))

; `use function App\Support\format_name;`, `use const App\LIMIT as MAX;`: one name of a
; namespace.
(namespace_use_clause
  type: _
  (qualified_name
    prefix: (namespace_name) @import.module
    (name) @import.name)
  !alias)

(namespace_use_clause
  type: _
  (qualified_name
    prefix: (namespace_name) @import.module
    (name) @import.name)
  alias: (name) @import.alias)

; `use App\Support\{Helper, Logger as Log};`, `use function App\{f, g};`: names of a
; namespace.
(namespace_use_declaration
  (namespace_name) @import.module
  body: (namespace_use_group
    (namespace_use_clause
      [
        (name)
        (qualified_name)
      ] @import.name
      !alias)))

(namespace_use_declaration
  (namespace_name) @import.module
  body: (namespace_use_group
    (namespace_use_clause
      [
        (name)
        (qualified_name)
      ] @import.name
      alias: (name) @import.alias)))

; `require 'lib/util.php';`, `include_once "config.php";`.
[
  (require_expression
    (string (string_content) @import.module))
  (require_once_expression
    (string (string_content) @import.module))
  (include_expression
    (string (string_content) @import.module))
  (include_once_expression
    (string (string_content) @import.module))
  (require_expression
    (encapsed_string . (string_content) @import.module .))
  (require_once_expression
    (encapsed_string . (string_content) @import.module .))
  (include_expression
    (encapsed_string . (string_content) @import.module .))
  (include_once_expression
    (encapsed_string . (string_content) @import.module .))
]

; `require_once __DIR__ . '/../lib/util.php';`: the literal is a path from this file's
; directory (it starts with `/`, see `path_files` in src/graph.rs). The loading expression is
; a wildcard checked by #kind?: its four kinds as alternatives took 30 ms to compile.
((_
  (binary_expression
    left: (name) @_dir
    right: (string (string_content) @import.module))) @_load
  (#eq? @_dir "__DIR__")
  (#kind? @_load
    "require_expression" "require_once_expression" "include_expression"
    "include_once_expression"))

; `class User extends Model implements JsonSerializable, HasName`.
(class_declaration
  name: (name) @inherit.class
  (base_clause
    [
      (name)
      (qualified_name)
    ] @inherit.base))

(class_declaration
  name: (name) @inherit.class
  (class_interface_clause
    [
      (name)
      (qualified_name)
    ] @inherit.base))

; `interface Repository extends Countable, Reader`.
(interface_declaration
  name: (name) @inherit.class
  (base_clause
    [
      (name)
      (qualified_name)
    ] @inherit.base))

; `enum Status: string implements HasLabel`.
(enum_declaration
  name: (name) @inherit.class
  (class_interface_clause
    [
      (name)
      (qualified_name)
    ] @inherit.base))

; `use Greets, Logs;` in a class or trait body: the trait's methods become the class's.
(class_declaration
  name: (name) @inherit.class
  body: (declaration_list
    (use_declaration
      [
        (name)
        (qualified_name)
      ] @inherit.base)))

(trait_declaration
  name: (name) @inherit.class
  body: (declaration_list
    (use_declaration
      [
        (name)
        (qualified_name)
      ] @inherit.base)))

; Parameters, variables and properties declared with a class or built with `new`
; (`Store $store`, `?Store $store`, `$store = new Store()`, `private Store $store;`,
; `public function __construct(private Store $store)`, `$this->store = new Store()`): a call
; on them, or on `$this->store`, is a call on that class.
(simple_parameter
  type: [
    (named_type) @bind.type
    (optional_type
      (named_type) @bind.type)
  ]
  name: (variable_name) @bind.name)

(property_promotion_parameter
  type: [
    (named_type) @bind.type
    (optional_type
      (named_type) @bind.type)
  ]
  name: (variable_name) @bind.field)

(property_declaration
  type: [
    (named_type) @bind.type
    (optional_type
      (named_type) @bind.type)
  ]
  (property_element
    name: (variable_name) @bind.field))

(assignment_expression
  left: (variable_name) @bind.name
  right: (object_creation_expression
    [
      (name)
      (qualified_name)
    ] @bind.type))

((assignment_expression
  left: (member_access_expression
    object: (variable_name) @_this
    name: (name) @bind.field)
  right: (object_creation_expression
    [
      (name)
      (qualified_name)
    ] @bind.type))
  (#eq? @_this "$this"))

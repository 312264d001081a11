//! The language registry against real grammars: every definitions query compiles, finds the
//! hand-checked definitions of a realistic fixture per language, and `detect` maps paths and
//! contents as documented.

use std::collections::HashMap;
use std::path::PathBuf;

use coderecall_core::chunk::{ChunkKind, definition_name};
use coderecall_core::lang::Language;
use tree_sitter::{Parser, Query, QueryCursor, StreamingIterator};

fn grammar_languages() -> impl Iterator<Item = Language> {
    Language::all()
        .iter()
        .copied()
        .filter(|lang| lang.grammar().is_some())
}

#[test]
fn every_definitions_query_compiles() {
    let mut failures = Vec::new();
    for lang in grammar_languages() {
        let name = lang.name();
        let (Some(grammar), Some(source)) = (lang.grammar(), lang.definitions_query_source())
        else {
            failures.push(format!("{name}: grammar without a definitions query"));
            continue;
        };
        let query = match Query::new(&grammar, source) {
            Ok(query) => query,
            Err(err) => {
                failures.push(format!("{name}: {err}"));
                continue;
            }
        };
        if query.pattern_count() == 0 {
            failures.push(format!("{name}: the query has no patterns"));
        }
        for capture in query.capture_names() {
            // `@receiver`: the type a method is declared on outside its body (Go); `@_...`:
            // a node a predicate tests (`attr_reader` in Ruby), no part of the definition.
            let known = *capture == "name"
                || *capture == "receiver"
                || capture.starts_with('_')
                || capture
                    .strip_prefix("definition.")
                    .and_then(ChunkKind::from_name)
                    .is_some_and(ChunkKind::is_definition);
            if !known {
                failures.push(format!("{name}: unexpected capture @{capture}"));
            }
        }
        if lang.syntax_query().is_none() {
            failures.push(format!("{name}: syntax_query() returned None"));
        }
    }
    assert!(
        failures.is_empty(),
        "definitions queries failing:\n{}",
        failures.join("\n")
    );
    assert_eq!(grammar_languages().count(), 18);
}

/// `(kind, name, 1-based start line)` of every definition the query finds in `source`.
/// Patterns matching the same `@name` node are merged, keeping the outermost definition
/// (a decorated, exported or templated wrapper), as the chunker does.
fn definitions(lang: Language, source: &str) -> Vec<(String, String, usize)> {
    let grammar = lang.grammar().expect("grammar language");
    let syntax = lang.syntax_query().expect("query compiles");
    let query = &syntax.query;
    let mut parser = Parser::new();
    parser.set_language(&grammar).expect("compatible grammar");
    let tree = parser.parse(source, None).expect("parse");
    assert!(
        !tree.root_node().has_error(),
        "{} source has syntax errors: {}",
        lang.name(),
        tree.root_node().to_sexp()
    );

    // name node byte range -> (definition byte length, kind, start line)
    let mut by_name: HashMap<(usize, usize), (usize, &str, usize, String)> = HashMap::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source.as_bytes());
    while let Some(found) = matches.next() {
        if syntax.is_reference(found.pattern_index) || !syntax.admits(found) {
            continue;
        }
        let mut name = None;
        let mut definition = None;
        for capture in found.captures {
            let capture_name = query.capture_names()[capture.index as usize];
            if capture_name == "name" {
                name = Some(capture.node);
            } else if let Some(kind) = capture_name.strip_prefix("definition.") {
                definition = Some((kind, capture.node));
            }
        }
        let (Some(name), Some((kind, node))) = (name, definition) else {
            panic!(
                "{}: pattern {} lacks @name or @definition.*",
                lang.name(),
                found.pattern_index
            );
        };
        let text = definition_name(name, source).expect("a definition's name has text");
        let entry = (
            node.byte_range().len(),
            kind,
            node.start_position().row + 1,
            text,
        );
        let kept = by_name
            .entry((name.start_byte(), name.end_byte()))
            .or_insert_with(|| entry.clone());
        // Two patterns giving one node two kinds would leave the chunker's choice to chance,
        // but for a field's: it gives way (a field holding a function is a method).
        assert!(
            entry.0 != kept.0 || entry.1 == kept.1 || entry.1 == "field" || kept.1 == "field",
            "{}: `{}` (line {}) is captured both as {} and as {}",
            lang.name(),
            entry.3,
            entry.2,
            kept.1,
            entry.1
        );
        if entry.0 > kept.0 || (entry.0 == kept.0 && kept.1 == "field") {
            *kept = entry;
        }
    }

    let mut found: Vec<_> = by_name
        .into_iter()
        .map(|(_, (_, kind, line, text))| (kind.to_owned(), text, line))
        .collect();
    found.sort_by(|a, b| (a.2, &a.1, &a.0).cmp(&(b.2, &b.1, &b.0)));
    found
}

fn check_fixture(lang: Language, file: &str, expected: &[(&str, &str, usize)]) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "lang",
        lang.name(),
        file,
    ]
    .iter()
    .collect();
    let source = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
    assert_eq!(
        Language::detect(&path.to_string_lossy(), source.as_bytes()),
        Some(lang),
        "fixture {file} is not detected as {}",
        lang.name()
    );

    assert_eq!(
        definitions(lang, &source),
        owned_sorted(expected),
        "{} definitions differ (left: found, right: expected)",
        lang.name()
    );
}

fn owned_sorted(expected: &[(&str, &str, usize)]) -> Vec<(String, String, usize)> {
    let mut expected: Vec<(String, String, usize)> = expected
        .iter()
        .map(|&(kind, name, line)| (kind.to_owned(), name.to_owned(), line))
        .collect();
    expected.sort_by(|a, b| (a.2, &a.1, &a.0).cmp(&(b.2, &b.1, &b.0)));
    expected
}

#[test]
fn python_definitions() {
    check_fixture(
        Language::Python,
        "sample.py",
        &[
            ("constant", "DEFAULT_NAME", 8),
            ("type", "Names", 10),
            ("function", "memoize", 13),
            ("function", "wrapper", 17),
            ("class", "Greeting", 26),
            ("field", "text", 30),
            ("field", "loud", 31),
            ("function", "render", 33),
            ("class", "Greeter", 37),
            ("class", "Config", 40),
            ("field", "punctuation", 41),
            ("function", "__init__", 43),
            ("function", "prefix_length", 46),
            ("function", "normalize", 50),
            ("function", "greet", 54),
            ("function", "shout", 59),
            ("function", "main", 64),
        ],
    );
}

#[test]
fn javascript_definitions() {
    check_fixture(
        Language::JavaScript,
        "sample.js",
        &[
            ("constant", "DEFAULT_NAME", 4),
            ("class", "Greeter", 9),
            ("field", "#count", 10),
            ("method", "constructor", 12),
            ("method", "greet", 17),
            ("method", "count", 22),
            ("method", "create", 26),
            ("method", "onClick", 30),
            ("function", "makeCounter", 35),
            ("function", "increment", 37),
            ("function", "shout", 44),
            ("function", "whisper", 46),
            ("function", "ids", 50),
            ("function", "main", 55),
            ("function", "wave", 60),
        ],
    );
}

#[test]
fn typescript_definitions() {
    check_fixture(
        Language::TypeScript,
        "sample.ts",
        &[
            ("interface", "Named", 5),
            ("field", "name", 6),
            ("field", "nickname", 7),
            ("type", "Salutation", 10),
            ("enum", "Mood", 12),
            ("variant", "Happy", 13),
            ("variant", "Grumpy", 14),
            ("class", "Speaker", 17),
            ("method", "log", 20),
            ("class", "Greeter", 28),
            ("field", "count", 30),
            ("method", "constructor", 32),
            ("field", "salutation", 32),
            ("method", "speak", 36),
            ("method", "handle", 43),
            ("module", "Greetings", 46),
            ("function", "random", 49),
            ("module", "greeting-plugins", 54),
            ("function", "shout", 58),
            ("function", "sealed", 60),
            ("function", "main", 65),
        ],
    );
}

#[test]
fn rust_definitions() {
    check_fixture(
        Language::Rust,
        "sample.rs",
        &[
            ("constant", "DEFAULT_NAME", 6),
            ("constant", "GREETINGS", 8),
            ("trait", "Greet", 11),
            ("method", "greet_all", 14),
            ("struct", "Greeter", 21),
            ("field", "prefix", 22),
            ("impl", "Greeter", 25),
            ("constant", "LOUD", 26),
            ("method", "new", 28),
            ("impl", "Greeter", 33),
            ("method", "greet", 34),
            ("impl", "Greeter", 39),
            ("method", "fmt", 40),
            ("enum", "Mood", 45),
            ("variant", "Happy", 46),
            ("variant", "Grumpy", 47),
            ("type", "Names", 50),
            ("macro", "greet_twice", 52),
            ("module", "shout", 58),
            ("function", "shout", 59),
            ("function", "bang", 60),
            ("function", "main", 69),
        ],
    );
}

#[test]
fn go_definitions() {
    check_fixture(
        Language::Go,
        "sample.go",
        &[
            ("constant", "DefaultName", 10),
            ("type", "Mood", 13),
            ("constant", "Happy", 16),
            ("constant", "Grumpy", 17),
            ("interface", "Speaker", 21),
            ("struct", "Greeter", 26),
            ("field", "Prefix", 27),
            ("field", "mood", 28),
            ("type", "Names", 33),
            ("struct", "Pair", 35),
            ("field", "A", 35),
            ("field", "B", 35),
            ("type", "Alias", 36),
            ("function", "NewGreeter", 40),
            ("method", "Speak", 45),
            ("method", "Mood", 52),
            ("function", "Shout", 55),
        ],
    );
}

#[test]
fn java_definitions() {
    check_fixture(
        Language::Java,
        "Sample.java",
        &[
            ("class", "Sample", 7),
            ("constant", "DEFAULT_NAME", 9),
            ("interface", "Speaker", 12),
            ("method", "speakAll", 15),
            ("enum", "Mood", 20),
            ("variant", "HAPPY", 21),
            ("variant", "GRUMPY", 22),
            ("method", "isHappy", 24),
            ("class", "Greeting", 29),
            ("field", "loud", 29),
            ("field", "text", 29),
            ("method", "Greeting", 30),
            ("class", "Greeter", 36),
            ("field", "prefix", 38),
            ("method", "Greeter", 40),
            ("method", "speak", 44),
            ("interface", "Polite", 51),
            ("method", "Sample", 55),
            ("method", "greet", 57),
        ],
    );
}

#[test]
fn c_definitions() {
    check_fixture(
        Language::C,
        "sample.c",
        &[
            ("constant", "MAX_NAME", 6),
            ("macro", "MIN", 7),
            ("enum", "mood", 10),
            ("variant", "MOOD_HAPPY", 11),
            ("variant", "MOOD_GRUMPY", 12),
            ("struct", "greeter", 16),
            ("field", "prefix", 17),
            ("field", "mood", 18),
            ("struct", "greeting_t", 21),
            ("field", "text", 22),
            ("field", "len", 23),
            ("struct", "node", 26),
            ("field", "next", 27),
            ("field", "value", 28),
            ("struct", "number_t", 31),
            ("field", "as_int", 32),
            ("field", "as_float", 33),
            ("type", "counter_t", 36),
            ("function", "greeter_greet", 43),
            ("function", "shout", 54),
            ("function", "main", 65),
        ],
    );
}

#[test]
fn cpp_definitions() {
    check_fixture(
        Language::Cpp,
        "sample.cpp",
        &[
            ("macro", "GREET_CHECK", 6),
            ("module", "greet", 9),
            ("variant", "Grumpy", 11),
            ("variant", "Happy", 11),
            ("enum", "Mood", 11),
            ("class", "Speaker", 14),
            ("class", "Greeter", 21),
            ("function", "Greeter", 23),
            ("function", "~Greeter", 24),
            ("function", "prefix", 28),
            ("function", "operator==", 30),
            ("struct", "Stats", 33),
            ("field", "greeted", 34),
            ("field", "prefix_", 37),
            ("field", "stats_", 38),
            ("function", "Greeter::speak", 41),
            ("struct", "Box", 45),
            ("field", "value", 47),
            ("function", "get", 48),
            ("function", "Box<T>::twice", 52),
            ("function", "greet_all", 57),
            ("type", "Names", 66),
            ("function", "main", 70),
        ],
    );
}

#[test]
fn csharp_definitions() {
    check_fixture(
        Language::CSharp,
        "Sample.cs",
        &[
            ("module", "Example.Greet", 5),
            ("interface", "ISpeaker", 8),
            ("method", "SpeakTwice", 12),
            ("enum", "Mood", 15),
            ("variant", "Happy", 17),
            ("variant", "Grumpy", 18),
            ("type", "Formatter", 21),
            ("class", "Greeting", 23),
            ("field", "Loud", 23),
            ("field", "Text", 23),
            ("struct", "Stats", 25),
            ("field", "Greeted", 27),
            ("method", "Bump", 29),
            ("class", "Greeter", 33),
            ("field", "_prefix", 36),
            ("method", "Greeter", 38),
            ("method", "Greeter", 43),
            ("field", "Prefix", 47),
            ("method", "Speak", 49),
            ("function", "Punctuate", 51),
            ("method", "GreetAll", 55),
            ("class", "Cache", 63),
            ("field", "Entries", 65),
        ],
    );
}

#[test]
fn ruby_definitions() {
    check_fixture(
        Language::Ruby,
        "sample.rb",
        &[
            ("module", "Greetings", 6),
            ("constant", "DEFAULT_NAME", 7),
            ("module", "Speaker", 10),
            ("method", "speak", 11),
            ("class", "Greeter", 17),
            ("field", "prefix", 20),
            ("field", "count", 20),
            ("field", "mood", 21),
            ("method", "initialize", 23),
            ("method", "speak", 28),
            ("method", "seen?", 33),
            ("method", "default", 35),
            ("method", "loud", 40),
            ("method", "reset!", 47),
            ("class", "Greetings::Shouter", 53),
            ("method", "speak", 54),
            ("method", "greet_all", 59),
        ],
    );
}

#[test]
fn php_definitions() {
    check_fixture(
        Language::Php,
        "sample.php",
        &[
            ("constant", "DEFAULT_NAME", 9),
            ("interface", "Speaker", 12),
            ("trait", "CountsGreetings", 17),
            ("field", "count", 19),
            ("method", "bump", 21),
            ("enum", "Mood", 27),
            ("variant", "Happy", 29),
            ("variant", "Grumpy", 30),
            ("method", "isHappy", 32),
            ("class", "Greeter", 41),
            ("method", "__construct", 46),
            ("field", "prefix", 46),
            ("method", "speak", 53),
            ("method", "create", 59),
            ("class", "Base", 65),
            ("function", "shout", 70),
        ],
    );
}

#[test]
fn kotlin_definitions() {
    check_fixture(
        Language::Kotlin,
        "Sample.kt",
        &[
            ("type", "Names", 8),
            ("interface", "Speaker", 11),
            ("function", "speakAll", 14),
            ("enum", "Mood", 17),
            ("field", "emoji", 17),
            ("variant", "HAPPY", 18),
            ("variant", "GRUMPY", 19),
            ("function", "flip", 21),
            ("class", "Greeting", 24),
            ("field", "loud", 24),
            ("field", "text", 24),
            ("class", "Prefix", 29),
            ("field", "value", 30),
            ("class", "Greeter", 32),
            ("field", "prefix", 32),
            ("field", "count", 33),
            ("function", "speak", 35),
            ("function", "punctuate", 36),
            ("class", "Factory", 41),
            ("function", "create", 42),
            ("class", "Registry", 46),
            ("field", "greeters", 47),
            ("function", "register", 49),
            ("function", "greetEveryone", 54),
            ("function", "main", 56),
        ],
    );
}

#[test]
fn swift_definitions() {
    check_fixture(
        Language::Swift,
        "sample.swift",
        &[
            ("type", "Names", 7),
            ("interface", "Speaker", 10),
            ("enum", "Mood", 14),
            ("variant", "grumpy", 15),
            ("variant", "happy", 15),
            ("function", "flipped", 19),
            ("struct", "Greeting", 24),
            ("field", "text", 25),
            ("field", "loud", 26),
            ("class", "Greeter", 30),
            ("field", "prefix", 32),
            ("field", "count", 33),
            ("function", "init", 35),
            ("function", "deinit", 39),
            ("function", "speak", 43),
            ("function", "punctuate", 44),
            ("impl", "Greeter", 50),
            ("field", "description", 51),
            ("function", "make", 53),
            ("class", "Counter", 56),
            ("field", "value", 57),
            ("function", "increment", 59),
            ("function", "greetAll", 65),
        ],
    );
}

#[test]
fn scala_definitions() {
    check_fixture(
        Language::Scala,
        "Sample.scala",
        &[
            ("trait", "Speaker", 6),
            ("function", "speakAll", 9),
            ("class", "Mood", 12),
            ("field", "emoji", 12),
            ("class", "Greeting", 14),
            ("field", "loud", 14),
            ("field", "text", 14),
            ("class", "Greeter", 17),
            ("field", "seen", 19),
            ("type", "Names", 21),
            ("function", "speak", 23),
            ("function", "punctuate", 24),
            ("function", "count", 29),
            ("class", "Greeter", 32),
            ("field", "Default", 33),
            ("function", "apply", 35),
            ("enum", "Color", 38),
            ("field", "rgb", 38),
            ("variant", "Red", 39),
            ("variant", "Green", 40),
            ("function", "hex", 42),
            ("class", "Main", 44),
            ("function", "main", 45),
        ],
    );
}

#[test]
fn bash_definitions() {
    check_fixture(
        Language::Bash,
        "sample.sh",
        &[
            ("function", "greet", 9),
            ("function", "shout", 16),
            ("function", "greet_all", 20),
            ("function", "usage", 27),
            ("function", "main", 34),
            ("function", "cleanup", 36),
        ],
    );
}

#[test]
fn lua_definitions() {
    check_fixture(
        Language::Lua,
        "sample.lua",
        &[
            ("function", "Greeter.new", 11),
            ("function", "Greeter:greet", 19),
            ("function", "shout", 24),
            ("function", "bang", 25),
            ("function", "whisper", 31),
            ("function", "M.greet_all", 35),
            ("function", "M.main", 43),
        ],
    );
}

#[test]
fn zig_definitions() {
    check_fixture(
        Language::Zig,
        "sample.zig",
        &[
            ("enum", "Mood", 7),
            ("function", "flipped", 11),
            ("struct", "Value", 16),
            ("type", "GreetError", 21),
            ("struct", "Greeter", 24),
            ("struct", "Stats", 28),
            ("function", "init", 32),
            ("function", "greet", 36),
            ("type", "Handle", 43),
            ("function", "shout", 47),
            ("function", "main", 52),
            ("function", "greeter counts greetings", 57),
        ],
    );
}

#[test]
fn tsx_definitions() {
    check_fixture(
        Language::Tsx,
        "sample.tsx",
        &[
            ("interface", "GreetingProps", 5),
            ("field", "name", 6),
            ("field", "loud", 7),
            ("type", "Mood", 10),
            ("enum", "Size", 12),
            ("variant", "Small", 13),
            ("variant", "Large", 14),
            ("function", "useCounter", 17),
            ("function", "GreetingCard", 24),
            ("function", "GreetingList", 35),
            ("function", "renderItem", 36),
            ("class", "MoodBadge", 44),
            ("method", "render", 45),
        ],
    );
}

/// Checks a small inline source, for constructs that do not fit the per-language fixtures.
fn check_snippet(lang: Language, source: &str, expected: &[(&str, &str, usize)]) {
    assert_eq!(
        definitions(lang, source),
        owned_sorted(expected),
        "{} snippet (left: found, right: expected):\n{source}",
        lang.name()
    );
}

#[test]
fn snippets_beyond_the_fixtures() {
    // Block namespaces are modules; the statement form is not captured.
    check_snippet(
        Language::Php,
        "<?php\nnamespace App\\Util {\n    function slug(string $s): string { return $s; }\n}\n",
        &[("module", "App\\Util", 2), ("function", "slug", 3)],
    );
    // `declare` wrappers and dotted namespaces.
    check_snippet(
        Language::TypeScript,
        "declare namespace Api.V1 {\n  interface User { id: string }\n}\ndeclare class Client {\n  get(): void;\n}\n",
        &[
            ("module", "Api.V1", 1),
            ("interface", "User", 2),
            ("field", "id", 2),
            ("class", "Client", 4),
        ],
    );
    // Implementations for non-path types, and trait signatures without a body.
    check_snippet(
        Language::Rust,
        "trait Shape {\n    fn area(&self) -> f64;\n}\nimpl Shape for [f64; 2] {\n    fn area(&self) -> f64 { self[0] * self[1] }\n}\nimpl<T: Shape> Shape for &T {\n    fn area(&self) -> f64 { (*self).area() }\n}\n",
        &[
            ("trait", "Shape", 1),
            ("impl", "[f64; 2]", 4),
            ("method", "area", 5),
            ("impl", "&T", 7),
            ("method", "area", 8),
        ],
    );
    // C++ header: prototypes are not definitions, inline definitions and typedefs are.
    check_snippet(
        Language::Cpp,
        "#pragma once\nnamespace a::b {\nint parse(const char* s);\ninline int twice(int x) { return 2 * x; }\ntypedef struct { int x; } point;\nextern \"C\" int c_api(void) { return 0; }\n}\n",
        &[
            ("module", "a::b", 2),
            ("function", "twice", 4),
            ("struct", "point", 5),
            ("field", "x", 5),
            ("function", "c_api", 6),
        ],
    );
    // Pointer-returning functions and prototypes in C.
    check_snippet(
        Language::C,
        "char **split(const char *s);\nchar **split(const char *s) { return 0; }\ntypedef enum { RED, GREEN } color;\n",
        &[
            ("function", "split", 2),
            ("variant", "GREEN", 3),
            ("variant", "RED", 3),
            ("enum", "color", 3),
        ],
    );
    // File-scoped namespaces are a single line; the types after them are still found.
    check_snippet(
        Language::CSharp,
        "namespace App.Core;\n\npublic abstract class Shape\n{\n    public abstract double Area();\n}\n",
        &[("class", "Shape", 3)],
    );
    // Interface kinds in Kotlin.
    check_snippet(
        Language::Kotlin,
        "fun interface Action {\n    fun run()\n}\n\nsealed interface Result\n",
        &[("interface", "Action", 1), ("interface", "Result", 5)],
    );
    // PEP 695 generic aliases and decorated nested classes.
    check_snippet(
        Language::Python,
        "type Pair[T] = tuple[T, T]\n\nclass Outer:\n    @staticmethod\n    class Inner:\n        pass\n",
        &[
            ("type", "Pair", 1),
            ("class", "Outer", 3),
            ("class", "Inner", 4),
        ],
    );
    // Go methods on pointer, generic and parenthesized receivers are all found.
    check_snippet(
        Language::Go,
        "package box\n\nfunc (b *Box[T]) Get() T { return b.v }\nfunc (b Box[K, V]) Put() {}\nfunc (Box) Len() int { return 0 }\nfunc (b (*Box)) Reset() {}\n",
        &[
            ("method", "Get", 3),
            ("method", "Put", 4),
            ("method", "Len", 5),
            ("method", "Reset", 6),
        ],
    );
    // CommonJS exports and class expressions bound to a name.
    check_snippet(
        Language::JavaScript,
        "exports.parse = function (text) {\n  return JSON.parse(text);\n};\nconst Store = class {\n  get(key) { return key; }\n};\n",
        &[
            ("function", "parse", 1),
            ("class", "Store", 4),
            ("method", "get", 5),
        ],
    );
}

#[test]
fn detect_by_extension() {
    let cases = [
        ("app/main.py", Language::Python),
        ("stubs/os.pyi", Language::Python),
        ("gui.pyw", Language::Python),
        ("web/app.js", Language::JavaScript),
        ("web/app.mjs", Language::JavaScript),
        ("web/app.cjs", Language::JavaScript),
        ("web/App.jsx", Language::JavaScript),
        ("web/app.ts", Language::TypeScript),
        ("web/app.mts", Language::TypeScript),
        ("web/app.cts", Language::TypeScript),
        ("types/global.d.ts", Language::TypeScript),
        ("web/App.tsx", Language::Tsx),
        ("src/lib.rs", Language::Rust),
        ("cmd/main.go", Language::Go),
        ("src/main/java/App.java", Language::Java),
        ("src/util.c", Language::C),
        ("src/util.cc", Language::Cpp),
        ("src/util.cpp", Language::Cpp),
        ("src/util.cxx", Language::Cpp),
        ("src/util.c++", Language::Cpp),
        ("include/util.hpp", Language::Cpp),
        ("include/util.hh", Language::Cpp),
        ("include/util.hxx", Language::Cpp),
        ("include/util.h++", Language::Cpp),
        ("include/detail/impl.ipp", Language::Cpp),
        ("include/detail/impl.inl", Language::Cpp),
        ("src/Program.cs", Language::CSharp),
        ("lib/app.rb", Language::Ruby),
        ("lib/tasks/db.rake", Language::Ruby),
        ("app.gemspec", Language::Ruby),
        ("Rakefile", Language::Ruby),
        ("Gemfile", Language::Ruby),
        ("Guardfile", Language::Ruby),
        ("public/index.php", Language::Php),
        ("views/page.phtml", Language::Php),
        ("src/App.kt", Language::Kotlin),
        ("build.gradle.kts", Language::Kotlin),
        ("Sources/App.swift", Language::Swift),
        ("src/App.scala", Language::Scala),
        ("build.sc", Language::Scala),
        ("scripts/run.sh", Language::Bash),
        ("scripts/run.bash", Language::Bash),
        ("scripts/run.zsh", Language::Bash),
        ("home/.bashrc", Language::Bash),
        (".zshrc", Language::Bash),
        ("nvim/init.lua", Language::Lua),
        ("src/main.zig", Language::Zig),
        ("README.md", Language::Markdown),
        ("docs/guide.markdown", Language::Markdown),
        ("docs/page.mdx", Language::Markdown),
        ("package.json", Language::Json),
        ("tsconfig.jsonc", Language::Json),
        ("config.yaml", Language::Yaml),
        (".github/workflows/ci.yml", Language::Yaml),
        ("Cargo.toml", Language::Toml),
        ("public/index.html", Language::Html),
        ("public/old.htm", Language::Html),
        ("styles/site.css", Language::Css),
        ("styles/site.scss", Language::Css),
        ("styles/site.less", Language::Css),
        ("db/schema.sql", Language::Sql),
    ];
    for (path, lang) in cases {
        assert_eq!(Language::detect(path, b""), Some(lang), "{path}");
    }
}

#[test]
fn detect_is_case_insensitive() {
    let cases = [
        ("SETUP.PY", Language::Python),
        ("src/Lib.Rs", Language::Rust),
        ("README.MD", Language::Markdown),
        ("App.TSX", Language::Tsx),
        ("rakefile", Language::Ruby),
        ("include/API.H", Language::C),
        ("Config.YML", Language::Yaml),
    ];
    for (path, lang) in cases {
        assert_eq!(Language::detect(path, b""), Some(lang), "{path}");
    }
    assert_eq!(Language::detect("dist/APP.MIN.JS", b""), None);
    assert_eq!(Language::detect("CARGO.LOCK", b""), None);
}

#[test]
fn detect_h_headers_by_content() {
    let c_headers: [&[u8]; 3] = [
        b"#ifndef UTIL_H\n#define UTIL_H\n#include <stdio.h>\nint util_parse(const char *s);\n#endif\n",
        b"/* A plain C header */\nstruct point { int x, y; };\n",
        b"",
    ];
    for head in c_headers {
        assert_eq!(
            Language::detect("include/util.h", head),
            Some(Language::C),
            "{}",
            String::from_utf8_lossy(head)
        );
    }
    let cpp_headers: [&[u8]; 8] = [
        b"#pragma once\nclass Parser {\npublic:\n  int parse();\n};\n",
        b"namespace util {\nint parse();\n}\n",
        b"template<typename T> T twice(T x);\n",
        b"template <class T>\nstruct Box;\n",
        b"#include <string>\nint parse(const std::string& s);\n",
        b"#include <iostream>\n",
        b"struct S {\nprivate:\n  int x;\n};\n",
        b"int parse(const char* s, util::Options opts);\n",
    ];
    for head in cpp_headers {
        assert_eq!(
            Language::detect("include/util.h", head),
            Some(Language::Cpp),
            "{}",
            String::from_utf8_lossy(head)
        );
    }
}

#[test]
fn detect_shebangs() {
    let cases: [(&str, &[u8], Language); 10] = [
        (
            "bin/tool",
            b"#!/usr/bin/env python3\nprint('hi')\n",
            Language::Python,
        ),
        ("bin/tool", b"#!/usr/bin/python3.12 -u\n", Language::Python),
        ("bin/deploy", b"#!/bin/bash\nset -e\n", Language::Bash),
        ("bin/deploy", b"#!/bin/sh\n", Language::Bash),
        ("bin/deploy", b"#!/usr/bin/env zsh\n", Language::Bash),
        ("bin/serve", b"#!/usr/bin/env node\n", Language::JavaScript),
        (
            "bin/serve",
            b"#!/usr/bin/env -S node --no-warnings\n",
            Language::JavaScript,
        ),
        ("bin/rake", b"#!/usr/bin/env ruby\n", Language::Ruby),
        ("bin/conf", b"#!/usr/bin/env lua5.4\n", Language::Lua),
        (
            "bin/admin",
            b"#!/usr/bin/php\n<?php echo 1;\n",
            Language::Php,
        ),
    ];
    for (path, head, lang) in cases {
        assert_eq!(
            Language::detect(path, head),
            Some(lang),
            "{path}: {}",
            String::from_utf8_lossy(head)
        );
    }
    // A known extension wins over the shebang; unknown interpreters give plain text.
    assert_eq!(
        Language::detect("tool.py", b"#!/bin/sh\n"),
        Some(Language::Python)
    );
    assert_eq!(
        Language::detect("bin/report", b"#!/usr/bin/env perl\n"),
        Some(Language::Text)
    );
    assert_eq!(
        Language::detect("bin/report", b"no shebang here\n"),
        Some(Language::Text)
    );
}

#[test]
fn detect_no_parser_files() {
    let cases = [
        "dist/app.min.js",
        "dist/site.min.css",
        "dist/app.js.map",
        "assets/logo.svg",
        "Gemfile.lock",
        "package-lock.json",
        "web/yarn.lock",
        "pnpm-lock.yaml",
        "Cargo.lock",
        "poetry.lock",
        "data/table.csv",
        "data/table.tsv",
        "notebooks/analysis.ipynb",
        "certs/server.pem",
        "certs/server.key",
        "certs/server.crt",
        "certs/client.p12",
    ];
    for path in cases {
        assert_eq!(Language::detect(path, b""), None, "{path}");
    }
}

#[test]
fn detect_other_text() {
    let cases = [
        "notes.txt",
        "docs/index.rst",
        "setup.cfg",
        "config.ini",
        "Makefile",
        "Dockerfile",
        "pom.xml",
        "api/service.proto",
        "build.gradle",
        "LICENSE",
        ".gitignore",
        ".env.example",
    ];
    for path in cases {
        assert_eq!(
            Language::detect(path, b"plain text\n"),
            Some(Language::Text),
            "{path}"
        );
    }
}

#[test]
fn every_references_query_compiles_with_known_captures() {
    const CAPTURES: &[&str] = &[
        "call.name",
        "call.receiver",
        "import.module",
        "import.name",
        "import.alias",
        "inherit.class",
        "inherit.base",
        "bind.name",
        "bind.field",
        "bind.type",
    ];
    let mut failures = Vec::new();
    for lang in grammar_languages() {
        let name = lang.name();
        let (Some(grammar), Some(source)) = (lang.grammar(), lang.references_query_source()) else {
            failures.push(format!("{name}: grammar without a references query"));
            continue;
        };
        match Query::new(&grammar, source) {
            Ok(query) => {
                for capture in query.capture_names() {
                    // Captures starting with `_` are helpers for predicates.
                    if !capture.starts_with('_') && !CAPTURES.contains(capture) {
                        failures.push(format!("{name}: unknown capture @{capture}"));
                    }
                }
                if query.pattern_count() == 0 {
                    failures.push(format!("{name}: the references query has no patterns"));
                }
            }
            Err(err) => failures.push(format!("{name}: {err}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

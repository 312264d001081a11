//! The language registry against real grammars: every definitions query compiles, finds the
//! hand-checked definitions of a realistic fixture per language, and `detect` maps paths and
//! contents as documented.

use std::collections::HashMap;
use std::path::PathBuf;

use coderecall_core::lang::Language;
use tree_sitter::{Parser, Query, QueryCursor, StreamingIterator};

/// Definition kinds the chunker understands (`@definition.<kind>`).
const KINDS: &[&str] = &[
    "function",
    "method",
    "class",
    "interface",
    "struct",
    "enum",
    "trait",
    "impl",
    "module",
    "type",
    "macro",
    "constant",
];

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
            let known = *capture == "name"
                || capture
                    .strip_prefix("definition.")
                    .is_some_and(|kind| KINDS.contains(&kind));
            if !known {
                failures.push(format!("{name}: unexpected capture @{capture}"));
            }
        }
        if lang.definitions_query().is_none() {
            failures.push(format!("{name}: definitions_query() returned None"));
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
    let query = lang.definitions_query().expect("query compiles");
    let mut parser = Parser::new();
    parser.set_language(&grammar).expect("compatible grammar");
    let tree = parser.parse(source, None).expect("parse");
    assert!(
        !tree.root_node().has_error(),
        "{} fixture has syntax errors: {}",
        lang.name(),
        tree.root_node().to_sexp()
    );

    // name node byte range -> (definition byte length, kind, start line)
    let mut by_name: HashMap<(usize, usize), (usize, &str, usize)> = HashMap::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source.as_bytes());
    while let Some(found) = matches.next() {
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
        let entry = (node.byte_range().len(), kind, node.start_position().row + 1);
        by_name
            .entry((name.start_byte(), name.end_byte()))
            .and_modify(|kept| {
                if entry.0 > kept.0 {
                    *kept = entry;
                }
            })
            .or_insert(entry);
    }

    let mut found: Vec<_> = by_name
        .into_iter()
        .map(|((start, end), (_, kind, line))| {
            (kind.to_owned(), source[start..end].to_owned(), line)
        })
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

    let actual = definitions(lang, &source);
    let mut expected: Vec<(String, String, usize)> = expected
        .iter()
        .map(|&(kind, name, line)| (kind.to_owned(), name.to_owned(), line))
        .collect();
    expected.sort_by(|a, b| (a.2, &a.1, &a.0).cmp(&(b.2, &b.1, &b.0)));
    assert_eq!(
        actual,
        expected,
        "{} definitions differ (left: found, right: expected)",
        lang.name()
    );
}

#[test]
fn python_definitions() {
    check_fixture(
        Language::Python,
        "sample.py",
        &[
            ("type", "Names", 10),
            ("function", "memoize", 13),
            ("function", "wrapper", 17),
            ("class", "Greeting", 26),
            ("function", "render", 33),
            ("class", "Greeter", 37),
            ("class", "Config", 40),
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
            ("class", "Greeter", 9),
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
            ("type", "Salutation", 10),
            ("enum", "Mood", 12),
            ("class", "Speaker", 17),
            ("method", "log", 20),
            ("class", "Greeter", 28),
            ("method", "constructor", 32),
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
            ("impl", "Greeter", 25),
            ("constant", "LOUD", 26),
            ("method", "new", 28),
            ("impl", "Greeter", 33),
            ("method", "greet", 34),
            ("impl", "Greeter", 39),
            ("method", "fmt", 40),
            ("enum", "Mood", 45),
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
            ("type", "Names", 33),
            ("struct", "Pair", 35),
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
            ("interface", "Speaker", 12),
            ("method", "speakAll", 15),
            ("enum", "Mood", 20),
            ("method", "isHappy", 24),
            ("class", "Greeting", 29),
            ("method", "Greeting", 30),
            ("class", "Greeter", 36),
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
            ("macro", "MIN", 7),
            ("enum", "mood", 10),
            ("struct", "greeter", 16),
            ("struct", "greeting_t", 21),
            ("struct", "node", 26),
            ("struct", "number_t", 31),
            ("type", "counter_t", 36),
            ("function", "greeter_greet", 43),
            ("function", "shout", 54),
            ("function", "main", 65),
        ],
    );
}

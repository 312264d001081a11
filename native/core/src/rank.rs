//! The ranking layer: re-scores lexical candidates with what a code searcher knows about code.
//!
//! The query is classified (identifier, path, natural language) and checked for intents
//! (tests, docs). Each candidate's BM25F score is multiplied by factors for exact and partial
//! symbol-name matches, definitions over mentions, identifiers a sentence names, and path-token
//! matches, and demoted when it lives in tests, vendored, generated or documentation paths the
//! query did not ask for. Plain-language candidates then inherit a share of their neighbours'.
//! Factors are named in [`Weights`] so benchmarks can tune them as a whole.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

use crate::analyzer::{analyze_to_vec, for_each_token};
use crate::chunk::ChunkKind;
use crate::lang::Language;

/// What the user typed, judged by its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryClass {
    /// One identifier, possibly qualified: `parse_args`, `Client.send`, `std::io::Read`.
    Identifier,
    /// A file or directory path: `src/store.rs`, `auth/tokens`.
    Path,
    /// Anything else: "where are tokens refreshed".
    NaturalLanguage,
}

/// Where a file sits, judged by its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathClass {
    Source,
    Test,
    Vendored,
    Generated,
    Docs,
}

#[derive(Clone, Debug)]
pub struct Query {
    pub raw: String,
    /// What a plain-language request asks about ([`request_body`]); `raw` otherwise.
    pub body: String,
    pub class: QueryClass,
    /// Analyzer tokens, deduplicated, in query order.
    pub terms: Vec<String>,
    /// [`fingerprints`] of `terms`, for the coverage rules.
    pub prints: Vec<u32>,
    /// For identifier queries: the segments, lower-cased (`Client.send` -> `client`, `send`).
    pub segments: Vec<String>,
    /// For identifier queries: the last segment as typed (`send`, `NewEntry`).
    pub name: String,
    /// For plain-language queries: the compound identifiers they name (`parse_args`,
    /// `GetPostFormMap`), lower-cased, each once.
    pub named: Vec<String>,
    /// The kinds a declaration keyword before an identifier asks for (`class Foo`, `fn parse`,
    /// `impl Store`): such a query is the identifier, with a preference for those kinds.
    pub kinds: &'static [ChunkKind],
    pub wants_tests: bool,
    pub wants_docs: bool,
    pub wants_vendored: bool,
    /// For plain-language queries: [`phrase_words`] of the body, for the phrase rule.
    pub phrase: Vec<u64>,
    /// `raw` as paths are matched: lower case, `/` for `\\`, no leading `./`.
    path_text: String,
}

impl Query {
    #[must_use]
    pub fn parse(raw: &str) -> Query {
        Self::parse_as(raw, None)
    }

    /// Whether a path query is only a name with a dot or a backslash, which a qualified
    /// identifier may be too: `Context.JSON`, `Element.html`, `League\CommonMark\Parser`.
    #[must_use]
    pub fn may_name_code(&self) -> bool {
        self.class == QueryClass::Path
            && !self.raw.contains('/')
            && self
                .raw
                .starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$')
            && self
                .raw
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '#' | '$' | '\\'))
    }

    /// Whether a path query names `path` (holds it, any case, `\\` read as `/`).
    #[must_use]
    pub fn names_path(&self, path: &str) -> bool {
        path.to_lowercase().contains(&self.path_text)
    }

    /// The same query read as a qualified identifier (when no indexed path holds it, see
    /// [`Query::may_name_code`]).
    #[must_use]
    pub fn as_identifier(&self) -> Query {
        Self::parse_as(&self.raw, Some(QueryClass::Identifier))
    }

    fn parse_as(raw: &str, class: Option<QueryClass>) -> Query {
        let (raw, kinds) = declaration(raw.trim()).unwrap_or((raw.trim(), &[]));
        let class = class.unwrap_or_else(|| classify_query(raw));
        let body = if class == QueryClass::NaturalLanguage {
            request_body(raw)
        } else {
            raw
        };
        let terms = distinct_terms(body);
        let (segments, name) = if class == QueryClass::Identifier {
            let name = base_name(raw).trim_end_matches('-');
            (split_qualified(raw), name.to_owned())
        } else {
            (Vec::new(), String::new())
        };
        let words: Vec<String> = raw
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let has = |options: &[&str]| words.iter().any(|w| options.contains(&w.as_str()));
        let named = if class == QueryClass::NaturalLanguage {
            let mut named: Vec<String> = raw
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| is_compound_identifier(w))
                .map(str::to_lowercase)
                .collect();
            named.sort_unstable();
            named.dedup();
            named
        } else {
            Vec::new()
        };
        Query {
            raw: raw.to_owned(),
            body: body.to_owned(),
            class,
            prints: terms.iter().map(|t| fingerprint(t)).collect(),
            terms,
            segments,
            name,
            named,
            kinds,
            wants_tests: has(&[
                "test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock",
            ]),
            wants_docs: has(&[
                "doc",
                "docs",
                "documentation",
                "readme",
                "guide",
                "tutorial",
                "changelog",
            ]),
            wants_vendored: has(&["vendor", "vendored", "third_party", "node_modules"]),
            phrase: if class == QueryClass::NaturalLanguage {
                phrase_words(body)
            } else {
                Vec::new()
            },
            path_text: raw
                .trim_start_matches("./")
                .to_lowercase()
                .replace('\\', "/"),
        }
    }
}

/// A word no sentence uses as a word: `snake_case` or `camelCase` (an inner underscore, or a
/// lower-case letter followed by a capital). `Returns`, `HTTP` and `_private` do not qualify.
fn is_compound_identifier(word: &str) -> bool {
    let inner = word.trim_matches('_');
    let snake = inner.contains('_') && inner.chars().any(char::is_alphabetic);
    let camel = inner
        .chars()
        .zip(inner.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    snake || camel
}

/// Words that may precede a declaration keyword (`pub fn`, `export default function`).
const MODIFIERS: &[&str] = &[
    "pub",
    "pub(crate)",
    "async",
    "export",
    "default",
    "public",
    "private",
    "protected",
    "internal",
    "static",
    "abstract",
    "final",
    "sealed",
    "open",
    "unsafe",
    "extern",
    "inline",
    "virtual",
    "override",
    "const",
    "data",
];

/// The kinds a declaration keyword names, as code spells it (lower case).
fn declared_kinds(keyword: &str) -> Option<&'static [ChunkKind]> {
    use ChunkKind::{
        Class, Constant, Enum, Function, Impl, Interface, Macro, Method, Module, Struct, Trait,
        Variable,
    };
    Some(match keyword {
        "def" | "fn" | "func" | "fun" | "function" => &[Function, Method],
        "class" | "struct" | "enum" | "trait" | "interface" | "type" | "protocol" | "record"
        | "union" | "typedef" => &[Class, Struct, Enum, Trait, Interface, ChunkKind::Type],
        "impl" | "extension" => &[Impl],
        "mod" | "module" | "namespace" => &[Module],
        "macro" | "macro_rules!" => &[Macro],
        // C's `#define X 1` is a constant and `#define X(a) ...` a macro.
        "#define" => &[Constant, Macro],
        "const" | "static" => &[Constant, Variable],
        "var" | "let" | "val" => &[Variable, Constant],
        _ => return None,
    })
}

/// The analyzer's terms of `text`, each once, in order of first appearance.
#[must_use]
pub fn distinct_terms(text: &str) -> Vec<String> {
    let mut terms = analyze_to_vec(text);
    let mut seen = std::collections::HashSet::new();
    terms.retain(|t| seen.insert(t.clone()));
    terms
}

/// What a request asks about, without the words that make it a request: `where is the code
/// that parses flags` -> `parses flags`, `how does the watcher debounce` -> `the watcher
/// debounce`, `I'm looking for the function that ...`. Those words are rare in code, so as
/// terms they score high and match prose (a README heading "Where the index lives") rather
/// than the code asked for. Only a request's opening counts: a question word with its
/// auxiliary, a request verb before a question word or "the code / function / ...", or such
/// a noun with its link word ("code that"); `find the user by id`, `where clause builder`
/// and `line numbers` stay whole, and so does a request with nothing after its scaffold.
fn request_body(raw: &str) -> &str {
    // Openings that only say a request follows; several may follow one another (`i'm` +
    // `looking for`), and they strip nothing unless a question word or a place noun follows.
    const OPENINGS: &[&[&str]] = &[
        &["please"],
        &["can", "you"],
        &["could", "you"],
        &["would", "you"],
        &["help", "me"],
        &["i'm"],
        &["i", "am"],
        &["we're"],
        &["we", "are"],
        &["looking", "for"],
        &["i", "need"],
        &["we", "need"],
        &["i", "want"],
        &["is", "there"],
        &["are", "there"],
    ];
    const VERBS: &[&str] = &[
        "find", "show", "locate", "tell", "explain", "give", "point", "get", "search", "look",
        "see",
    ];
    const QUESTIONS: &[&str] = &["where", "how", "what", "which", "why"];
    const AUXILIARIES: &[&str] = &[
        "is", "are", "was", "were", "does", "do", "did", "can", "could", "should", "would", "will",
        "to",
    ];
    const DETERMINERS: &[&str] = &["the", "a", "an", "all", "any", "some", "our", "my"];
    const PLACES: &[&str] = &[
        "code",
        "function",
        "functions",
        "method",
        "methods",
        "class",
        "classes",
        "logic",
        "implementation",
        "place",
        "part",
        "spot",
        "snippet",
        "line",
        "lines",
    ];
    const LINKS: &[&str] = &["that", "which", "where", "for", "of", "to", "in"];
    let words: Vec<(usize, &str)> = raw
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - raw.as_ptr() as usize, w))
        .collect();
    let is = |i: usize, set: &[&str]| {
        words.get(i).is_some_and(|(_, w)| {
            // A typographic apostrophe (`I’m`) reads as the plain one.
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}')
                .replace('\u{2019}', "'");
            set.iter().any(|s| s.eq_ignore_ascii_case(&w))
        })
    };
    let mut next = 0;
    let mut opened = false;
    while let Some(opening) = OPENINGS
        .iter()
        .find(|o| o.iter().enumerate().all(|(k, w)| is(next + k, &[w])))
    {
        next += opening.len();
        opened = true;
    }
    let verb = is(next, VERBS);
    if verb {
        next += 1;
        if is(next, &["me", "us"]) {
            next += 1;
        }
        if is(next, &["for", "to"]) {
            next += 1;
        }
    }
    let mut scaffold = false;
    if is(next, QUESTIONS) {
        if is(next + 1, AUXILIARIES) {
            next += 2;
            scaffold = true;
        } else if is(next + 1, PLACES) || verb || opened {
            next += 1;
            scaffold = true;
        }
    }
    // "the function that ...": after a request, or with its link word (`line numbers` and
    // `code generation` are what they say).
    let determiner = usize::from(is(next, DETERMINERS));
    let linked = is(next + determiner + 1, LINKS);
    if is(next + determiner, PLACES) && (scaffold || verb || opened || linked) {
        next += determiner + 1 + usize::from(linked);
        scaffold = true;
    }
    match words.get(next) {
        Some(&(start, _)) if scaffold => &raw[start..],
        _ => raw,
    }
}

/// `[modifiers] keyword name[(...)]`, as code declares a name (`pub fn parse`, `class Foo`,
/// `def send(self, request)`): the name and the kinds the keyword asks for. Anything but
/// brackets or a colon after the name makes it a sentence ("class that parses flags").
fn declaration(raw: &str) -> Option<(&str, &'static [ChunkKind])> {
    // A query is one line; several lines are code to match as text (`similar` on a chunk).
    if raw.contains('\n') {
        return None;
    }
    let (word, after) = raw.split_once(char::is_whitespace)?;
    let after = after.trim_start();
    // A modifier may be the keyword itself (`const MAX`, `static COUNT`) when no keyword
    // follows it (`const fn parse`, `static int count`).
    if MODIFIERS.contains(&word) {
        let found = declaration(after);
        if found.is_some() || declared_kinds(word).is_none() {
            return found;
        }
    }
    let kinds = declared_kinds(word)?;
    let end = after
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | ':')))
        .unwrap_or(after.len());
    let (name, tail) = after.split_at(end);
    let name = name.trim_end_matches(['.', ':']);
    let tail = tail.trim_start();
    let named = name.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$');
    let bracketed = tail.is_empty() || tail.starts_with(['(', '<', '{', '[', ':', '=']);
    // `static files` and `let me` are sentences: a value keyword takes a name that reads as
    // one (`MAX_DEPTH`, `ErrNotFound`, `v2`) or is followed by its type or value.
    let value = kinds.first().is_some_and(|k| k.is_value());
    let value_named = !value
        || tail.starts_with([':', '='])
        || name.contains(|c: char| c.is_uppercase() || c.is_ascii_digit() || c == '_');
    (named && bracketed && value_named).then_some((name, kinds))
}

fn classify_query(raw: &str) -> QueryClass {
    if raw.is_empty() || raw.chars().any(char::is_whitespace) {
        return QueryClass::NaturalLanguage;
    }
    if raw.contains('/') || raw.contains('\\') || has_file_extension(raw) {
        return QueryClass::Path;
    }
    // Chinese and Japanese write a sentence without spaces: `設定ファイルを書き込む` is a
    // question, not a name (unless it mixes in Latin letters, as `get用户` would).
    if raw.chars().any(crate::analyzer::is_cjk) && !raw.chars().any(|c| c.is_ascii_alphabetic()) {
        return QueryClass::NaturalLanguage;
    }
    let identifier_chars = raw
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '#' | '$' | '-' | '>'));
    if identifier_chars
        && raw
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
    {
        QueryClass::Identifier
    } else {
        QueryClass::NaturalLanguage
    }
}

fn has_file_extension(raw: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "tsx", "rs", "go", "java", "c", "h", "cc",
        "cpp", "hpp", "cs", "rb", "php", "kt", "kts", "swift", "scala", "sh", "lua", "zig", "md",
        "json", "yaml", "yml", "toml", "html", "css", "sql", "txt", "rst",
    ];
    raw.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
    })
}

/// `Client.send`, `std::io::Read`, `Foo#bar`, `a->b` -> lower-cased segments.
fn split_qualified(raw: &str) -> Vec<String> {
    raw.split(QUALIFIERS)
        .map(|s| s.trim_end_matches('-'))
        .filter(|s| !s.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Lines of a file's head that may say it was generated (flex writes its banner after two
/// `#line` directives and a `#define`, on the seventh).
const GENERATED_HEAD_LINES: usize = 10;

/// Whether a file's text opens by saying a tool wrote it (Go's `// Code generated ... DO NOT
/// EDIT.`, `@generated`, C#'s `<auto-generated>`, Bison's and flex's banners), however it is
/// named: its chunks rank as [`PathClass::Generated`]. Only the first few lines count, where
/// generators put it; the same words further down describe generation, not the file.
#[must_use]
pub fn is_generated_head(text: &str) -> bool {
    const MARKERS: &[&str] = &[
        "code generated",
        "@generated",
        "<auto-generated",
        "autogenerated",
        "auto-generated",
        "auto generated",
        "automatically generated",
        "machine generated",
        "machine-generated",
        "a bison parser",
        "generated by flex",
        "do not edit",
    ];
    let head: String = text
        .lines()
        .take(GENERATED_HEAD_LINES)
        .flat_map(|line| line.chars().take(200))
        .flat_map(char::to_lowercase)
        .collect();
    MARKERS.iter().any(|m| head.contains(m))
}

#[must_use]
pub fn classify_path(path: &str) -> PathClass {
    let lower = path.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('/').collect();
    let (dirs, file) = parts.split_at(parts.len().saturating_sub(1));
    let file = file.first().copied().unwrap_or_default();
    let in_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    if in_dir(&[
        "vendor",
        "vendored",
        "third_party",
        "third-party",
        "thirdparty",
        "node_modules",
        "external",
        "extern",
        "deps",
        "_vendor",
        "site-packages",
    ]) {
        return PathClass::Vendored;
    }
    // `diagnosticMessages.generated.json`, `zz_generated.deepcopy.go`, `api-generated.ts`.
    let generated_name = [".generated.", "_generated.", "-generated."]
        .iter()
        .any(|p| file.contains(p));
    if file.contains(".min.")
        || generated_name
        || file.ends_with(".pb.go")
        || file.ends_with("_pb2.py")
        || file.ends_with("_pb2_grpc.py")
        || file.ends_with(".g.dart")
        || file.ends_with(".designer.cs")
        || in_dir(&["generated", "gen", "__generated__", "dist", "build"])
    {
        return PathClass::Generated;
    }
    let stem = file.split('.').next().unwrap_or_default();
    if in_dir(&[
        "test",
        "tests",
        "testing",
        "__tests__",
        "spec",
        "specs",
        "testdata",
        "fixtures",
        "e2e",
    ]) || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || stem.ends_with("tests")
        || (stem.ends_with("test") && file.ends_with(".java"))
        || file.contains(".test.")
        || file.contains(".spec.")
        || stem == "conftest"
    {
        return PathClass::Test;
    }
    let doc_ext = [".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc"];
    if in_dir(&["doc", "docs", "documentation", "examples", "example"]) && !is_code_file(file)
        || doc_ext.iter().any(|e| file.ends_with(e))
    {
        return PathClass::Docs;
    }
    PathClass::Source
}

fn is_code_file(file: &str) -> bool {
    Language::detect(file, b"").is_some_and(|l| l.grammar().is_some())
}

/// Multipliers of the ranking layer. Defaults are a first calibration; the quality benchmark
/// (benches/quality) is the judge of any change.
#[derive(Clone, Debug)]
pub struct Weights {
    /// The chunk's own symbol is the identifier asked for.
    pub exact_symbol: f32,
    /// Also the qualifier matches (`Client.send` in class `Client`).
    pub exact_qualified: f32,
    /// The identifier is defined in the chunk but is not its main symbol.
    pub exact_name: f32,
    /// The identifier is defined in the chunk only as a value (a struct's field, a constant
    /// among others): a method of that name, a builder's setter `Arg::short`, comes first.
    pub value_name: f32,
    /// Up to this much more as query terms cover the symbol's name tokens.
    pub partial_symbol: f32,
    /// Definitions over glue code and text, for identifier queries.
    pub definition_identifier: f32,
    /// An impl block named like the type asked for, against the type's own declaration:
    /// a type's name asks for where it is declared first (as "go to definition" does), then
    /// for its impl blocks, which mention the name more often and would win on BM25F alone.
    pub impl_block: f32,
    /// A constructor (`TableCache::TableCache`, Java's `Parser.Parser`), against its class,
    /// for a name that does not qualify it: the class's name asks for the class, and a
    /// constructor in a separate file (C++'s `.cc`) would win on BM25F alone.
    pub constructor: f32,
    /// The chunk is of a kind the query's declaration keyword names (`class Foo`, `fn foo`).
    pub declared_kind: f32,
    /// The symbol is spelled as typed, case included: `NewEntry` over `newEntry`, `Store`
    /// over `store` (names match without regard to case otherwise). In most languages the
    /// two spellings are two identifiers, and agents copy names as the code writes them, so
    /// the spelling outweighs a declaration keyword's kind.
    pub exact_case: f32,
    /// Definitions over glue code and text, for other queries.
    pub definition: f32,
    /// A plain-language query names the chunk's symbol as a compound identifier
    /// ("GetPostFormMap returns a map ...").
    pub named_identifier: f32,
    /// Up to this much more as query terms appear in the path.
    pub path_terms: f32,
    /// Path query found in the path.
    pub path_match: f32,
    pub test: f32,
    pub vendored: f32,
    pub generated: f32,
    pub docs: f32,
    /// Share of its better neighbour's score that a chunk inherits, for plain-language
    /// queries (additive: 0 turns it off).
    pub neighbours: f32,
    /// Factor for each result of a file past the per-file cap, compounded (0: the cap
    /// drops them).
    pub per_file_overflow: f32,
    /// Up to this much more as a plain-language query's words stand in the chunk as one
    /// run, in order (a pasted error message, a log line, a sentence of the docs): BM25F
    /// weighs words apart, so a chunk dense in a message's words outranks the one that
    /// writes the message.
    pub phrase: f32,
    /// The least [`phrase_share`] the phrase rule raises a chunk for.
    pub phrase_share: f32,
    /// How many of a plain-language query's first candidates may fold into a better-ranked
    /// window of their unit, a unit split for length showing as one hit (0: each window is
    /// a hit of its own).
    pub fold_windows: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            exact_symbol: 3.0,
            exact_qualified: 1.5,
            exact_name: 1.6,
            value_name: 0.8,
            partial_symbol: 0.6,
            definition_identifier: 1.5,
            impl_block: 0.8,
            constructor: 0.8,
            declared_kind: 1.5,
            exact_case: 2.0,
            definition: 1.1,
            named_identifier: 1.6,
            path_terms: 0.3,
            path_match: 3.0,
            test: 0.55,
            vendored: 0.35,
            generated: 0.4,
            docs: 0.6,
            neighbours: 0.3,
            per_file_overflow: 0.8,
            phrase: 1.0,
            phrase_share: 0.5,
            fold_windows: 10.0,
        }
    }
}

impl Weights {
    /// Names of the factors, as used by [`Weights::get`] and [`Weights::set`].
    pub const NAMES: [&'static str; 23] = [
        "exact_symbol",
        "exact_qualified",
        "exact_name",
        "value_name",
        "partial_symbol",
        "definition_identifier",
        "impl_block",
        "constructor",
        "declared_kind",
        "exact_case",
        "definition",
        "named_identifier",
        "path_terms",
        "path_match",
        "test",
        "vendored",
        "generated",
        "docs",
        "neighbours",
        "per_file_overflow",
        "phrase",
        "phrase_share",
        "fold_windows",
    ];

    fn slot(&mut self, name: &str) -> Option<&mut f32> {
        Some(match name {
            "exact_symbol" => &mut self.exact_symbol,
            "exact_qualified" => &mut self.exact_qualified,
            "exact_name" => &mut self.exact_name,
            "value_name" => &mut self.value_name,
            "partial_symbol" => &mut self.partial_symbol,
            "definition_identifier" => &mut self.definition_identifier,
            "impl_block" => &mut self.impl_block,
            "constructor" => &mut self.constructor,
            "declared_kind" => &mut self.declared_kind,
            "exact_case" => &mut self.exact_case,
            "definition" => &mut self.definition,
            "named_identifier" => &mut self.named_identifier,
            "path_terms" => &mut self.path_terms,
            "path_match" => &mut self.path_match,
            "test" => &mut self.test,
            "vendored" => &mut self.vendored,
            "generated" => &mut self.generated,
            "docs" => &mut self.docs,
            "neighbours" => &mut self.neighbours,
            "per_file_overflow" => &mut self.per_file_overflow,
            "phrase" => &mut self.phrase,
            "phrase_share" => &mut self.phrase_share,
            "fold_windows" => &mut self.fold_windows,
            _ => return None,
        })
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<f32> {
        self.clone().slot(name).map(|v| *v)
    }

    /// Sets one factor (benchmarks use this for ablations: 1.0 turns a multiplicative rule
    /// off, 0.0 an additive one).
    pub fn set(&mut self, name: &str, value: f32) -> Result<(), String> {
        if !value.is_finite() || value < 0.0 {
            return Err(format!(
                "ranking weight {name} must be a finite number >= 0, not {value}"
            ));
        }
        let slot = self.slot(name).ok_or_else(|| {
            format!(
                "unknown ranking weight {name:?} (known: {})",
                Self::NAMES.join(", ")
            )
        })?;
        *slot = value;
        Ok(())
    }
}

/// What the ranking layer knows about one candidate.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub bm25: f32,
    pub path: &'a str,
    /// `classify_path(path)`, computed once per path by the caller.
    pub path_class: PathClass,
    /// `fingerprints(path)`, computed once per path by the caller.
    pub path_prints: &'a [u32],
    pub symbol: &'a str,
    /// `fingerprints` of the lower-cased symbol, computed once per chunk by the caller.
    pub symbol_prints: &'a [u32],
    /// `fingerprints` of the chunk's other defined names (merged small units).
    pub name_prints: &'a [Box<[u32]>],
    /// Bit `i`: `name_prints[i]` names only values in its file (a struct's `name` field).
    pub value_names: u64,
    /// `is_test_scope(local_path)`, computed once per chunk by the caller.
    pub test_scope: bool,
    pub local_path: &'a str,
    pub names: &'a str,
    pub kind: ChunkKind,
}

/// The names a chunk defines besides its own symbol, in order: what `name_prints` and the
/// value-name bits are indexed by (one definition, so the three always agree).
pub fn other_names<'a>(names: &'a str, symbol: &'a str) -> impl Iterator<Item = &'a str> {
    names
        .split(' ')
        .filter(move |n| !n.is_empty() && *n != symbol)
}

impl Candidate<'_> {
    /// Whether the `i`-th of the chunk's other names (`name_prints[i]`) names only values.
    fn is_value_name(&self, i: u32) -> bool {
        i < u64::BITS && self.value_names & (1 << i) != 0
    }
}

/// The final score of a candidate.
#[must_use]
pub fn score(query: &Query, c: &Candidate<'_>, w: &Weights) -> f32 {
    let mut s = c.bm25;
    match query.class {
        QueryClass::Identifier => {
            if let Some(last) = query.segments.last() {
                let qualified = query.segments.len() > 1;
                let named = if !c.symbol.is_empty() && eq_lowercase(base_name(c.symbol), last) {
                    // `Client.send` asks for send on Client: a send elsewhere is only a
                    // partial answer.
                    s *= if !qualified {
                        w.exact_symbol
                    } else if qualifier_matches(&query.segments, c.local_path) {
                        w.exact_symbol * w.exact_qualified
                    } else {
                        w.exact_name
                    };
                    if c.kind == ChunkKind::Impl && !query.kinds.contains(&ChunkKind::Impl) {
                        s *= w.impl_block;
                    }
                    if !qualified && is_constructor(c.local_path) {
                        s *= w.constructor;
                    }
                    true
                } else if let Some((i, _, path)) =
                    named_unit(query, c.symbol, c.local_path, c.names)
                {
                    // A merged chunk defines each of its units, as its first unit's symbol
                    // does; a qualified name must end the unit's path.
                    s *= if !qualified {
                        w.exact_symbol
                    } else if path {
                        w.exact_symbol * w.exact_qualified
                    } else {
                        w.exact_name
                    };
                    if c.is_value_name(i) {
                        s *= w.value_name;
                    }
                    true
                } else {
                    false
                };
                // Spelling and kind choose among the chunks that define the name; they never
                // lift a chunk of another name (`def parse` must not prefer any function).
                if named {
                    let typed = |n: &str| base_name(n) == query.name;
                    if typed(c.symbol) || c.names.split(' ').any(typed) {
                        s *= w.exact_case;
                    }
                    if query.kinds.contains(&c.kind) {
                        s *= w.declared_kind;
                    }
                }
            }
            if c.kind.is_definition() {
                s *= w.definition_identifier;
            }
        }
        QueryClass::Path => {
            if query.names_path(c.path) {
                s *= w.path_match;
            }
        }
        QueryClass::NaturalLanguage => {
            // No exact-name boost here: a word of a sentence that happens to name a function
            // mostly points away from the code described (doc-to-code NDCG@10 +0.01 on both
            // halves without it; benches/quality/README.md). A named value describes no
            // behaviour: a block of them is glue to a sentence.
            if c.kind.is_definition() && !c.kind.is_value() {
                s *= w.definition;
            }
            // A compound identifier is never an ordinary word of the sentence: it names code.
            let names_it = |name: &str| query.named.iter().any(|n| eq_lowercase(name, n));
            if !query.named.is_empty()
                && ((!c.symbol.is_empty() && names_it(c.symbol))
                    || c.names.split(' ').any(|n| names_it(base_name(n))))
            {
                s *= w.named_identifier;
            }
        }
    }
    if !c.symbol.is_empty() && query.class != QueryClass::Path {
        // A chunk of merged small units answers for each of them, not only the first. A
        // sentence's words are not asking for the values named like them (`name`, `size`).
        let (_, best) = best_covered(query, c);
        s *= 1.0 + w.partial_symbol * best;
    }
    s *= 1.0 + w.path_terms * coverage(&query.prints, c.path_prints);
    let class = match c.path_class {
        PathClass::Source if c.test_scope => PathClass::Test,
        class => class,
    };
    s * match class {
        PathClass::Source => 1.0,
        PathClass::Test if query.wants_tests => 1.0,
        PathClass::Docs if query.wants_docs => 1.0,
        PathClass::Vendored if query.wants_vendored => 1.0,
        PathClass::Test => w.test,
        PathClass::Vendored => w.vendored,
        PathClass::Generated => w.generated,
        PathClass::Docs => w.docs,
    }
}

/// Test code inside a source file: Rust's `mod tests`, a `TestFoo` class, `test_*` functions.
#[must_use]
pub fn is_test_scope(local_path: &str) -> bool {
    local_path.split(['.', ':']).any(|segment| {
        let lower = segment.to_ascii_lowercase();
        let test_class = segment
            .strip_prefix("Test")
            .is_some_and(|rest| rest.starts_with(char::is_uppercase))
            || (segment.len() > 4 && (segment.ends_with("Test") || segment.ends_with("Tests")));
        lower == "tests" || lower == "test" || lower.starts_with("test_") || test_class
    })
}

/// `Client.send` matches a local path ending in `Client.send` (any separator, any case).
fn qualifier_matches(segments: &[String], local_path: &str) -> bool {
    split_qualified(local_path).ends_with(segments)
}

/// Whether `segments` (`Client.send`, lower-cased) end the path of the unit `name` merged
/// into chunk `c`. Units merge only within one scope: the chunk's own path when it is a
/// container's header naming its members (`Client`), else the scope of its first unit
/// (`Client` for `Client.close`, with `send` merged after it). A name may hold its own
/// qualifier (a C++ `Parser::parse` defined outside its class, in namespace scope).
fn merged_path_matches(segments: &[String], local_path: &str, symbol: &str, name: &str) -> bool {
    let local = split_qualified(local_path);
    let name = split_qualified(name);
    let own = split_qualified(symbol).len().max(1);
    let first_scope = local.len().checked_sub(own).map(|n| &local[..n]);
    [Some(local.as_slice()), first_scope]
        .into_iter()
        .flatten()
        .any(|scope| [scope, &name].concat().ends_with(segments))
}

/// What a hit is named by: the chunk's own symbol, another of the units merged into it, or,
/// for a sentence that no unit's name answers, the unit its lines are about
/// ([`unit_by_text`], which needs the chunk's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitUnit<'a> {
    Own,
    Unit(&'a str),
    ByText,
}

/// The unit merged into a chunk (`names`) that an identifier query names when the chunk's
/// own `symbol` does not: a hit for `Watcher.polling` in the chunk that opens with
/// `Watcher.__repr__` is about `polling`, and says so. Among several, the one whose path a
/// qualifier ends, then the one spelled as typed, then the first. A sentence that names a
/// compound identifier (`where is last_flush_started set`) names its unit the same way;
/// else the unit whose name its words cover best, if that is not the chunk's own
/// (`Println is a convenience method...` is about `Println`, merged after `Printf`); a
/// sentence that covers no unit's name at all leaves it to the units' text.
#[must_use]
pub fn merged_unit<'a>(query: &Query, c: &Candidate<'a>) -> HitUnit<'a> {
    let (symbol, local_path, names) = (c.symbol, c.local_path, c.names);
    let found = |unit: Option<&'a str>| unit.map_or(HitUnit::Own, HitUnit::Unit);
    if query.class == QueryClass::NaturalLanguage {
        let names_it = |name: &str| query.named.iter().any(|n| eq_lowercase(name, n));
        if !query.named.is_empty() {
            if !symbol.is_empty() && names_it(base_name(symbol)) {
                return HitUnit::Own;
            }
            if let Some(unit) = names.split(' ').find(|n| names_it(base_name(n))) {
                return HitUnit::Unit(unit);
            }
        }
        return match best_covered(query, c) {
            (best, share) if share > 0.0 => {
                found(best.and_then(|i| other_names(names, symbol).nth(i as usize)))
            }
            _ if query.named.is_empty() && other_names(names, symbol).next().is_some() => {
                HitUnit::ByText
            }
            _ => HitUnit::Own,
        };
    }
    if query.class != QueryClass::Identifier {
        return HitUnit::Own;
    }
    let Some(last) = query.segments.last() else {
        return HitUnit::Own;
    };
    if !symbol.is_empty() && eq_lowercase(base_name(symbol), last) {
        return HitUnit::Own;
    }
    found(named_unit(query, symbol, local_path, names).map(|(_, unit, _)| unit))
}

/// Among a chunk's other units (`other_names`), the one an identifier query names by its
/// last segment: the one whose path a qualifier ends, then the one spelled as typed, then
/// the first. Its position among them (for [`Candidate::is_value_name`]), its name and
/// whether its path matched. The score and the hit's symbol both read it, so a hit names
/// the unit it was ranked for.
fn named_unit<'a>(
    query: &Query,
    symbol: &'a str,
    local_path: &str,
    names: &'a str,
) -> Option<(u32, &'a str, bool)> {
    let last = query.segments.last()?;
    let qualified = query.segments.len() > 1;
    (0..)
        .zip(other_names(names, symbol))
        .filter(|(_, n)| eq_lowercase(base_name(n), last))
        .map(|(i, n)| {
            let path = qualified && merged_path_matches(&query.segments, local_path, symbol, n);
            (i, n, path)
        })
        .max_by_key(|&(i, n, path)| (path, base_name(n) == query.name, std::cmp::Reverse(i)))
}

/// Which of a chunk's units (`units`: first and last line of each) a sentence is about by
/// their own lines, for a chunk whose units' names it does not tell apart: the one whose
/// lines hold the most weight of the query's terms (`weights`, one per term of
/// `query.terms`: their idf), each term counted once per unit. A line belongs to the
/// innermost unit that holds it; a run of comment or attribute lines right above a unit
/// (its doc comment, decorators) to that unit. `None` unless the best beats `own`, the unit
/// the chunk is named by (ties keep it), or any unit at all when it has none. `text` is the
/// chunk's, from line `first_line`.
#[must_use]
pub fn unit_by_text(
    query: &Query,
    weights: &[f32],
    text: &str,
    first_line: u32,
    units: &[(u32, u32)],
    own: Option<usize>,
) -> Option<usize> {
    let innermost = |row: u32| {
        (0..units.len())
            .filter(|&i| units[i].0 <= row && row <= units[i].1)
            .min_by_key(|&i| units[i].1 - units[i].0)
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut owner: Vec<Option<usize>> = (0u32..)
        .zip(&lines)
        .map(|(k, _)| innermost(first_line + k))
        .collect();
    for (i, &(start, _)) in units.iter().enumerate() {
        // Up from the unit's first line, over what its container (or nothing) holds.
        let holds = |o: usize| o != i && units[o].0 <= start && start <= units[o].1;
        let mut row = start;
        while row > first_line {
            row -= 1;
            let k = (row - first_line) as usize;
            let Some(line) = lines.get(k) else { break };
            if !is_comment_like(line) || owner[k].is_some_and(|o| !holds(o)) {
                break;
            }
            owner[k] = Some(i);
        }
    }
    let mut found = vec![0u64; units.len()];
    for (line, unit) in lines.iter().zip(&owner) {
        let Some(unit) = *unit else { continue };
        for_each_token(line, |token| {
            let print = fingerprint(token);
            if let Some(t) = query.prints.iter().position(|&p| p == print)
                && t < 64
            {
                found[unit] |= 1 << t;
            }
        });
    }
    let score = |i: usize| -> f32 {
        (0..64usize)
            .filter(|&t| found[i] & (1 << t) != 0)
            .map(|t| weights.get(t).copied().unwrap_or(0.0))
            .sum()
    };
    let floor = own.map_or(0.0, score);
    (0..units.len())
        .map(|i| (i, score(i)))
        .filter(|&(_, s)| s > floor)
        .fold(None, |best: Option<(usize, f32)>, next| match best {
            Some(b) if b.1 >= next.1 => Some(b),
            _ => Some(next),
        })
        .map(|(i, _)| i)
}

/// A line of a comment or an attribute (`///`, `#`, `/**`, ` * `, `@decorator`, `#[attr]`):
/// what sits right above a definition and belongs to it.
fn is_comment_like(line: &str) -> bool {
    let line = line.trim_start();
    ["//", "/*", "*", "#", "@", "--", ";"]
        .iter()
        .any(|mark| line.starts_with(mark))
}

/// The unit of a chunk whose name the query's terms cover best ([`coverage`]): `None` for
/// the chunk's own symbol, which wins ties, `Some(i)` for the `i`-th of its other names;
/// with that coverage. A sentence's words are not asking for the values named like them
/// (`name`, `size`).
fn best_covered(query: &Query, c: &Candidate<'_>) -> (Option<u32>, f32) {
    let sentence = query.class == QueryClass::NaturalLanguage;
    (0..)
        .zip(c.name_prints)
        .filter(|&(i, _)| !(sentence && c.is_value_name(i)))
        .map(|(i, prints)| (Some(i), coverage(&query.prints, prints)))
        .fold(
            (None, coverage(&query.prints, c.symbol_prints)),
            |best, next| if next.1 > best.1 { next } else { best },
        )
}

/// Whether the symbol `name` at `local_path` is the unit a chunk lists as `unit` (its name,
/// or its path inside one of the chunk's units: `Return.expr`).
#[must_use]
pub fn is_unit(unit: &str, name: &str, local_path: &str) -> bool {
    name == unit
        || (name == base_name(unit)
            && split_qualified(local_path).ends_with(&split_qualified(unit)))
}

/// The names of a chunk's units, without the paths they are listed by: what the name index
/// keys (`expr` for `Block.expr`).
pub fn unit_names(names: &str) -> impl Iterator<Item = &str> {
    names.split(' ').filter(|n| !n.is_empty()).map(base_name)
}

/// The chunk's unit names joined for the name field: `names` itself unless one is listed by
/// its path (most chunks list bare names, and this runs for every chunk indexed).
#[must_use]
pub fn unit_names_joined(names: &str) -> std::borrow::Cow<'_, str> {
    if names.contains(QUALIFIERS) {
        unit_names(names).collect::<Vec<_>>().join(" ").into()
    } else {
        names.into()
    }
}

/// `TableCache::TableCache`, `Parser.Parser`: a member named as the type that holds it.
fn is_constructor(local_path: &str) -> bool {
    let mut segments = local_path.rsplit(QUALIFIERS).filter(|s| !s.is_empty());
    matches!((segments.next(), segments.next()), (Some(a), Some(b)) if a == b)
}

/// The last segment of a name as the language writes it (`parse` of `Parser::parse`): the
/// name itself of a chunk's unit listed by its path (`Block.expr`).
#[must_use]
pub fn base_name(name: &str) -> &str {
    name.rsplit(QUALIFIERS).next().unwrap_or(name)
}

/// What joins the parts of a qualified name: `Client.send`, `io::Read`, `Foo#bar`, `a->b`,
/// PHP's `App\Http\Kernel`.
const QUALIFIERS: [char; 5] = ['.', ':', '#', '>', '\\'];

/// `text` lower-cased equals `lower` (already lower-case), without allocating.
fn eq_lowercase(text: &str, lower: &str) -> bool {
    text.chars().flat_map(char::to_lowercase).eq(lower.chars())
}

fn fingerprint(token: &str) -> u32 {
    #[allow(clippy::cast_possible_truncation)] // a 32-bit fingerprint is the point
    let print = xxh3_64(token.as_bytes()) as u32;
    print
}

/// The analyzer tokens of `text` as 32-bit fingerprints, computed once per path and chunk when
/// they are indexed, so that ranking a candidate analyses no text. A collision (one in ~4
/// billion per pair) only nudges one coverage factor.
#[must_use]
pub fn fingerprints(text: &str) -> Box<[u32]> {
    let mut out = Vec::new();
    for_each_token(text, |token| out.push(fingerprint(token)));
    out.into_boxed_slice()
}

/// Fraction of the symbol's (or path's) analyzer tokens that are query terms. Stems
/// included: split tokens alone measured 0.003 lower doc-to-code NDCG@10.
fn coverage(query: &[u32], tokens: &[u32]) -> f32 {
    if tokens.is_empty() || query.is_empty() {
        return 0.0;
    }
    let hits = tokens.iter().filter(|t| query.contains(t)).count();
    #[allow(clippy::cast_precision_loss)]
    let fraction = hits as f32 / tokens.len() as f32;
    fraction
}

/// Adds to each candidate `share` times the better score of its neighbours (the chunks
/// just before and after it in its file, as `adjacent` names them) among the candidates.
/// A candidate scoring nothing of its own (a channel with no weight found it) inherits
/// nothing: neighbours refine a ranking, they do not make a hit.
///
/// A sentence describes behaviour, and code that does one thing sits together: the helper
/// next to a strong match, or a function whose own text says little while the code around
/// it says the words. Scores are read before any is raised, so nothing compounds.
pub fn inherit_from_neighbours<T>(
    scored: &mut [(f32, T)],
    key_of: impl Fn(&T) -> u64,
    adjacent: impl Fn(u64) -> [Option<u64>; 2],
    share: f32,
) {
    if share <= 0.0 || scored.len() < 2 {
        return;
    }
    let before: HashMap<u64, f32> = scored.iter().map(|(s, t)| (key_of(t), *s)).collect();
    for (s, t) in scored.iter_mut().filter(|(s, _)| *s > 0.0) {
        let best = adjacent(key_of(t))
            .into_iter()
            .flatten()
            .filter_map(|k| before.get(&k).copied())
            .fold(0.0, f32::max);
        *s += share * best;
    }
}

/// Fewest words a run must have for the phrase rule: two words in a row are common.
pub const PHRASE_RUN: usize = 3;

/// The words of `text` as phrases are compared: runs of ASCII letters and digits and of
/// other bytes above ASCII, ASCII letters lower-cased, hashed (`Could not parse query '%s'`
/// and `"could not parse query " + q` give the same first four). Byte by byte, without
/// decoding: the rule reads the literals of up to fifty chunks per query.
fn for_each_phrase_word(text: &[u8], mut f: impl FnMut(u64)) {
    // FNV-1a over the word's lower-cased bytes; 0 marks "no word open".
    const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut hash = 0u64;
    for &b in text {
        if b.is_ascii_alphanumeric() || b >= 0x80 {
            let h = if hash == 0 { BASIS } else { hash };
            hash = (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(PRIME) | 1;
        } else if hash != 0 {
            f(hash);
            hash = 0;
        }
    }
    if hash != 0 {
        f(hash);
    }
}

/// [`for_each_phrase_word`] of the string literals of `text`, as quotes on one line delimit
/// them: what a program writes out is in its literals, and a sentence that describes code
/// also stands in comments and documents, where the phrase rule would lift copies over the
/// code. An apostrophe between letters (`isn't`) opens nothing, and triple-quoted strings
/// (Python's docstrings) are skipped whole.
fn for_each_quoted_word(text: &str, mut f: impl FnMut(u64)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = memchr::memchr3(b'"', b'\'', b'`', &bytes[at..]) {
        let open = at + found;
        let quote = bytes[open];
        at = open + 1;
        let in_word = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_alphabetic);
        if quote == b'\'' && open > 0 && in_word(open - 1) && in_word(open + 1) {
            continue;
        }
        // A triple-quoted string is a docstring or a block of text, not a message: skipped.
        let triple = [quote; 3];
        if bytes[open..].starts_with(&triple) {
            at = memchr::memmem::find(&bytes[open + 3..], &triple)
                .map_or(bytes.len(), |end| open + 3 + end + 3);
            continue;
        }
        // The literal ends at its unescaped closing quote or at the line's end.
        let mut end = at;
        while end < bytes.len() && bytes[end] != b'\n' {
            if bytes[end] == quote && bytes[end - 1] != b'\\' {
                break;
            }
            end += 1;
        }
        for_each_phrase_word(&bytes[at..end], &mut f);
        at = (end + 1).min(bytes.len());
    }
}

/// A word's bit in a 64-bit sketch of words.
fn word_bit(word: u64) -> u64 {
    1 << (word % 64)
}

/// A 64-bit sketch of the words in the string literals of `text` (the [`word_bit`] of each),
/// 0 when they are fewer than [`PHRASE_RUN`]: the phrase rule reads a chunk's text only when
/// its sketch holds enough of the query's words ([`sketch_admits`]).
#[must_use]
pub fn quoted_sketch(text: &str) -> u64 {
    let (mut sketch, mut words) = (0u64, 0usize);
    for_each_quoted_word(text, |w| {
        sketch |= word_bit(w);
        words += 1;
    });
    if words >= PHRASE_RUN { sketch } else { 0 }
}

/// Whether a chunk of this `sketch` may hold `least` of the `query` words or more in its
/// literals (false positives only: a word's bit may be another's).
#[must_use]
pub fn sketch_admits(query: &[u64], sketch: u64, least: f32) -> bool {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let need = ((least * query.len() as f32).ceil() as usize).max(PHRASE_RUN);
    sketch != 0 && query.iter().filter(|&&w| sketch & word_bit(w) != 0).count() >= need
}

/// [`for_each_phrase_word`] of `text`, collected.
#[must_use]
pub fn phrase_words(text: &str) -> Vec<u64> {
    let mut words = Vec::new();
    for_each_phrase_word(text.as_bytes(), |w| words.push(w));
    words
}

/// The share of `query`'s words that stand in the string literals of `text` within a run of
/// [`PHRASE_RUN`] or more consecutive query words in the same order. A message written with
/// values in it (`could not parse query 'div[': unexpected token`) is a few such runs.
#[must_use]
pub fn phrase_share(query: &[u64], text: &str) -> f32 {
    if query.len() < PHRASE_RUN {
        return 0.0;
    }
    // The query's own sketch lets most words of the text skip the programme.
    let mask = query.iter().fold(0u64, |m, &w| m | word_bit(w));
    // One row of the dynamic programme: run[j + 1] is the run ending at query word j.
    let mut run = vec![0usize; query.len() + 1];
    let mut covered = vec![false; query.len()];
    let mut open = false;
    for_each_quoted_word(text, |word| {
        if mask & word_bit(word) == 0 {
            if open {
                run.fill(0);
                open = false;
            }
            return;
        }
        for j in (0..query.len()).rev() {
            run[j + 1] = if query[j] == word { run[j] + 1 } else { 0 };
            let length = run[j + 1];
            if length >= PHRASE_RUN {
                // A run reaching the minimum covers its earlier words too.
                let from = if length == PHRASE_RUN {
                    j + 1 - PHRASE_RUN
                } else {
                    j
                };
                covered[from..=j].fill(true);
            }
        }
        open = true;
    });
    #[allow(clippy::cast_precision_loss)] // word counts
    {
        covered.iter().filter(|&&c| c).count() as f32 / query.len() as f32
    }
}

/// The phrase rule's factor for a chunk of `text`: 1 plus `weight` times the
/// [`phrase_share`], when that share reaches `least` (a sentence that describes code shares
/// a few words in a row with many comments; a message is most of its words in a row).
#[must_use]
pub fn phrase_factor(query: &[u64], text: &str, weight: f32, least: f32) -> f32 {
    if query.len() < PHRASE_RUN || weight <= 0.0 {
        return 1.0;
    }
    let share = phrase_share(query, text);
    if share < least.max(f32::MIN_POSITIVE) {
        return 1.0;
    }
    1.0 + weight * share
}

/// The top `limit`, best first, with each file's results past its `per_file`-th (0 = no
/// cap) scaled by `overflow` once more for each one (`overflow` 0: dropped).
///
/// A soft cap: one file cannot crowd out the rest on a near tie, yet a file whose chunks all
/// outscore the others by far still shows them, as when the query describes one of many
/// similar methods of a large file.
#[must_use]
pub fn diversify<T, K: std::hash::Hash + Eq>(
    mut ranked: Vec<(f32, T)>,
    file_of: impl Fn(&T) -> K,
    per_file: usize,
    overflow: f32,
    limit: usize,
) -> Vec<(f32, T)> {
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    if per_file == 0 {
        ranked.truncate(limit);
        return ranked;
    }
    let mut per_path: HashMap<K, usize> = HashMap::new();
    ranked.retain_mut(|(s, item)| {
        let seen = per_path.entry(file_of(item)).or_default();
        *seen += 1;
        let past = seen.saturating_sub(per_file);
        if past > 0 {
            if overflow <= 0.0 {
                return false;
            }
            // Lowered whatever its sign: a cosine can be below zero.
            let factor = overflow.powi(i32::try_from(past).unwrap_or(i32::MAX));
            *s -= s.abs() * (1.0 - factor);
        }
        true
    });
    // Scaled scores still fall within each file, so one stable sort settles the order.
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranked.truncate(limit);
    ranked
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn classifies_queries() {
        assert_eq!(Query::parse("parse_args").class, QueryClass::Identifier);
        assert_eq!(Query::parse("Client.send").class, QueryClass::Identifier);
        assert_eq!(Query::parse("std::io::Read").class, QueryClass::Identifier);
        assert_eq!(Query::parse("get用户").class, QueryClass::Identifier);
        for sentence in ["設定ファイルを書き込む", "数据库", "사용자에게"] {
            assert_eq!(Query::parse(sentence).class, QueryClass::NaturalLanguage);
        }
        assert_eq!(Query::parse("src/store.rs").class, QueryClass::Path);
        assert_eq!(Query::parse("store.rs").class, QueryClass::Path);
        assert_eq!(
            Query::parse("where are tokens refreshed").class,
            QueryClass::NaturalLanguage
        );
        assert_eq!(Query::parse("Client.send").segments, ["client", "send"]);
        assert!(Query::parse("tests for the parser").wants_tests);
        assert!(!Query::parse("parse the config").wants_tests);
    }

    #[test]
    fn a_name_with_a_dot_or_backslash_may_be_code() {
        // The engine reads these as identifiers when no indexed path holds them.
        for (raw, segments, name) in [
            ("Context.JSON", &["context", "json"][..], "JSON"),
            ("Element.html", &["element", "html"], "html"),
            (
                r"League\CommonMark\Parser",
                &["league", "commonmark", "parser"],
                "Parser",
            ),
        ] {
            let query = Query::parse(raw);
            assert_eq!(query.class, QueryClass::Path, "{raw}");
            assert!(query.may_name_code(), "{raw}");
            let code = query.as_identifier();
            assert_eq!(code.class, QueryClass::Identifier);
            assert_eq!(code.segments, segments);
            assert_eq!(code.name, name);
        }
        for path in ["src/store.rs", "./store.rs", "a/b", "store.rs:12"] {
            assert!(!Query::parse(path).may_name_code(), "{path}");
        }
    }

    #[test]
    fn requests_lose_their_scaffold_words() {
        for (request, body) in [
            ("where is the code that parses flags", "parses flags"),
            ("Where are tokens refreshed?", "tokens refreshed?"),
            (
                "how does the watcher debounce events",
                "the watcher debounce events",
            ),
            ("how to parse json", "parse json"),
            (
                "find the function that returns the config",
                "returns the config",
            ),
            ("show me the code that handles retries", "handles retries"),
            ("which function creates a new store", "creates a new store"),
            ("find where the config is loaded", "the config is loaded"),
            ("can you find the method for parsing dates", "parsing dates"),
            ("code that handles retries", "handles retries"),
            (
                "I'm looking for the function that parses flags",
                "parses flags",
            ),
            ("is there a function that parses flags?", "parses flags?"),
            (
                "please help me find where tokens are refreshed",
                "tokens are refreshed",
            ),
            ("I need the code for parsing dates", "parsing dates"),
            ("I’m looking for the code that parses flags", "parses flags"),
            (
                "we are leaking memory in the watcher",
                "we are leaking memory in the watcher",
            ),
            // Content, not a request: left whole.
            ("find the user by id", "find the user by id"),
            ("where clause builder", "where clause builder"),
            ("line numbers in the gutter", "line numbers in the gutter"),
            (
                "code generation for templates",
                "code generation for templates",
            ),
            ("what is", "what is"),
            ("where is the code", "where is the code"),
        ] {
            assert_eq!(request_body(request), body, "{request}");
        }
        let asked = Query::parse("where is the code that parses flags");
        assert_eq!(asked.terms, Query::parse("parses flags").terms);
        assert_eq!(asked.raw, "where is the code that parses flags");
        assert_eq!(asked.body, "parses flags");
        assert_eq!(Query::parse("parse_args").body, "parse_args");
    }

    #[test]
    fn classifies_paths() {
        assert_eq!(classify_path("src/auth/tokens.py"), PathClass::Source);
        assert_eq!(classify_path("tests/test_tokens.py"), PathClass::Test);
        assert_eq!(classify_path("pkg/tokens_test.go"), PathClass::Test);
        assert_eq!(classify_path("web/app.spec.ts"), PathClass::Test);
        assert_eq!(
            classify_path("vendor/github.com/x/y.go"),
            PathClass::Vendored
        );
        assert_eq!(classify_path("api/v1/service.pb.go"), PathClass::Generated);
        for head in [
            "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n",
            "// @generated by the build\nfn main() {}\n",
            "//------\n// <auto-generated>\n//     This code was generated by a tool.\n",
            "/* A Bison parser, made by GNU Bison 3.8.2.  */\n",
            "#line 2 \"lexer.c\"\n/* A lexical scanner generated by flex */\n",
            "# This file is automatically generated; DO NOT EDIT.\n",
            "# Auto generated by tools/make_width_tables.py\n",
            "#line 2 \"lexer.c\"\n\n#line 4 \"lexer.c\"\n\n#define X 1\n\n/* generated by flex */\n",
        ] {
            assert!(is_generated_head(head), "{head}");
        }
        for text in [
            "// Copyright 2024 The Authors.\n\npackage mux\n",
            "// Package ids: generated ids are unique per process.\n",
            "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n// Code generated below the head is not a banner.\n",
        ] {
            assert!(!is_generated_head(text), "{text}");
        }
        assert_eq!(
            classify_path("loc/deu/diagnosticMessages.generated.json.lcl"),
            PathClass::Generated
        );
        assert_eq!(
            classify_path("pkg/zz_generated.deepcopy.go"),
            PathClass::Generated
        );
        assert_eq!(classify_path("src/regenerated.ts"), PathClass::Source);
        assert_eq!(classify_path("docs/guide.md"), PathClass::Docs);
        assert_eq!(classify_path("README.md"), PathClass::Docs);
        assert_eq!(classify_path("docs/conf.py"), PathClass::Source);
    }

    fn candidate<'a>(
        path: &'a str,
        symbol: &'a str,
        local_path: &'a str,
        kind: ChunkKind,
    ) -> Candidate<'a> {
        Candidate {
            bm25: 1.0,
            path,
            path_class: classify_path(path),
            path_prints: Box::leak(fingerprints(path)),
            symbol,
            symbol_prints: Box::leak(fingerprints(&symbol.to_lowercase())),
            name_prints: &[],
            value_names: 0,
            test_scope: is_test_scope(local_path),
            local_path,
            names: symbol,
            kind,
        }
    }

    #[test]
    fn a_declaration_keyword_makes_an_identifier_query_with_a_kind() {
        let types = declared_kinds("class").unwrap();
        for (raw, name, kinds) in [
            ("class Foo", "Foo", types),
            ("struct Foo<T>", "Foo", types),
            (
                "pub fn parse_args",
                "parse_args",
                declared_kinds("fn").unwrap(),
            ),
            (
                "def send(self, request)",
                "send",
                declared_kinds("def").unwrap(),
            ),
            ("def send:", "send", declared_kinds("def").unwrap()),
            (
                "export default function render",
                "render",
                declared_kinds("fn").unwrap(),
            ),
            ("impl Store", "Store", &[ChunkKind::Impl][..]),
            (
                "const MAX_DEPTH",
                "MAX_DEPTH",
                declared_kinds("const").unwrap(),
            ),
            (
                "export const defaults = {",
                "defaults",
                declared_kinds("const").unwrap(),
            ),
            (
                "var ErrNotFound",
                "ErrNotFound",
                declared_kinds("var").unwrap(),
            ),
            (
                "#define BUFSIZE",
                "BUFSIZE",
                declared_kinds("#define").unwrap(),
            ),
            ("const fn parse", "parse", declared_kinds("fn").unwrap()),
            (
                "fn Store::open",
                "Store::open",
                declared_kinds("fn").unwrap(),
            ),
        ] {
            assert_eq!(declaration(raw), Some((name, kinds)), "{raw}");
            let q = Query::parse(raw);
            assert_eq!(q.class, QueryClass::Identifier, "{raw}");
            assert_eq!(q.kinds, kinds, "{raw}");
        }
        for sentence in [
            "class that parses flags",
            "type error handling",
            "function to retry requests",
            "fn",
            "def (x)",
            "Class Foo",
            "static files",
            "let me know",
            "const value",
            "def send(self, data):\n    return len(data)",
        ] {
            assert_eq!(declaration(sentence), None, "{sentence}");
        }
        assert_eq!(Query::parse("impl Store").segments, ["store"]);
        assert_eq!(Query::parse("class Foo").terms, Query::parse("Foo").terms);
    }

    #[test]
    fn a_class_name_finds_the_class_before_its_constructor() {
        let w = Weights::default();
        let by = |q: &str, c: &Candidate<'_>| score(&Query::parse(q), c, &w);
        let class = candidate(
            "db/cache.h",
            "TableCache",
            "leveldb::TableCache",
            ChunkKind::Class,
        );
        let built = candidate(
            "db/cache.cc",
            "TableCache",
            "leveldb::TableCache::TableCache",
            ChunkKind::Function,
        );
        assert!(by("TableCache", &class) > by("TableCache", &built));
        // Asked for by its qualified name, the constructor is what is asked for.
        assert!(by("TableCache::TableCache", &built) > by("TableCache::TableCache", &class));
        assert!(is_constructor("Parser.Parser") && is_constructor("a::B::B"));
        assert!(!is_constructor("Parser.parse") && !is_constructor("Parser"));
    }

    #[test]
    fn a_type_name_finds_its_declaration_before_its_impl_blocks() {
        let w = Weights::default();
        let declared = candidate("src/store.rs", "Store", "Store", ChunkKind::Struct);
        let block = candidate("src/store.rs", "Store", "Store", ChunkKind::Impl);
        let by = |q: &str, c: &Candidate<'_>| score(&Query::parse(q), c, &w);
        assert!(by("Store", &declared) > by("Store", &block));
        assert!(by("struct Store", &declared) > by("struct Store", &block));
        assert!(by("impl Store", &block) > by("impl Store", &declared));
        // The keyword settles a name spelled alike by chunks of several kinds.
        let module = candidate("src/store.rs", "store", "store", ChunkKind::Module);
        let function = candidate("src/store.rs", "store", "store", ChunkKind::Function);
        assert!(by("fn store", &function) > by("fn store", &module));
        assert!(by("mod store", &module) > by("mod store", &function));
        // Spelling settles a name written in two cases, keyword or not.
        assert!(by("Store", &declared) > by("Store", &function));
        assert!(by("store", &function) > by("store", &declared));
        assert!(by("struct Store", &declared) > by("struct Store", &function));
        assert!(by("db.Store", &declared) > by("db.Store", &function));
        // Neither lifts a chunk of another name: a function named like the query's prefix
        // stays below the class that defines the name.
        let near = candidate("src/mypy.py", "parse_arg", "parse_arg", ChunkKind::Function);
        let mut holder = candidate("src/base.py", "Parser", "Parser", ChunkKind::Class);
        holder.names = "Parser parse_args";
        assert!(by("def parse_args", &holder) > by("def parse_args", &near));
        // A name among a merged chunk's units answers a plain name as its first unit would:
        // a one-line `struct Fuse;` merged after `struct PanicFuse` beats `impl Fuse`.
        let mut merged = candidate("src/fuse.rs", "PanicFuse", "PanicFuse", ChunkKind::Struct);
        merged.names = "PanicFuse Fuse";
        let prints = [fingerprints("panicfuse"), fingerprints("fuse")];
        merged.name_prints = &prints;
        let fuse = candidate("src/fuse.rs", "Fuse", "Fuse", ChunkKind::Impl);
        assert!(by("Fuse", &merged) > by("Fuse", &fuse));
        assert!(by("struct Fuse", &merged) > by("struct Fuse", &fuse));
        // A qualified name finds a merged unit by the scope the chunk's units share.
        let mut siblings = candidate("src/client.rs", "close", "Client::close", ChunkKind::Method);
        siblings.names = "close send";
        let mut header = candidate("src/client.rs", "Client", "Client", ChunkKind::Struct);
        header.names = "Client send";
        let mut other = candidate("src/client.rs", "close", "Server::close", ChunkKind::Method);
        other.names = "close send";
        for merged in [&siblings, &header] {
            assert!(by("Client::send", merged) > by("Client::send", &other));
            assert!(by("Client::send", merged) > by("send", merged));
        }
        // C++ names a member defined outside its class by its class: `EmitterState::LastIndent`
        // answers `LastIndent` and its qualified names, first in its chunk or merged.
        let mut defined = candidate(
            "src/state.cpp",
            "EmitterState::LastIndent",
            "YAML::EmitterState::LastIndent",
            ChunkKind::Function,
        );
        let declared = candidate(
            "src/state.h",
            "EmitterState",
            "YAML::EmitterState",
            ChunkKind::Class,
        );
        let mut namespace = candidate("src/state.cpp", "YAML", "YAML", ChunkKind::Module);
        namespace.names = "YAML EmitterState::EmitterState";
        for query in [
            "LastIndent",
            "EmitterState::LastIndent",
            "YAML::EmitterState::LastIndent",
        ] {
            assert!(by(query, &defined) > by(query, &declared), "{query}");
        }
        defined.names = "EmitterState::LastIndent EmitterState::EmitterState";
        for query in [
            "EmitterState::EmitterState",
            "YAML::EmitterState::EmitterState",
        ] {
            assert!(by(query, &namespace) > by(query, &declared), "{query}");
            assert!(by(query, &defined) > by(query, &declared), "{query}");
        }
        // Small types merged into one chunk list their members by type: `Return.expr` finds
        // the chunk where `Return` declares it, and names it.
        let mut trees = candidate("Trees.scala", "Block", "Trees.Block", ChunkKind::Class);
        trees.names = "Block Block.stats Block.expr Return Return.expr";
        let mut lone = candidate("Trees.scala", "Block", "Trees.Block", ChunkKind::Class);
        lone.names = "Block Block.stats Block.expr";
        assert!(by("Return.expr", &trees) > 2.0 * by("Return.expr", &lone));
        let q = Query::parse("Return.expr");
        assert_eq!(merged_unit(&q, &trees), HitUnit::Unit("Return.expr"));
        assert!(is_unit("Return.expr", "expr", "Trees.Return.expr"));
        assert!(!is_unit("Return.expr", "expr", "Trees.Block.expr"));
        assert!(is_unit(
            "EmitterState::LastIndent",
            "EmitterState::LastIndent",
            "YAML::EmitterState::LastIndent"
        ));
        let lift = by("def parse_arg", &near) / by("parse_arg", &near);
        assert!((lift - w.declared_kind).abs() < 1e-5, "{lift}");
    }

    /// `c` with the units `names` merged into it, their fingerprints as the index keeps them.
    fn with_units<'a>(mut c: Candidate<'a>, names: &'a str) -> Candidate<'a> {
        c.names = names;
        c.name_prints = Box::leak(
            other_names(names, c.symbol)
                .map(|n| fingerprints(&base_name(n).to_lowercase()))
                .collect(),
        );
        c
    }

    #[test]
    fn a_sentence_names_the_merged_unit_its_words_cover() {
        let command = || candidate("command.go", "Printf", "Command.Printf", ChunkKind::Method);
        let c = with_units(command(), "Printf Println PrintErr");
        let unit = |q: &str| merged_unit(&Query::parse(q), &c);
        assert_eq!(
            unit("Println is a convenience method to Println to the defined output"),
            HitUnit::Unit("Println")
        );
        // The chunk's own unit wins ties; a sentence that covers no name leaves it to the
        // units' text.
        assert_eq!(unit("Printf formats to the defined output"), HitUnit::Own);
        assert_eq!(unit("write to the defined output"), HitUnit::ByText);
        // A value is not what a sentence's word asks for.
        let mut valued = with_units(command(), "Printf output");
        valued.value_names = 1;
        let query = Query::parse("the defined output");
        assert_eq!(merged_unit(&query, &valued), HitUnit::ByText);
        valued.value_names = 0;
        assert_eq!(merged_unit(&query, &valued), HitUnit::Unit("output"));
        // A lone unit has nothing to choose from.
        let lone = with_units(command(), "Printf");
        assert_eq!(
            merged_unit(&Query::parse("write the output"), &lone),
            HitUnit::Own
        );
    }

    #[test]
    fn a_sentence_names_the_merged_unit_its_lines_are_about() {
        // A class (lines 1-11) with two small methods, each with a comment above it.
        let text = "\
class Db:
    pool = None

    # Open a connection to the configured database.
    def get(self):
        return connect(self.url)

    # Close the connection when the request ends.
    @hook
    def close(self):
        self.conn.close()
";
        let units = [(1, 11), (5, 6), (10, 11)];
        let unit = |q: &str, own| {
            let query = Query::parse(q);
            let weights = vec![1.0; query.terms.len()];
            unit_by_text(&query, &weights, text, 1, &units, own)
        };
        assert_eq!(unit("open a database connection", Some(0)), Some(1));
        assert_eq!(unit("what ends the request", Some(0)), Some(2));
        // The class's own lines hold `pool`: it stays; a tie keeps the unit named already.
        assert_eq!(unit("the pool", Some(0)), None);
        assert_eq!(unit("the connection", Some(1)), None);
        assert_eq!(unit("no such words", None), None);
        assert_eq!(unit("the connection", None), Some(1));
    }

    #[test]
    fn merged_units_answer_for_every_name_they_define() {
        let w = Weights::default();
        let q = Query::parse("get the name of the command");
        let lone = candidate(
            "src/cmd.rs",
            "set_bin_name",
            "set_bin_name",
            ChunkKind::Method,
        );
        let get_name = fingerprints("get_name");
        let merged = Candidate {
            name_prints: std::slice::from_ref(&get_name),
            ..lone
        };
        assert!(score(&q, &merged, &w) > score(&q, &lone, &w));
        let exact = candidate("src/cmd.rs", "get_name", "get_name", ChunkKind::Method);
        assert!((score(&q, &merged, &w) - score(&q, &exact, &w)).abs() < 1e-6);
    }

    #[test]
    fn exact_definitions_beat_mentions_and_tests_are_demoted() {
        let w = Weights::default();
        let q = Query::parse("refresh_token");
        let def = score(
            &q,
            &candidate(
                "src/auth.py",
                "refresh_token",
                "refresh_token",
                ChunkKind::Function,
            ),
            &w,
        );
        let mention = score(
            &q,
            &candidate("src/app.py", "main", "main", ChunkKind::Function),
            &w,
        );
        let test = score(
            &q,
            &candidate(
                "tests/test_auth.py",
                "refresh_token",
                "refresh_token",
                ChunkKind::Function,
            ),
            &w,
        );
        assert!(def > mention && def > test);
        let q = Query::parse("Client.send");
        let qualified = score(
            &q,
            &candidate("a.py", "send", "Client.send", ChunkKind::Method),
            &w,
        );
        let other = score(
            &q,
            &candidate("b.py", "send", "Server.send", ChunkKind::Method),
            &w,
        );
        let free = score(
            &q,
            &candidate("c.py", "send", "send", ChunkKind::Function),
            &w,
        );
        assert!(
            qualified > 2.0 * other && qualified > 2.0 * free,
            "{qualified} {other} {free}"
        );
    }

    #[test]
    fn sentences_that_name_a_compound_identifier_point_at_its_definition() {
        let q = Query::parse("GetPostFormMap returns a map for the given_key, like PostForm");
        assert_eq!(q.named, ["getpostformmap", "given_key", "postform"]);
        assert!(
            Query::parse("Returns the HTTP body of _private")
                .named
                .is_empty()
        );
        assert!(
            Query::parse("GetPostFormMap").named.is_empty(),
            "identifier queries"
        );
        let w = Weights::default();
        let named = candidate(
            "ctx.go",
            "GetPostFormMap",
            "Context.GetPostFormMap",
            ChunkKind::Method,
        );
        let caller = candidate(
            "ctx.go",
            "PostFormMap",
            "Context.PostFormMap",
            ChunkKind::Method,
        );
        let merged = Candidate {
            names: "PostFormMap GetPostFormMap",
            ..caller
        };
        let (named, caller, merged) = (
            score(&q, &named, &w),
            score(&q, &caller, &w),
            score(&q, &merged, &w),
        );
        assert!(
            named > caller && merged > caller,
            "{named} {caller} {merged}"
        );
    }

    #[test]
    fn chunks_inherit_a_share_of_their_better_neighbour() {
        // Keys are ordinals of one file; 7 has no scored neighbour.
        let mut scored = vec![(1.0, 1_u64), (4.0, 2), (2.0, 3), (3.0, 7), (0.0, 8)];
        let adjacent = |k: u64| [k.checked_sub(1), Some(k + 1)];
        inherit_from_neighbours(&mut scored, |k| *k, adjacent, 0.5);
        assert_eq!(scored, [(3.0, 1), (5.0, 2), (4.0, 3), (3.0, 7), (0.0, 8)]);
        let before = scored.clone();
        inherit_from_neighbours(&mut scored, |k| *k, adjacent, 0.0);
        assert_eq!(scored, before, "a share of 0 turns the rule off");
    }

    #[test]
    fn test_code_inside_source_files_is_demoted() {
        let w = Weights::default();
        let q = Query::parse("publish state");
        let real = score(
            &q,
            &candidate(
                "src/store.rs",
                "publish",
                "Store::publish",
                ChunkKind::Method,
            ),
            &w,
        );
        let test = score(
            &q,
            &candidate(
                "src/store.rs",
                "publish_works",
                "tests::publish_works",
                ChunkKind::Function,
            ),
            &w,
        );
        assert!(real > test);
        assert!(is_test_scope("TestStore.open") && is_test_scope("StoreTest.open"));
        assert!(is_test_scope("tests::publish_works") && is_test_scope("test_open"));
        assert!(!is_test_scope("Tester.attest") && !is_test_scope("Contest.latest"));
    }

    #[test]
    fn weights_are_set_by_name_and_validated() {
        let mut w = Weights::default();
        for name in Weights::NAMES {
            assert!(w.get(name).is_some(), "{name} has a slot");
        }
        w.set("test", 1.0).unwrap();
        assert_eq!(w.get("test"), Some(1.0));
        assert!(
            w.set("nope", 1.0)
                .unwrap_err()
                .contains("unknown ranking weight")
        );
        assert!(w.set("docs", f32::NAN).is_err() && w.set("docs", -1.0).is_err());
    }

    #[test]
    fn diversify_caps_results_per_file() {
        let ranked = vec![(3.0, "a"), (2.5, "a"), (2.0, "a"), (1.0, "b")];
        let out = diversify(ranked, |p| *p, 2, 0.0, 10);
        assert_eq!(out.iter().map(|x| x.1).collect::<Vec<_>>(), ["a", "a", "b"]);
    }

    #[test]
    fn diversify_lowers_a_files_results_past_the_cap() {
        let ranked = vec![
            (1.5, "b"),
            (2.0, "a"),
            (10.0, "a"),
            (1.75, "a"),
            (-0.5, "a"),
            (9.0, "a"),
        ];
        let out = diversify(ranked, |p| *p, 2, 0.5, 10);
        let got: Vec<_> = out.iter().map(|&(s, p)| (p, s)).collect();
        // The third "a" (2.0) is halved below "b"; the fourth (1.75) quartered; the fifth,
        // below zero, falls further.
        assert_eq!(
            got,
            [
                ("a", 10.0),
                ("a", 9.0),
                ("b", 1.5),
                ("a", 1.0),
                ("a", 0.4375),
                ("a", -0.5 - 0.5 * 0.875)
            ]
        );
        // No cap, and a limit.
        let ranked = vec![(1.0, "a"), (3.0, "a"), (2.0, "a")];
        let out = diversify(ranked, |p| *p, 0, 0.0, 2);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), [3.0, 2.0]);
    }

    fn share(query: &str, text: &str) -> f32 {
        phrase_share(&phrase_words(query), text)
    }

    #[test]
    fn phrase_share_counts_runs_inside_string_literals() {
        let code = r#"Validate.notNull(url, "URL must be specified to connect");"#;
        assert!((share("URL must be specified to connect", code) - 1.0).abs() < 1e-6);
        // The same words in a comment, a document or bare code are not a message.
        let comment = "// URL must be specified to connect\nfn connect() {}";
        assert!(share("URL must be specified to connect", comment).abs() < 1e-6);
        // A message written with values is a few runs of three words or more.
        let printf = r#"throw error("Could not parse query '%s': unexpected token at '%s'", q)"#;
        let pasted = "Could not parse query 'div[': unexpected token at '['";
        assert!((share(pasted, printf) - 7.0 / 8.0).abs() < 1e-6);
        // Words of two literals joined by code continue the run; two words are no run.
        let joined = r#"log("the pool " + name + " has been closed")"#;
        assert!((share("the pool has been closed", joined) - 1.0).abs() < 1e-6);
        assert!(share("has been opened", joined).abs() < 1e-6);
        assert!(share("the pool", joined).abs() < 1e-6); // under PHRASE_RUN words
        // An apostrophe inside a word opens no literal; an escaped quote does not close one.
        let apostrophe = "// isn't a space or tab here\nx = 1";
        assert!(share("a space or tab", apostrophe).abs() < 1e-6);
        let escaped = r#"panic!("say \"hello to the world\" twice")"#;
        assert!((share("hello to the world twice", escaped) - 1.0).abs() < 1e-6);
        // A literal ends at the line's end when its quote is never closed.
        let open = "s = 'one two three\nfour five six'";
        assert!(share("three four five", open).abs() < 1e-6);
        // A docstring is no message: its words count nowhere, the code after it does.
        let docstring = "def f():\n    \"\"\"Prepares the given HTTP body data.\n\n    More.\"\"\"\n    raise E('the given HTTP body')";
        assert!(share("Prepares the given HTTP body data", docstring) < 0.7);
        assert!(share("Prepares the given", docstring).abs() < 1e-6);
        assert!((share("the given HTTP body", docstring) - 1.0).abs() < 1e-6);
        // Case and punctuation do not matter, order does.
        let upper = r#"msg = "CANNOT SET a request body""#;
        assert!((share("cannot set a request body", upper) - 1.0).abs() < 1e-6);
        assert!(share("request body cannot set", upper).abs() < 1e-6);
    }

    #[test]
    fn a_sketch_admits_what_may_match_and_no_chunk_that_cannot() {
        let query = phrase_words("could not parse query unexpected token");
        let writer = r#"throw error("Could not parse query '%s': unexpected token", q)"#;
        let sketch = quoted_sketch(writer);
        assert_ne!(sketch, 0);
        assert!(sketch_admits(&query, sketch, 0.5));
        // Every chunk the rule would raise is admitted.
        assert!(phrase_factor(&query, writer, 1.0, 0.5) > 1.0);
        // Code without literals, or with fewer than three words in them, has no sketch.
        assert_eq!(
            quoted_sketch("fn parse(query: &str) -> Token { next(query) }"),
            0
        );
        assert_eq!(quoted_sketch(r#"log("parse query")"#), 0);
        // A sketch that holds two of the query's words cannot hold a run of three.
        let two = word_bit(query[0]) | word_bit(query[1]);
        assert!(!sketch_admits(&query, two, 0.0));
        // Half of six words is three: a sketch of the first three is enough, not at 0.8
        // (this query's six words have bits of their own; `parse` and `query` share one).
        let query = phrase_words("unable to read the config file");
        let three = word_bit(query[0]) | word_bit(query[1]) | word_bit(query[2]);
        let held = query.iter().filter(|&&w| three & word_bit(w) != 0).count();
        assert_eq!(held, 3);
        assert!(sketch_admits(&query, three, 0.5));
        assert!(!sketch_admits(&query, three, 0.8));
    }

    #[test]
    fn phrase_factor_needs_the_least_share() {
        let query = phrase_words("the pool has been closed already today");
        let code = r#"err("the pool has been closed")"#;
        // 5 of 7 words: raised at a least share of 0.5, not at 0.8.
        let raised = phrase_factor(&query, code, 1.0, 0.5);
        assert!((raised - (1.0 + 5.0 / 7.0)).abs() < 1e-6);
        assert!((phrase_factor(&query, code, 1.0, 0.8) - 1.0).abs() < 1e-6);
        assert!((phrase_factor(&query, code, 0.0, 0.5) - 1.0).abs() < 1e-6);
        assert!((phrase_factor(&phrase_words("pool closed"), code, 1.0, 0.0) - 1.0).abs() < 1e-6);
    }
}

//! Language registry: file detection, tree-sitter grammars and definition queries.
//!
//! Detection is table-driven (`NO_PARSER_FILE_NAMES`, `NO_PARSER_SUFFIXES`, `FILE_NAMES`,
//! `EXTENSIONS` and `SHEBANG_INTERPRETERS` below); every lookup is ASCII case-insensitive. Definition queries live in `queries/<language>/definitions.scm` and follow
//! the tags convention: the whole definition is captured as `@definition.<kind>` and its name as
//! `@name`.

use std::sync::OnceLock;

/// Every language coderecall chunks. Grammar-backed languages come first; the rest are
/// chunked structurally (Markdown by headings) or by line windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Rust,
    Go,
    Java,
    C,
    Cpp,
    CSharp,
    Ruby,
    Php,
    Kotlin,
    Swift,
    Scala,
    Bash,
    Lua,
    Zig,
    Markdown,
    Json,
    Yaml,
    Toml,
    Html,
    Css,
    Sql,
    Text,
}

/// Every variant, in declaration order.
const ALL: [Language; 26] = [
    Language::Python,
    Language::JavaScript,
    Language::TypeScript,
    Language::Tsx,
    Language::Rust,
    Language::Go,
    Language::Java,
    Language::C,
    Language::Cpp,
    Language::CSharp,
    Language::Ruby,
    Language::Php,
    Language::Kotlin,
    Language::Swift,
    Language::Scala,
    Language::Bash,
    Language::Lua,
    Language::Zig,
    Language::Markdown,
    Language::Json,
    Language::Yaml,
    Language::Toml,
    Language::Html,
    Language::Css,
    Language::Sql,
    Language::Text,
];

/// Number of grammar-backed languages: `Python ..= Zig`, the first variants of [`Language`].
const GRAMMAR_COUNT: usize = Language::Zig as usize + 1;

/// A language's definitions query (`queries/<name>/definitions.scm`) followed by its
/// references query, compiled as one ([`Language::syntax_query`]).
pub struct SyntaxQuery {
    pub query: tree_sitter::Query,
    /// Patterns from this index on come from the references query.
    first_reference: usize,
    /// Per pattern, the node kinds a capture must have: `(#kind? @name simple_identifier)`.
    /// tree-sitter analyses every typed child of a pattern against the grammar when the
    /// query is compiled, which for a large node costs far more than checking a wildcard's
    /// kind after it matched (Swift's `function_declaration` with a typed name: 236 ms of
    /// the language's 297, with a checked wildcard 12 ms).
    kinds: Box<[KindChecks]>,
}

/// `(capture, kinds it may have)` for each `#kind?` predicate of one pattern.
type KindChecks = Box<[(u32, Box<[Box<str>]>)]>;

impl SyntaxQuery {
    /// `None` if a pattern has a predicate other than tree-sitter's own and `#kind?`, or a
    /// `#kind?` that does not name one capture and then at least one kind.
    fn new(query: tree_sitter::Query, first_reference: usize) -> Option<Self> {
        let kinds = (0..query.pattern_count())
            .map(|pattern| {
                query
                    .general_predicates(pattern)
                    .iter()
                    .map(|predicate| match (&*predicate.operator, &*predicate.args) {
                        ("kind?", [tree_sitter::QueryPredicateArg::Capture(c), rest @ ..])
                            if !rest.is_empty() =>
                        {
                            rest.iter()
                                .map(|arg| match arg {
                                    tree_sitter::QueryPredicateArg::String(k) => Some(k.clone()),
                                    tree_sitter::QueryPredicateArg::Capture(_) => None,
                                })
                                .collect::<Option<Box<[_]>>>()
                                .map(|kinds| (*c, kinds))
                        }
                        _ => None,
                    })
                    .collect::<Option<KindChecks>>()
            })
            .collect::<Option<Box<[_]>>>()?;
        Some(SyntaxQuery {
            query,
            first_reference,
            kinds,
        })
    }

    /// Whether a match of pattern `pattern` is a reference (else a definition).
    #[must_use]
    pub fn is_reference(&self, pattern: usize) -> bool {
        pattern >= self.first_reference
    }

    /// Whether a match meets its pattern's `#kind?` predicates (tree-sitter checks its own).
    #[must_use]
    pub fn admits(&self, found: &tree_sitter::QueryMatch<'_, '_>) -> bool {
        self.kinds.get(found.pattern_index).is_none_or(|checks| {
            checks.iter().all(|(capture, kinds)| {
                found
                    .captures
                    .iter()
                    .filter(|c| c.index == *capture)
                    .all(|c| kinds.iter().any(|k| &**k == c.node.kind()))
            })
        })
    }
}

/// Alternative spellings accepted by [`Language::from_name`] besides the canonical names.
const ALIASES: &[(&str, Language)] = &[
    ("py", Language::Python),
    ("js", Language::JavaScript),
    ("jsx", Language::JavaScript),
    ("ts", Language::TypeScript),
    ("rs", Language::Rust),
    ("golang", Language::Go),
    ("c++", Language::Cpp),
    ("cxx", Language::Cpp),
    ("c#", Language::CSharp),
    ("cs", Language::CSharp),
    ("rb", Language::Ruby),
    ("kt", Language::Kotlin),
    ("sh", Language::Bash),
    ("shell", Language::Bash),
    ("zsh", Language::Bash),
    ("md", Language::Markdown),
    ("yml", Language::Yaml),
    ("txt", Language::Text),
];

/// Exact file names (case-insensitive) that are text we deliberately do not index.
const NO_PARSER_FILE_NAMES: &[&str] = &[
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "Cargo.lock",
    "poetry.lock",
];

/// File-name suffixes (case-insensitive) that are text we deliberately do not index:
/// generated or minified code, lock files, data tables, notebooks and key material.
const NO_PARSER_SUFFIXES: &[&str] = &[
    ".min.js", ".min.css", ".map", ".svg", ".lock", ".csv", ".tsv", ".ipynb", ".pem", ".key",
    ".crt", ".p12", ".pfx",
];

/// Exact file names (case-insensitive) with a language but no telling extension.
const FILE_NAMES: &[(&str, Language)] = &[
    ("Rakefile", Language::Ruby),
    ("Gemfile", Language::Ruby),
    ("Guardfile", Language::Ruby),
    ("Podfile", Language::Ruby),
    ("Vagrantfile", Language::Ruby),
    ("Brewfile", Language::Ruby),
    (".bashrc", Language::Bash),
    (".bash_profile", Language::Bash),
    (".bash_login", Language::Bash),
    (".bash_logout", Language::Bash),
    (".bash_aliases", Language::Bash),
    (".profile", Language::Bash),
    (".zshrc", Language::Bash),
    (".zshenv", Language::Bash),
    (".zprofile", Language::Bash),
    (".zlogin", Language::Bash),
    (".zlogout", Language::Bash),
];

/// File extensions without the dot (case-insensitive). `.h` is absent on purpose: it is
/// resolved between C and C++ by content, see [`looks_like_cpp`].
const EXTENSIONS: &[(&str, Language)] = &[
    ("py", Language::Python),
    ("pyi", Language::Python),
    ("pyw", Language::Python),
    ("js", Language::JavaScript),
    ("mjs", Language::JavaScript),
    ("cjs", Language::JavaScript),
    ("jsx", Language::JavaScript),
    ("ts", Language::TypeScript), // also `.d.ts`
    ("mts", Language::TypeScript),
    ("cts", Language::TypeScript),
    ("tsx", Language::Tsx),
    ("rs", Language::Rust),
    ("go", Language::Go),
    ("java", Language::Java),
    ("c", Language::C),
    ("cc", Language::Cpp),
    ("cpp", Language::Cpp),
    ("cxx", Language::Cpp),
    ("c++", Language::Cpp),
    ("hpp", Language::Cpp),
    ("hh", Language::Cpp),
    ("hxx", Language::Cpp),
    ("h++", Language::Cpp),
    ("ipp", Language::Cpp),
    ("inl", Language::Cpp),
    ("cs", Language::CSharp),
    ("rb", Language::Ruby),
    ("rake", Language::Ruby),
    ("gemspec", Language::Ruby),
    ("php", Language::Php),
    ("phtml", Language::Php),
    ("kt", Language::Kotlin),
    ("kts", Language::Kotlin),
    ("swift", Language::Swift),
    ("scala", Language::Scala),
    ("sc", Language::Scala),
    ("sh", Language::Bash),
    ("bash", Language::Bash),
    ("zsh", Language::Bash),
    ("lua", Language::Lua),
    ("zig", Language::Zig),
    ("md", Language::Markdown),
    ("markdown", Language::Markdown),
    ("mdx", Language::Markdown),
    ("json", Language::Json),
    ("jsonc", Language::Json),
    ("yaml", Language::Yaml),
    ("yml", Language::Yaml),
    ("toml", Language::Toml),
    ("html", Language::Html),
    ("htm", Language::Html),
    ("css", Language::Css),
    ("scss", Language::Css),
    ("less", Language::Css),
    ("sql", Language::Sql),
];

/// Interpreter names in a `#!` line, after stripping a trailing version (`python3.12` ->
/// `python`).
const SHEBANG_INTERPRETERS: &[(&str, Language)] = &[
    ("python", Language::Python),
    ("pypy", Language::Python),
    ("node", Language::JavaScript),
    ("nodejs", Language::JavaScript),
    ("deno", Language::TypeScript),
    ("ruby", Language::Ruby),
    ("lua", Language::Lua),
    ("luajit", Language::Lua),
    ("php", Language::Php),
    ("sh", Language::Bash),
    ("bash", Language::Bash),
    ("zsh", Language::Bash),
    ("dash", Language::Bash),
    ("ksh", Language::Bash),
    ("ash", Language::Bash),
];

/// Keywords that make a `.h` header C++ rather than C, when they start a word.
const CPP_HEADER_KEYWORDS: &[&[u8]] = &[
    b"class ",
    b"namespace ",
    b"template<",
    b"template <",
    b"public:",
    b"private:",
    b"protected:",
];

/// Scope resolution (`std::string`, `util::Options`) is C++ wherever it appears.
const CPP_SCOPE_OPERATOR: &[u8] = b"::";

impl Language {
    /// Stable lower-case name used in the store, the CLI and the Python API.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Rust => "rust",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Ruby => "ruby",
            Language::Php => "php",
            Language::Kotlin => "kotlin",
            Language::Swift => "swift",
            Language::Scala => "scala",
            Language::Bash => "bash",
            Language::Lua => "lua",
            Language::Zig => "zig",
            Language::Markdown => "markdown",
            Language::Json => "json",
            Language::Yaml => "yaml",
            Language::Toml => "toml",
            Language::Html => "html",
            Language::Css => "css",
            Language::Sql => "sql",
            Language::Text => "text",
        }
    }

    /// Inverse of [`Language::name`], ASCII case-insensitive, also accepting common aliases
    /// (`py`, `js`, `ts`, `rs`, `c++`, `c#`, `cs`, `sh`, `shell`, `kt`, `md`, `yml`, ...).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Language> {
        let name = name.trim();
        ALL.iter()
            .copied()
            .find(|lang| lang.name().eq_ignore_ascii_case(name))
            .or_else(|| lookup(ALIASES, name))
    }

    /// Every language, in declaration order (grammar-backed languages first).
    #[must_use]
    pub fn all() -> &'static [Language] {
        &ALL
    }

    /// Detects the language of a file from its path and its first bytes.
    /// `None` means the file is text we deliberately do not index ("no parser").
    ///
    /// Order: no-parser names and suffixes, well-known file names, the extension (`.h` by
    /// content), then the `#!` line of files whose extension is missing or unknown. Anything
    /// else is [`Language::Text`]. Binary detection is the caller's job.
    #[must_use]
    pub fn detect(path: &str, head: &[u8]) -> Option<Language> {
        let file_name = path.rsplit(['/', '\\']).next().unwrap_or(path);

        if NO_PARSER_FILE_NAMES
            .iter()
            .any(|name| name.eq_ignore_ascii_case(file_name))
            || NO_PARSER_SUFFIXES
                .iter()
                .any(|suffix| ends_with_ignore_ascii_case(file_name, suffix))
        {
            return None;
        }
        if holds_private_key(head) {
            return None;
        }
        if let Some(lang) = lookup(FILE_NAMES, file_name) {
            return Some(lang);
        }
        if let Some(ext) = extension(file_name) {
            if ext.eq_ignore_ascii_case("h") {
                return Some(if looks_like_cpp(head) {
                    Language::Cpp
                } else {
                    Language::C
                });
            }
            if let Some(lang) = lookup(EXTENSIONS, ext) {
                return Some(lang);
            }
        }
        Some(shebang_language(head).unwrap_or(Language::Text))
    }

    /// The tree-sitter grammar, for the grammar-backed languages (`Python ..= Zig`).
    #[must_use]
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        let lang_fn = match self {
            Language::Python => tree_sitter_python::LANGUAGE,
            Language::JavaScript => tree_sitter_javascript::LANGUAGE,
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            Language::Rust => tree_sitter_rust::LANGUAGE,
            Language::Go => tree_sitter_go::LANGUAGE,
            Language::Java => tree_sitter_java::LANGUAGE,
            Language::C => tree_sitter_c::LANGUAGE,
            Language::Cpp => tree_sitter_cpp::LANGUAGE,
            Language::CSharp => tree_sitter_c_sharp::LANGUAGE,
            Language::Ruby => tree_sitter_ruby::LANGUAGE,
            Language::Php => tree_sitter_php::LANGUAGE_PHP,
            Language::Kotlin => tree_sitter_kotlin_ng::LANGUAGE,
            Language::Swift => tree_sitter_swift::LANGUAGE,
            Language::Scala => tree_sitter_scala::LANGUAGE,
            Language::Bash => tree_sitter_bash::LANGUAGE,
            Language::Lua => tree_sitter_lua::LANGUAGE,
            Language::Zig => tree_sitter_zig::LANGUAGE,
            Language::Markdown
            | Language::Json
            | Language::Yaml
            | Language::Toml
            | Language::Html
            | Language::Css
            | Language::Sql
            | Language::Text => return None,
        };
        Some(lang_fn.into())
    }

    /// Source of `queries/<name>/definitions.scm`, embedded at build time. TSX shares the
    /// TypeScript query (the TSX grammar is a superset of TypeScript's); the three share
    /// `queries/ecmascript/constants.scm`.
    #[must_use]
    pub fn definitions_query_source(self) -> Option<&'static str> {
        Some(match self {
            Language::Python => include_str!("../queries/python/definitions.scm"),
            Language::JavaScript => concat!(
                include_str!("../queries/javascript/definitions.scm"),
                include_str!("../queries/ecmascript/constants.scm")
            ),
            Language::TypeScript | Language::Tsx => concat!(
                include_str!("../queries/typescript/definitions.scm"),
                include_str!("../queries/ecmascript/constants.scm")
            ),
            Language::Rust => include_str!("../queries/rust/definitions.scm"),
            Language::Go => include_str!("../queries/go/definitions.scm"),
            Language::Java => include_str!("../queries/java/definitions.scm"),
            Language::C => include_str!("../queries/c/definitions.scm"),
            Language::Cpp => include_str!("../queries/cpp/definitions.scm"),
            Language::CSharp => include_str!("../queries/csharp/definitions.scm"),
            Language::Ruby => include_str!("../queries/ruby/definitions.scm"),
            Language::Php => include_str!("../queries/php/definitions.scm"),
            Language::Kotlin => include_str!("../queries/kotlin/definitions.scm"),
            Language::Swift => include_str!("../queries/swift/definitions.scm"),
            Language::Scala => include_str!("../queries/scala/definitions.scm"),
            Language::Bash => include_str!("../queries/bash/definitions.scm"),
            Language::Lua => include_str!("../queries/lua/definitions.scm"),
            Language::Zig => include_str!("../queries/zig/definitions.scm"),
            Language::Markdown
            | Language::Json
            | Language::Yaml
            | Language::Toml
            | Language::Html
            | Language::Css
            | Language::Sql
            | Language::Text => return None,
        })
    }

    /// Source of `queries/<name>/references.scm` (calls, imports, inheritance; see
    /// [`crate::refs`]), embedded at build time. JavaScript, TypeScript and TSX share
    /// `queries/ecmascript/`.
    #[must_use]
    pub fn references_query_source(self) -> Option<&'static str> {
        Some(match self {
            Language::Python => include_str!("../queries/python/references.scm"),
            // The three share most patterns; JSX only where the grammar has it.
            Language::JavaScript => concat!(
                include_str!("../queries/ecmascript/references.scm"),
                include_str!("../queries/ecmascript/jsx.scm"),
                include_str!("../queries/javascript/references.scm")
            ),
            Language::TypeScript => concat!(
                include_str!("../queries/ecmascript/references.scm"),
                include_str!("../queries/typescript/references.scm")
            ),
            Language::Tsx => concat!(
                include_str!("../queries/ecmascript/references.scm"),
                include_str!("../queries/ecmascript/jsx.scm"),
                include_str!("../queries/typescript/references.scm")
            ),
            Language::Rust => include_str!("../queries/rust/references.scm"),
            Language::Go => include_str!("../queries/go/references.scm"),
            Language::Java => include_str!("../queries/java/references.scm"),
            Language::C => include_str!("../queries/c/references.scm"),
            Language::Cpp => include_str!("../queries/cpp/references.scm"),
            Language::CSharp => include_str!("../queries/csharp/references.scm"),
            Language::Ruby => include_str!("../queries/ruby/references.scm"),
            Language::Php => include_str!("../queries/php/references.scm"),
            Language::Kotlin => include_str!("../queries/kotlin/references.scm"),
            Language::Swift => include_str!("../queries/swift/references.scm"),
            Language::Scala => include_str!("../queries/scala/references.scm"),
            Language::Bash => include_str!("../queries/bash/references.scm"),
            Language::Lua => include_str!("../queries/lua/references.scm"),
            Language::Zig => include_str!("../queries/zig/references.scm"),
            Language::Markdown
            | Language::Json
            | Language::Yaml
            | Language::Toml
            | Language::Html
            | Language::Css
            | Language::Sql
            | Language::Text => return None,
        })
    }

    /// The language's definitions and references queries compiled as one, built once per
    /// process: one pass of a query cursor over a tree finds both, where two passes cost
    /// nearly twice as much (the walk is most of a query's cost).
    ///
    /// A query that does not compile against its grammar yields `None` rather than a panic;
    /// the `lang_queries` integration test compiles every query and reports such failures.
    #[must_use]
    pub fn syntax_query(self) -> Option<&'static SyntaxQuery> {
        static QUERIES: [OnceLock<Option<SyntaxQuery>>; GRAMMAR_COUNT] =
            [const { OnceLock::new() }; GRAMMAR_COUNT];
        QUERIES
            .get(self as usize)?
            .get_or_init(|| {
                let definitions = self.definitions_query_source()?;
                let references = self.references_query_source().unwrap_or_default();
                let query = tree_sitter::Query::new(
                    &self.grammar()?,
                    &format!("{definitions}\n{references}"),
                )
                .ok()?;
                let first_reference = (0..query.pattern_count())
                    .find(|&i| query.start_byte_for_pattern(i) > definitions.len())
                    .unwrap_or(query.pattern_count());
                SyntaxQuery::new(query, first_reference)
            })
            .as_ref()
    }

    /// Whether the language is grammar-backed (`Python ..= Zig`).
    fn has_grammar(self) -> bool {
        (self as usize) < GRAMMAR_COUNT
    }

    /// Separator between segments of a symbol path ("." or "::").
    #[must_use]
    pub fn path_separator(self) -> &'static str {
        match self {
            Language::Rust | Language::Cpp => "::",
            _ => ".",
        }
    }
}

/// The module part of a symbol path, derived from a file path
/// (`pkg/mod/__init__.py` -> `pkg.mod`, `src/store/mod.rs` -> `store`).
///
/// `path` is repo-relative with `/` separators (a leading `./` is ignored). Rules:
/// - **Python**: strip the extension; drop every directory up to the last one whose name
///   cannot be imported (`my-app/`, `flask-3.1.3/`: the package root is below it); then a
///   leading `src/`, `lib/` or `python/` component (the source roots of the src layout and
///   of maturin's mixed Rust/Python layout) and a trailing `__init__`; join with `.`
///   (`src/pkg/io/__init__.py` -> `pkg.io`, `python/pkg/core.py` -> `pkg.core`,
///   `my-app/src/pkg/core.py` -> `pkg.core`).
/// - **Rust**: strip the extension; if a directory named `src` appears, keep only what follows
///   the last one; drop a trailing `mod`, `lib` or `main`; join with `::`
///   (`native/core/src/store/mod.rs` -> `store`, `src/lib.rs` -> ``).
/// - **JavaScript, TypeScript, TSX**: strip the extension (`.d.ts` as a whole) and a trailing
///   `index`; join with `.` (`web/ui/index.tsx` -> `web.ui`).
/// - **Java, Kotlin, Scala**: strip the extension and everything up to and including a
///   `src/<source set>/<java|kotlin|scala>/` prefix; join with `.`
///   (`app/src/main/java/com/acme/Foo.java` -> `com.acme.Foo`).
/// - **Go**: the package is the directory: drop the file name and join the directories with
///   `.` (`pkg/mux/route.go` -> `pkg.mux`).
/// - **Other grammar languages** (C, C++, C#, Ruby, PHP, Swift, Bash, Lua, Zig): strip the
///   extension and join with `.`, C++ included: the module part is a file path, not a
///   namespace (`lib/net/http.rb` -> `lib.net.http`).
/// - **Markdown, JSON, YAML, TOML, HTML, CSS, SQL, Text**: the path unchanged.
#[must_use]
pub fn module_path(path: &str, lang: Language) -> String {
    let path = path.strip_prefix("./").unwrap_or(path);
    if !lang.has_grammar() {
        return path.to_owned();
    }

    let mut parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    if let Some(last) = parts.last_mut() {
        *last = strip_extension(last, lang);
    }
    let dirs = parts.len().saturating_sub(1);

    match lang {
        Language::Python => {
            if let Some(last) = parts[..dirs].iter().rposition(|d| !is_python_identifier(d)) {
                parts.drain(..=last);
            }
            let dirs = parts.len().saturating_sub(1);
            if dirs > 0 && matches!(parts.first(), Some(&("src" | "lib" | "python"))) {
                parts.remove(0);
            }
            if parts.last() == Some(&"__init__") {
                parts.pop();
            }
        }
        Language::Rust => {
            if let Some(src) = parts[..dirs].iter().rposition(|&part| part == "src") {
                parts.drain(..=src);
            }
            if matches!(parts.last(), Some(&("mod" | "lib" | "main"))) {
                parts.pop();
            }
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx
            if parts.last() == Some(&"index") =>
        {
            parts.pop();
        }
        Language::Java | Language::Kotlin | Language::Scala => {
            // `src/<source set>/<java|kotlin|scala>/`, all three being directories.
            let root = (0..dirs.saturating_sub(2)).rev().find(|&i| {
                parts[i] == "src" && matches!(parts[i + 2], "java" | "kotlin" | "scala")
            });
            if let Some(root) = root {
                parts.drain(..=root + 2);
            }
        }
        Language::Go => {
            parts.pop();
        }
        _ => {}
    }
    let separator = if lang == Language::Rust { "::" } else { "." };
    parts.join(separator)
}

/// Whether `name` can be a package in a Python import (`my_app`, not `my-app` or `3rdparty`).
fn is_python_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_alphanumeric())
}

/// The value for `key` (ASCII case-insensitive) in a `(key, language)` table.
fn lookup(table: &[(&str, Language)], key: &str) -> Option<Language> {
    table
        .iter()
        .find(|(candidate, _)| candidate.eq_ignore_ascii_case(key))
        .map(|&(_, lang)| lang)
}

fn ends_with_ignore_ascii_case(text: &str, suffix: &str) -> bool {
    text.len() >= suffix.len()
        && text.as_bytes()[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

/// The extension of a file name without the dot; dot-files such as `.bashrc` have none.
fn extension(file_name: &str) -> Option<&str> {
    match file_name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => Some(ext),
        _ => None,
    }
}

/// The last path component without its extension (`.d.ts` counts as one extension).
fn strip_extension(file_name: &str, lang: Language) -> &str {
    let Some(ext) = extension(file_name) else {
        return file_name;
    };
    let stem = &file_name[..file_name.len() - ext.len() - 1];
    if matches!(lang, Language::TypeScript | Language::Tsx)
        && let Some(declaration_stem) = stem.strip_suffix(".d")
        && !declaration_stem.is_empty()
    {
        return declaration_stem;
    }
    stem
}

/// The language named by a `#!` line: `#!/bin/bash`, `#!/usr/bin/env python3`,
/// `#!/usr/bin/env -S node --flag`.
fn shebang_language(head: &[u8]) -> Option<Language> {
    let rest = head.strip_prefix(b"#!")?;
    let line = rest.split(|&byte| byte == b'\n').next().unwrap_or(rest);
    let line = std::str::from_utf8(line).ok()?;

    let mut words = line.split_whitespace();
    let mut program = words.next()?.rsplit('/').next()?;
    if program == "env" {
        // Skip `env` options (`-S`) and variable assignments (`FOO=1`).
        program = words.find(|word| !word.starts_with('-') && !word.contains('='))?;
    }
    let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    lookup(SHEBANG_INTERPRETERS, program)
}

/// Whether a file opens with private key material (`id_rsa`, `id_ed25519`, a PEM, PGP or
/// PuTTY key under any name): never text to index, show or send to an embedding provider.
fn holds_private_key(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    let first = start.map_or(&[][..], |start| &head[start..]);
    let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
    (line.starts_with(b"-----BEGIN ") && line.windows(11).any(|w| w == b"PRIVATE KEY"))
        || line.starts_with(b"PuTTY-User-Key-File-")
}

/// Whether the first bytes of a `.h` header look like C++ rather than C.
fn looks_like_cpp(head: &[u8]) -> bool {
    CPP_HEADER_KEYWORDS
        .iter()
        .any(|keyword| contains_at_word_start(head, keyword))
        || head
            .windows(CPP_SCOPE_OPERATOR.len())
            .any(|window| window == CPP_SCOPE_OPERATOR)
        || head.split(|&byte| byte == b'\n').any(includes_cpp_header)
}

/// Whether `needle` occurs in `haystack` not preceded by an identifier character.
fn contains_at_word_start(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .enumerate()
        .any(|(start, window)| {
            window == needle
                && (start == 0 || {
                    let before = haystack[start - 1];
                    !(before.is_ascii_alphanumeric() || before == b'_')
                })
        })
}

/// `#include <iostream>`: a system header without an extension is a C++ standard header.
fn includes_cpp_header(line: &[u8]) -> bool {
    let line = line.trim_ascii_start();
    let Some(rest) = line.strip_prefix(b"#") else {
        return false;
    };
    let Some(rest) = rest.trim_ascii_start().strip_prefix(b"include") else {
        return false;
    };
    let Some(rest) = rest.trim_ascii_start().strip_prefix(b"<") else {
        return false;
    };
    let Some(end) = rest.iter().position(|&byte| byte == b'>') else {
        return false;
    };
    let header = &rest[..end];
    !header.is_empty() && !header.contains(&b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_predicates_filter_matches_and_unknown_predicates_are_refused() {
        let grammar = Language::Python.grammar().expect("grammar");
        let compile = |source: &str| {
            SyntaxQuery::new(tree_sitter::Query::new(&grammar, source).expect("query"), 1)
        };
        // A call's function is an identifier or an attribute: keep only the first.
        let query = compile(r#"(call function: _ @f (#kind? @f "identifier"))"#).expect("valid");
        let source = "print(1)\nos.path.join(a)\n";
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&grammar).expect("grammar");
        let tree = parser.parse(source, None).expect("parse");
        let mut cursor = tree_sitter::QueryCursor::new();
        let mut matches = cursor.matches(&query.query, tree.root_node(), source.as_bytes());
        let mut kept = Vec::new();
        while let Some(m) = tree_sitter::StreamingIterator::next(&mut matches) {
            if query.admits(m) {
                kept.push(
                    m.captures[0]
                        .node
                        .utf8_text(source.as_bytes())
                        .unwrap_or_default(),
                );
            }
        }
        assert_eq!(kept, ["print"]);
        // A typo must not silently match everything.
        assert!(compile("((identifier) @x (#knid? @x \"identifier\"))").is_none());
        assert!(compile("((identifier) @x (#kind? @x))").is_none());
        assert!(compile("((identifier) @x (#kind? \"identifier\" @x))").is_none());
    }

    #[test]
    fn private_keys_are_not_text_under_any_name() {
        for head in [
            &b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n"[..],
            b"\xEF\xBB\xBF\n  -----BEGIN RSA PRIVATE KEY-----\nMIIE\n",
            b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
            b"PuTTY-User-Key-File-3: ssh-ed25519\n",
        ] {
            for name in ["id_ed25519", "deploy", "notes.txt", "key.py"] {
                assert_eq!(Language::detect(name, head), None, "{name}");
            }
        }
        // A public key, a certificate, or code that names the marker are text.
        for head in [
            &b"ssh-ed25519 AAAAC3Nza user@host\n"[..],
            b"-----BEGIN CERTIFICATE-----\n",
            b"MARKER = '-----BEGIN RSA PRIVATE KEY-----'\n",
        ] {
            assert!(Language::detect("file.txt", head).is_some());
        }
    }

    #[test]
    fn names_round_trip() {
        for &lang in Language::all() {
            assert_eq!(Language::from_name(lang.name()), Some(lang), "{lang:?}");
        }
        assert_eq!(Language::all().len(), ALL.len());
        assert_eq!(Language::all().last(), Some(&Language::Text));
    }

    #[test]
    fn from_name_accepts_aliases_and_any_case() {
        let cases = [
            ("py", Language::Python),
            ("js", Language::JavaScript),
            ("ts", Language::TypeScript),
            ("rs", Language::Rust),
            ("c++", Language::Cpp),
            ("c#", Language::CSharp),
            ("cs", Language::CSharp),
            ("sh", Language::Bash),
            ("shell", Language::Bash),
            ("kt", Language::Kotlin),
            ("md", Language::Markdown),
            ("yml", Language::Yaml),
            ("Python", Language::Python),
            ("TSX", Language::Tsx),
            (" go ", Language::Go),
        ];
        for (name, lang) in cases {
            assert_eq!(Language::from_name(name), Some(lang), "{name}");
        }
        assert_eq!(Language::from_name("cobol"), None);
        assert_eq!(Language::from_name(""), None);
    }

    #[test]
    fn grammar_only_for_grammar_languages() {
        for &lang in Language::all() {
            let has_grammar = (lang as usize) < GRAMMAR_COUNT;
            assert_eq!(lang.grammar().is_some(), has_grammar, "{lang:?}");
            assert_eq!(
                lang.definitions_query_source().is_some(),
                has_grammar,
                "{lang:?}"
            );
        }
    }

    #[test]
    fn syntax_query_is_cached_and_split_between_the_two_queries() {
        let first = Language::Python.syntax_query().expect("python query");
        let second = Language::Python.syntax_query().expect("python query");
        assert!(std::ptr::eq(first, second));
        let patterns = first.query.pattern_count();
        let definitions = (0..patterns).filter(|&i| !first.is_reference(i)).count();
        let alone = |source| {
            tree_sitter::Query::new(&Language::Python.grammar().expect("grammar"), source)
                .expect("compiles")
                .pattern_count()
        };
        let source = Language::Python.definitions_query_source().expect("source");
        assert_eq!(definitions, alone(source));
        let source = Language::Python.references_query_source().expect("source");
        assert_eq!(patterns - definitions, alone(source));
        assert!(Language::Markdown.syntax_query().is_none());
    }

    #[test]
    fn path_separators() {
        assert_eq!(Language::Rust.path_separator(), "::");
        assert_eq!(Language::Cpp.path_separator(), "::");
        assert_eq!(Language::Python.path_separator(), ".");
        assert_eq!(Language::Php.path_separator(), ".");
        assert_eq!(Language::Text.path_separator(), ".");
    }

    #[test]
    fn module_path_python() {
        let py = Language::Python;
        assert_eq!(module_path("pkg/mod/__init__.py", py), "pkg.mod");
        assert_eq!(module_path("pkg/mod/util.py", py), "pkg.mod.util");
        assert_eq!(module_path("src/pkg/io.py", py), "pkg.io");
        assert_eq!(module_path("lib/pkg/__init__.py", py), "pkg");
        assert_eq!(module_path("__init__.py", py), "");
        assert_eq!(module_path("setup.py", py), "setup");
        // Only a leading directory is stripped, and a module named `lib` is kept.
        assert_eq!(module_path("app/src/x.pyi", py), "app.src.x");
        assert_eq!(module_path("lib.py", py), "lib");
        assert_eq!(module_path("./tools/run.py", py), "tools.run");
        // A directory Python cannot import holds the package root: a project unpacked in a
        // versioned folder, a service of a monorepo.
        for (path, module) in [
            ("flask-3.1.3/src/flask/app.py", "flask.app"),
            (
                "flask-3.1.3/examples/tutorial/flaskr/auth.py",
                "examples.tutorial.flaskr.auth",
            ),
            ("services/web-api/app/models.py", "app.models"),
            ("3rdparty/six.py", "six"),
            ("tools/build-docs.py", "tools.build-docs"),
            ("café/menu.py", "café.menu"),
        ] {
            assert_eq!(module_path(path, py), module, "{path}");
        }
    }

    #[test]
    fn module_path_python_strips_the_maturin_source_root() {
        let py = Language::Python;
        // maturin's mixed layout: `python/<package>/...` next to the Rust crate.
        assert_eq!(
            module_path("python/coderecall/__init__.py", py),
            "coderecall"
        );
        assert_eq!(
            module_path("python/coderecall/cli.py", py),
            "coderecall.cli"
        );
        assert_eq!(module_path("./python/pkg/sub/mod.pyi", py), "pkg.sub.mod");
        // Only a leading directory is a source root; a module named `python` is kept.
        assert_eq!(module_path("python.py", py), "python");
        assert_eq!(module_path("tools/python/run.py", py), "tools.python.run");
        // Other languages keep `python/`.
        assert_eq!(module_path("python/run.sh", Language::Bash), "python.run");
    }

    #[test]
    fn module_path_rust() {
        let rs = Language::Rust;
        assert_eq!(module_path("src/store/mod.rs", rs), "store");
        assert_eq!(module_path("src/lib.rs", rs), "");
        assert_eq!(module_path("src/main.rs", rs), "");
        assert_eq!(module_path("src/store/sqlite.rs", rs), "store::sqlite");
        assert_eq!(module_path("native/core/src/chunk.rs", rs), "chunk");
        assert_eq!(module_path("native/core/src/lib.rs", rs), "");
        assert_eq!(module_path("src/bin/tool.rs", rs), "bin::tool");
        assert_eq!(
            module_path("tests/lang_queries.rs", rs),
            "tests::lang_queries"
        );
        assert_eq!(module_path("build.rs", rs), "build");
    }

    #[test]
    fn module_path_javascript_and_typescript() {
        assert_eq!(module_path("web/ui/index.tsx", Language::Tsx), "web.ui");
        assert_eq!(
            module_path("web/ui/button.jsx", Language::JavaScript),
            "web.ui.button"
        );
        assert_eq!(module_path("index.js", Language::JavaScript), "");
        assert_eq!(
            module_path("types/api.d.ts", Language::TypeScript),
            "types.api"
        );
        assert_eq!(
            module_path("src/server/routes.mts", Language::TypeScript),
            "src.server.routes"
        );
    }

    #[test]
    fn module_path_jvm() {
        assert_eq!(
            module_path("app/src/main/java/com/acme/Foo.java", Language::Java),
            "com.acme.Foo"
        );
        assert_eq!(
            module_path("src/test/java/com/acme/FooTest.java", Language::Java),
            "com.acme.FooTest"
        );
        assert_eq!(
            module_path("src/main/kotlin/io/ktor/App.kt", Language::Kotlin),
            "io.ktor.App"
        );
        assert_eq!(
            module_path("shared/src/commonMain/kotlin/a/B.kt", Language::Kotlin),
            "a.B"
        );
        assert_eq!(
            module_path("core/src/main/scala/cats/Monad.scala", Language::Scala),
            "cats.Monad"
        );
        assert_eq!(
            module_path("scripts/Build.java", Language::Java),
            "scripts.Build"
        );
        // A file named like a source root is not a source root.
        assert_eq!(
            module_path("src/main/java.java", Language::Java),
            "src.main.java"
        );
    }

    #[test]
    fn module_path_go() {
        assert_eq!(module_path("pkg/mux/route.go", Language::Go), "pkg.mux");
        assert_eq!(module_path("main.go", Language::Go), "");
        assert_eq!(
            module_path("cmd/server/main.go", Language::Go),
            "cmd.server"
        );
    }

    #[test]
    fn module_path_other_grammar_languages() {
        assert_eq!(
            module_path("lib/net/http.rb", Language::Ruby),
            "lib.net.http"
        );
        assert_eq!(
            module_path("src/util/strings.c", Language::C),
            "src.util.strings"
        );
        assert_eq!(
            module_path("src/util/strings.hpp", Language::Cpp),
            "src.util.strings"
        );
        assert_eq!(
            module_path("scripts/deploy.sh", Language::Bash),
            "scripts.deploy"
        );
        assert_eq!(module_path("bin/deploy", Language::Bash), "bin.deploy");
        assert_eq!(module_path("Rakefile", Language::Ruby), "Rakefile");
    }

    #[test]
    fn module_path_non_grammar_languages_keep_the_path() {
        assert_eq!(
            module_path("docs/guide.md", Language::Markdown),
            "docs/guide.md"
        );
        assert_eq!(
            module_path("config/app.yaml", Language::Yaml),
            "config/app.yaml"
        );
        assert_eq!(module_path("Makefile", Language::Text), "Makefile");
    }

    #[test]
    fn shebang_parsing() {
        assert_eq!(
            shebang_language(b"#!/usr/bin/env python3\nprint(1)\n"),
            Some(Language::Python)
        );
        assert_eq!(
            shebang_language(b"#!/usr/bin/python3.12 -u\n"),
            Some(Language::Python)
        );
        assert_eq!(
            shebang_language(b"#!/usr/bin/env -S node --no-warnings\n"),
            Some(Language::JavaScript)
        );
        assert_eq!(shebang_language(b"#! /bin/sh\n"), Some(Language::Bash));
        assert_eq!(shebang_language(b"#!/usr/bin/env perl\n"), None);
        assert_eq!(shebang_language(b"#!\n"), None);
        assert_eq!(shebang_language(b"# not a shebang\n"), None);
        assert_eq!(shebang_language(b"#!/bin/\xff\xfe\n"), None);
    }

    #[test]
    fn cpp_header_markers() {
        assert!(looks_like_cpp(b"#pragma once\nclass Foo {};\n"));
        assert!(looks_like_cpp(b"#include <vector>\nint f();\n"));
        assert!(looks_like_cpp(b"  #  include <string>\n"));
        assert!(!looks_like_cpp(b"#include <stdio.h>\nint f(void);\n"));
        // `subclass ` is not the `class` keyword.
        assert!(!looks_like_cpp(b"int subclass (void);\n"));
    }
}

//! The chunker against realistic fixtures: one per grammar language
//! (`tests/fixtures/lang/<language>/`), plus Markdown and JSON (`tests/fixtures/chunk/`), and
//! generated sources for splitting and merging.
//!
//! Every language runs the same general checks (see [`general_checks`]): chunks are in order
//! and only overlap as windows of one unit, every non-blank line is in a chunk, chunks nest with
//! definitions, `names` lists the definitions a chunk contains, a chunk holding a whole
//! container is named after it, and no chunk is only a brace or a bare header. On top of that, each
//! language has a hand-written table: every symbol with its path and lines, every method with
//! the header line its chunk must carry as context, and a few chunks with exact boundaries.
//!
//! Failures are collected per language and reported together with a dump of the chunks.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use coderecall_core::chunk::{
    Chunk, ChunkKind as K, FileChunks, MAX_TOKENS, MergeSizes, Symbol, TARGET_TOKENS,
    approx_tokens, chunk_file, chunk_file_with,
};
use coderecall_core::hash::content_hash;
use coderecall_core::lang::Language;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// Slack over a token budget for a window: the window grows line by line, and a tiny closing
/// line may merge into it.
const SLACK: usize = 16;

/// The 18 grammar fixtures, by language.
const LANG_FIXTURES: &[(Language, &str)] = &[
    (Language::Python, "sample.py"),
    (Language::JavaScript, "sample.js"),
    (Language::TypeScript, "sample.ts"),
    (Language::Tsx, "sample.tsx"),
    (Language::Rust, "sample.rs"),
    (Language::Go, "sample.go"),
    (Language::Java, "Sample.java"),
    (Language::C, "sample.c"),
    (Language::Cpp, "sample.cpp"),
    (Language::CSharp, "Sample.cs"),
    (Language::Ruby, "sample.rb"),
    (Language::Php, "sample.php"),
    (Language::Kotlin, "Sample.kt"),
    (Language::Swift, "sample.swift"),
    (Language::Scala, "Sample.scala"),
    (Language::Bash, "sample.sh"),
    (Language::Lua, "sample.lua"),
    (Language::Zig, "sample.zig"),
];

fn read_fixture(parts: &[&str]) -> String {
    let mut path = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    path.push("tests");
    path.push("fixtures");
    path.extend(parts);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()))
}

fn lang_fixture(lang: Language) -> String {
    let file = LANG_FIXTURES
        .iter()
        .find(|(l, _)| *l == lang)
        .map(|(_, file)| *file)
        .unwrap_or_else(|| panic!("no fixture for {}", lang.name()));
    read_fixture(&["lang", lang.name(), file])
}

/// Containers: a function directly inside one is a method, and their headers are context.
fn is_container(kind: K) -> bool {
    matches!(
        kind,
        K::Class | K::Interface | K::Struct | K::Enum | K::Trait | K::Impl | K::Module
    )
}

fn contains_line(chunk: &Chunk, line: u32) -> bool {
    chunk.start_line <= line && line <= chunk.end_line
}

/// Whether `name` is one of the space-separated entries of `names`, alone or at the end of
/// its path inside a unit (`Block.expr`, `usage::SEEN`). Names may contain spaces, like Zig
/// test names, so this matches a run of whole words.
fn lists_name(names: &str, name: &str) -> bool {
    let padded = format!(" {names} ");
    [" ", ".", "::"]
        .iter()
        .any(|before| padded.contains(&format!("{before}{name} ")))
}

/// The unit a name of a chunk's `names` lists: its last segment (`expr` of `Block.expr`).
fn unit_of(name: &str) -> &str {
    name.rsplit(['.', ':']).next().unwrap_or(name)
}

/// One-line description of a chunk for failure messages.
fn describe(c: &Chunk) -> String {
    format!(
        "{}-{} {} {:?} names=[{}] ctx={:?}",
        c.start_line,
        c.end_line,
        c.kind.name(),
        c.local_path,
        c.names,
        c.context
    )
}

/// Failures of one file, reported together.
struct Report {
    what: String,
    failures: Vec<String>,
}

impl Report {
    fn new(what: impl Into<String>) -> Self {
        Report {
            what: what.into(),
            failures: Vec::new(),
        }
    }

    fn check(&mut self, ok: bool, message: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(message());
        }
    }

    fn extend(&mut self, failures: Vec<String>) {
        self.failures.extend(failures);
    }

    /// Panics with every failure and a dump of the chunks.
    fn finish(self, out: &FileChunks) {
        if let Some(message) = self.outcome(out) {
            panic!("{message}");
        }
    }

    /// The failure message, if anything failed.
    fn outcome(self, out: &FileChunks) -> Option<String> {
        if self.failures.is_empty() {
            return None;
        }
        let mut message = format!("{}: {} problem(s)\n", self.what, self.failures.len());
        for failure in &self.failures {
            let _ = writeln!(message, "  - {failure}");
        }
        message.push_str("chunks:\n");
        for c in &out.chunks {
            let _ = writeln!(message, "  {}", describe(c));
        }
        message.push_str("symbols:\n");
        for s in &out.symbols {
            let _ = writeln!(
                message,
                "  {}-{} {} {:?}",
                s.start_line,
                s.end_line,
                s.kind.name(),
                s.local_path
            );
        }
        Some(message)
    }
}

/// Panics with the messages of every failed case, so one failing case does not hide others.
fn assert_all_passed(messages: Vec<String>) {
    assert!(messages.is_empty(), "{}", messages.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// General checks, for every file
// ---------------------------------------------------------------------------------------------

/// Every non-blank line inside a definition lies in some chunk.
fn covers_all_definition_lines(source: &str, out: &FileChunks) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut failures = Vec::new();
    for s in &out.symbols {
        for line in s.start_line..=s.end_line {
            let blank = lines
                .get(line as usize - 1)
                .is_none_or(|text| text.trim().is_empty());
            if !blank && !out.chunks.iter().any(|c| contains_line(c, line)) {
                failures.push(format!(
                    "line {line} of `{}` is in no chunk: {:?}",
                    s.local_path,
                    lines[line as usize - 1]
                ));
            }
        }
    }
    failures
}

/// Every non-blank line of the file (glue included) lies in some chunk.
fn covers_every_line(source: &str, out: &FileChunks) -> Vec<String> {
    source
        .lines()
        .enumerate()
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(row, text)| (row as u32 + 1, text))
        .filter(|(line, _)| !out.chunks.iter().any(|c| contains_line(c, *line)))
        .map(|(line, text)| format!("line {line} is in no chunk: {text:?}"))
        .collect()
}

/// Chunks advance through the file; consecutive chunks overlap only as windows of one unit.
fn ordered_without_overlap(out: &FileChunks) -> Vec<String> {
    let mut failures = Vec::new();
    for c in &out.chunks {
        if c.start_line > c.end_line {
            failures.push(format!("chunk with an empty range: {}", describe(c)));
        }
    }
    for pair in out.chunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.start_line <= a.start_line {
            failures.push(format!(
                "chunks out of order: {} then {}",
                describe(a),
                describe(b)
            ));
        } else if b.start_line <= a.end_line
            && (a.local_path != b.local_path || a.kind != b.kind || a.context != b.context)
        {
            failures.push(format!(
                "chunks overlap without being windows of one unit: {} and {}",
                describe(a),
                describe(b)
            ));
        }
    }
    failures
}

/// A chunk's content is exactly its lines of the file, and its hash is the hash of that content.
fn content_is_the_line_range(source: &str, out: &FileChunks) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut failures = Vec::new();
    for c in &out.chunks {
        let expected = lines
            .get(c.start_line as usize - 1..c.end_line as usize)
            .map(|range| range.join("\n"));
        if expected.as_deref() != Some(c.content.as_str()) {
            let last = lines
                .get(c.end_line as usize - 1)
                .copied()
                .unwrap_or_default();
            failures.push(format!(
                "content ({} lines) is not lines {}-{} (last line {last:?})",
                c.content.lines().count(),
                c.start_line,
                c.end_line
            ));
        }
        if c.content_hash != content_hash(c.content.as_bytes()) {
            failures.push(format!(
                "content_hash of {} is not the content's hash",
                describe(c)
            ));
        }
    }
    failures
}

/// The lines of a chunk without its leading and trailing blank and delimiter-only lines: the
/// closing brace of a container may join the last window of its last member.
fn core_range(c: &Chunk) -> (u32, u32) {
    let rows: Vec<u32> = c
        .content
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !is_delimiter_line(l))
        .map(|(row, _)| c.start_line + row as u32)
        .collect();
    match (rows.first(), rows.last()) {
        (Some(&first), Some(&last)) => (first, last),
        _ => (c.start_line, c.end_line),
    }
}

/// Chunks follow semantic units: a chunk lies inside a definition, contains it whole, or is
/// disjoint from it. A chunk holding part of a definition may only add, outside it, blank and
/// closing lines (a container's closing brace joining the last window of its last member) and
/// the header of a container around it (a bare `impl Store {` joining the first window).
fn chunks_nest_with_definitions(out: &FileChunks) -> Vec<String> {
    let mut failures = Vec::new();
    for c in &out.chunks {
        for s in &out.symbols {
            let disjoint = c.end_line < s.start_line || s.end_line < c.start_line;
            let whole = c.start_line <= s.start_line && s.end_line <= c.end_line;
            if disjoint || whole {
                continue;
            }
            let allowed = |line: u32, text: &str| {
                text.trim().is_empty()
                    || is_delimiter_line(text)
                    || (line < s.start_line
                        && out.symbols.iter().any(|e| {
                            is_container(e.kind)
                                && e.start_line <= line
                                && e.start_line <= s.start_line
                                && s.end_line <= e.end_line
                                && contains_line(c, e.start_line)
                        }))
            };
            let stray = c.content.lines().zip(c.start_line..).find(|&(text, line)| {
                (line < s.start_line || line > s.end_line) && !allowed(line, text)
            });
            if let Some((text, line)) = stray {
                failures.push(format!(
                    "chunk {} holds part of `{}` ({}-{}) and line {line} outside it: {text:?}",
                    describe(c),
                    s.local_path,
                    s.start_line,
                    s.end_line
                ));
            }
        }
    }
    failures
}

/// `names` lists every definition that starts inside the chunk, and nothing but definitions
/// that start inside it or enclose it.
fn names_list_contained_definitions(out: &FileChunks) -> Vec<String> {
    let mut failures = Vec::new();
    for c in &out.chunks {
        for s in &out.symbols {
            if contains_line(c, s.start_line) && !lists_name(&c.names, &s.name) {
                failures.push(format!(
                    "chunk {} does not list `{}` (starts at line {})",
                    describe(c),
                    s.local_path,
                    s.start_line
                ));
            }
        }
        let (start, end) = core_range(c);
        let known = |name: &str| {
            out.symbols.iter().any(|s| {
                s.name
                    .split(' ')
                    .any(|word| word == name || word == unit_of(name))
                    && (contains_line(c, s.start_line)
                        || (s.start_line <= start && end <= s.end_line))
            })
        };
        for name in c.names.split(' ').filter(|n| !n.is_empty()) {
            if !known(name) {
                failures.push(format!(
                    "chunk {} lists `{name}`, which neither starts in it nor encloses it",
                    describe(c)
                ));
            }
        }
    }
    failures
}

/// A container merged back whole into one chunk names it: when a chunk holds a whole container
/// and nothing outside it but closing lines, the chunk is the container, not one of its members.
fn whole_containers_name_their_chunk(out: &FileChunks) -> Vec<String> {
    let mut failures = Vec::new();
    for c in &out.chunks {
        let starting: Vec<&Symbol> = out
            .symbols
            .iter()
            .filter(|s| contains_line(c, s.start_line))
            .collect();
        let Some(outer) = starting
            .iter()
            .min_by_key(|s| (s.start_line, u32::MAX - s.end_line))
        else {
            continue;
        };
        let encloses_all = starting
            .iter()
            .all(|s| outer.start_line <= s.start_line && s.end_line <= outer.end_line);
        let (_, end) = core_range(c);
        let whole = outer.end_line <= c.end_line && end <= outer.end_line;
        if starting.len() >= 2
            && is_container(outer.kind)
            && encloses_all
            && whole
            && (c.local_path != outer.local_path || c.kind != outer.kind)
        {
            failures.push(format!(
                "chunk {} holds the whole {} `{}`, but is named after a member",
                describe(c),
                outer.kind.name(),
                outer.local_path
            ));
        }
    }
    failures
}

/// A line that only closes or opens a block (`}`, `end`, `};`, ...), trailing comment aside.
fn is_delimiter_line(line: &str) -> bool {
    let line = line.split("//").next().unwrap_or(line).trim();
    matches!(
        line,
        "{" | "}" | "};" | "})" | "});" | ")" | ");" | "]" | "];" | "end" | "fi" | "done" | "esac"
    )
}

/// No chunk is junk: only closing braces, or only the header line of a container whose body
/// is chunked elsewhere ("a lone closing brace or import line is not worth a hit").
fn no_lone_delimiters_or_headers(out: &FileChunks) -> Vec<String> {
    let mut failures = Vec::new();
    for c in &out.chunks {
        let substantive: Vec<&str> = c
            .content
            .lines()
            .filter(|l| !l.trim().is_empty() && !is_delimiter_line(l))
            .collect();
        if substantive.is_empty() {
            failures.push(format!(
                "chunk {} is only closing/opening lines",
                describe(c)
            ));
            continue;
        }
        let head_of_split_container = out.symbols.iter().any(|s| {
            is_container(s.kind)
                && s.local_path == c.local_path
                && contains_line(c, s.start_line)
                && s.end_line > c.end_line
        });
        let others_start_here = out
            .symbols
            .iter()
            .filter(|s| contains_line(c, s.start_line))
            .count()
            > 1;
        if head_of_split_container && !others_start_here && substantive.len() == 1 {
            failures.push(format!(
                "chunk {} is only the header of a container whose body is elsewhere",
                describe(c)
            ));
        }
    }
    failures
}

/// The checks every chunked file must pass.
fn general_checks(source: &str, out: &FileChunks, report: &mut Report) {
    report.extend(ordered_without_overlap(out));
    report.extend(content_is_the_line_range(source, out));
    report.extend(covers_all_definition_lines(source, out));
    report.extend(covers_every_line(source, out));
    report.extend(chunks_nest_with_definitions(out));
    report.extend(names_list_contained_definitions(out));
    report.extend(whole_containers_name_their_chunk(out));
    report.extend(no_lone_delimiters_or_headers(out));
}

// ---------------------------------------------------------------------------------------------
// Per-language expectations
// ---------------------------------------------------------------------------------------------

/// `(kind, local_path, start_line, end_line)` of a symbol; the start includes attached doc
/// comments, decorators and annotations.
type Sym = (K, &'static str, u32, u32);

/// A chunk expected to start at `start`.
struct Unit {
    start: u32,
    /// `None` when the end is not pinned.
    end: Option<u32>,
    /// `None` for merged runs of peers, where either name is fine.
    label: Option<(K, &'static str)>,
    /// Names the chunk must list (others may follow, see the general checks).
    names: &'static [&'static str],
    /// A line the context must contain.
    context: Option<&'static str>,
}

/// A chunk of lines `start..=end` named `path`.
fn unit(start: u32, end: u32, kind: K, path: &'static str) -> Unit {
    Unit {
        start,
        end: Some(end),
        label: Some((kind, path)),
        names: &[],
        context: None,
    }
}

/// A merged run of peers on lines `start..=end`, named after any of them.
fn merged(start: u32, end: u32, names: &'static [&'static str]) -> Unit {
    Unit {
        start,
        end: Some(end),
        label: None,
        names,
        context: None,
    }
}

impl Unit {
    fn names(mut self, names: &'static [&'static str]) -> Self {
        self.names = names;
        self
    }

    fn context(mut self, line: &'static str) -> Self {
        self.context = Some(line);
        self
    }

    fn open_end(mut self) -> Self {
        self.end = None;
        self
    }
}

/// Expectations for one fixture.
struct Spec {
    lang: Language,
    /// Every definition, in any order.
    symbols: &'static [Sym],
    /// Every method, with the header line of its container (`""` when the method is declared
    /// outside its type, as with Go receivers or top-level Ruby methods).
    methods: &'static [(&'static str, &'static str)],
    /// Chunks with exact boundaries.
    units: Vec<Unit>,
    /// Pairs of lines that must share a chunk.
    together: &'static [(u32, u32)],
}

fn check_symbols(spec: &Spec, out: &FileChunks, report: &mut Report) {
    let found: BTreeSet<(u32, u32, String, &str)> = out
        .symbols
        .iter()
        .map(|s| {
            (
                s.start_line,
                s.end_line,
                s.local_path.clone(),
                s.kind.name(),
            )
        })
        .collect();
    let expected: BTreeSet<(u32, u32, String, &str)> = spec
        .symbols
        .iter()
        .map(|&(kind, path, start, end)| (start, end, path.to_owned(), kind.name()))
        .collect();
    for missing in expected.difference(&found) {
        report.failures.push(format!(
            "missing symbol {} `{}` at {}-{}",
            missing.3, missing.2, missing.0, missing.1
        ));
    }
    for unexpected in found.difference(&expected) {
        report.failures.push(format!(
            "unexpected symbol {} `{}` at {}-{}",
            unexpected.3, unexpected.2, unexpected.0, unexpected.1
        ));
    }
    report.check(out.symbols.len() == spec.symbols.len(), || {
        format!(
            "{} symbols, expected {}",
            out.symbols.len(),
            spec.symbols.len()
        )
    });
}

/// Each method gets a chunk named `Class.method` with the class header as context, unless it
/// is merged with tiny neighbours into a chunk that lists it and stays small.
fn check_methods(spec: &Spec, out: &FileChunks, report: &mut Report) {
    for s in out.symbols.iter().filter(|s| s.kind == K::Method) {
        report.check(
            spec.methods.iter().any(|(path, _)| *path == s.local_path),
            || {
                format!(
                    "method `{}` is missing from the methods table",
                    s.local_path
                )
            },
        );
    }
    for &(path, header) in spec.methods {
        let symbols: Vec<&Symbol> = out
            .symbols
            .iter()
            .filter(|s| s.local_path == path)
            .collect();
        if symbols.is_empty() {
            report
                .failures
                .push(format!("no symbol for method `{path}`"));
        }
        for s in symbols {
            report.check(s.kind == K::Method, || {
                format!("`{path}` is a {}, not a method", s.kind.name())
            });
            let Some(c) = out.chunks.iter().find(|c| contains_line(c, s.start_line)) else {
                continue; // reported by the coverage check
            };
            if c.local_path == path {
                report.check(c.kind == K::Method, || {
                    format!("chunk of `{path}` has kind {}", c.kind.name())
                });
                report.check(header.is_empty() || c.context.contains(header), || {
                    format!(
                        "chunk of `{path}` lacks the header {header:?}: {}",
                        describe(c)
                    )
                });
            } else {
                let tokens = approx_tokens(&c.content);
                report.check(
                    lists_name(&c.names, &s.name) && tokens <= MergeSizes::FINE.max_tokens,
                    || {
                        format!(
                            "method `{path}` is neither its own chunk nor merged into a small one \
                             ({tokens} tokens): {}",
                            describe(c)
                        )
                    },
                );
            }
        }
    }
}

fn check_units(spec: &Spec, out: &FileChunks, report: &mut Report) {
    for u in &spec.units {
        let Some(c) = out.chunks.iter().find(|c| c.start_line == u.start) else {
            let near = out
                .chunks
                .iter()
                .find(|c| contains_line(c, u.start))
                .map_or_else(|| "none".to_owned(), describe);
            report.failures.push(format!(
                "no chunk starts at line {} (expected {:?}); the line is in: {near}",
                u.start,
                u.label.map_or("a merged run", |(_, path)| path)
            ));
            continue;
        };
        if let Some(end) = u.end {
            report.check(c.end_line == end, || {
                format!(
                    "chunk at line {} should end at {end}: {}",
                    u.start,
                    describe(c)
                )
            });
        }
        if let Some((kind, path)) = u.label {
            report.check(c.kind == kind && c.local_path == path, || {
                format!(
                    "chunk at line {} should be {} {path:?}: {}",
                    u.start,
                    kind.name(),
                    describe(c)
                )
            });
        }
        for name in u.names {
            report.check(lists_name(&c.names, name), || {
                format!(
                    "chunk at line {} should list `{name}`: {}",
                    u.start,
                    describe(c)
                )
            });
        }
        if let Some(line) = u.context {
            report.check(c.context.contains(line), || {
                format!(
                    "chunk at line {} should have {line:?} as context: {}",
                    u.start,
                    describe(c)
                )
            });
        }
    }
    for &(a, b) in spec.together {
        report.check(
            out.chunks
                .iter()
                .any(|c| contains_line(c, a) && contains_line(c, b)),
            || format!("lines {a} and {b} should share a chunk"),
        );
    }
}

/// Checks the language's fixture in `tests/fixtures/lang/` against `spec`.
fn check_fixture(spec: &Spec) {
    check_source(spec, &lang_fixture(spec.lang), "fixture");
}

/// Unit boundaries are checked at the fine merge sizes, where a fixture's small functions
/// stay apart and each language's definitions show; the code sizes are checked by
/// `tiny_functions_are_merged`.
fn check_source(spec: &Spec, source: &str, what: &str) {
    let out = chunk_file_with(source, spec.lang, MergeSizes::FINE);
    let mut report = Report::new(format!("{} {what}", spec.lang.name()));
    report.check(!out.fell_back, || "fell back to line windows".to_owned());
    general_checks(source, &out, &mut report);
    check_symbols(spec, &out, &mut report);
    check_methods(spec, &out, &mut report);
    check_units(spec, &out, &mut report);
    report.finish(&out);
}

// ---------------------------------------------------------------------------------------------
// One test per grammar language
// ---------------------------------------------------------------------------------------------

#[test]
fn python_fixture() {
    check_fixture(&Spec {
        lang: Language::Python,
        symbols: &[
            (K::Constant, "DEFAULT_NAME", 8, 8),
            (K::Type, "Names", 10, 10),
            (K::Function, "memoize", 13, 23),
            (K::Function, "memoize.wrapper", 17, 21),
            (K::Class, "Greeting", 26, 34),
            (K::Field, "Greeting.text", 30, 30),
            (K::Field, "Greeting.loud", 31, 31),
            (K::Method, "Greeting.render", 33, 34),
            (K::Class, "Greeter", 37, 56),
            (K::Class, "Greeter.Config", 40, 41),
            (K::Field, "Greeter.Config.punctuation", 41, 41),
            (K::Method, "Greeter.__init__", 43, 44),
            (K::Method, "Greeter.prefix_length", 46, 48),
            (K::Method, "Greeter.normalize", 50, 52),
            (K::Method, "Greeter.greet", 54, 56),
            (K::Function, "shout", 59, 61),
            (K::Function, "main", 64, 66),
        ],
        methods: &[
            ("Greeting.render", "class Greeting:"),
            ("Greeter.__init__", "class Greeter:"),
            ("Greeter.prefix_length", "class Greeter:"),
            ("Greeter.normalize", "class Greeter:"),
            ("Greeter.greet", "class Greeter:"),
        ],
        units: vec![
            unit(13, 23, K::Function, "memoize").names(&["memoize", "wrapper"]),
            // The decorator opens the class's chunk.
            unit(26, 34, K::Class, "Greeting").names(&["Greeting", "render"]),
            // The class header, its nested class and its small methods...
            unit(37, 52, K::Class, "Greeter").names(&[
                "Greeter",
                "Config",
                "__init__",
                "prefix_length",
                "normalize",
            ]),
            // ...and the one method big enough to stand alone.
            unit(54, 56, K::Method, "Greeter.greet").context("class Greeter:"),
            merged(59, 70, &["shout", "main"]),
        ],
        together: &[],
    });
}

#[test]
fn javascript_fixture() {
    check_fixture(&Spec {
        lang: Language::JavaScript,
        symbols: &[
            (K::Constant, "DEFAULT_NAME", 4, 4),
            (K::Class, "Greeter", 6, 33),
            (K::Field, "Greeter.#count", 10, 10),
            (K::Method, "Greeter.constructor", 12, 14),
            (K::Method, "Greeter.greet", 16, 20),
            (K::Method, "Greeter.count", 22, 24),
            (K::Method, "Greeter.create", 26, 28),
            (K::Method, "Greeter.onClick", 30, 32),
            (K::Function, "makeCounter", 35, 42),
            (K::Function, "makeCounter.increment", 37, 40),
            (K::Function, "shout", 44, 44),
            (K::Function, "whisper", 46, 48),
            (K::Function, "ids", 50, 53),
            (K::Function, "main", 55, 58),
            (K::Function, "wave", 60, 62),
        ],
        methods: &[
            ("Greeter.constructor", "export class Greeter {"),
            ("Greeter.greet", "export class Greeter {"),
            ("Greeter.count", "export class Greeter {"),
            ("Greeter.create", "export class Greeter {"),
            ("Greeter.onClick", "export class Greeter {"),
        ],
        units: vec![
            // Imports, and the module's constant, which names the chunk.
            unit(1, 4, K::Constant, "DEFAULT_NAME"),
            // A small class merges back into one chunk, named after the class, from its JSDoc.
            unit(6, 33, K::Class, "Greeter").names(&[
                "Greeter",
                "constructor",
                "greet",
                "count",
                "create",
                "onClick",
            ]),
            merged(
                35,
                62,
                &[
                    "makeCounter",
                    "increment",
                    "shout",
                    "whisper",
                    "ids",
                    "main",
                    "wave",
                ],
            ),
        ],
        together: &[],
    });
}

#[test]
fn typescript_fixture() {
    const GREETER: &str = "export class Greeter extends Speaker<Named> {";
    check_fixture(&Spec {
        lang: Language::TypeScript,
        symbols: &[
            (K::Interface, "Named", 4, 8),
            (K::Field, "Named.name", 6, 6),
            (K::Field, "Named.nickname", 7, 7),
            (K::Type, "Salutation", 10, 10),
            (K::Enum, "Mood", 12, 15),
            (K::Variant, "Mood.Happy", 13, 13),
            (K::Variant, "Mood.Grumpy", 14, 14),
            (K::Class, "Speaker", 17, 23),
            (K::Method, "Speaker.log", 20, 22),
            (K::Class, "Greeter", 25, 44),
            (K::Field, "Greeter.count", 30, 30),
            (K::Method, "Greeter.constructor", 32, 34),
            (K::Field, "Greeter.salutation", 32, 32),
            (K::Method, "Greeter.speak", 36, 41),
            (K::Method, "Greeter.handle", 43, 43),
            (K::Module, "Greetings", 46, 52),
            (K::Function, "Greetings.random", 49, 51),
            (K::Module, "greeting-plugins", 54, 56),
            (K::Function, "shout", 58, 58),
            (K::Function, "sealed", 60, 63),
            (K::Function, "main", 65, 67),
        ],
        methods: &[
            (
                "Speaker.log",
                "export abstract class Speaker<T extends Named> extends EventEmitter {",
            ),
            ("Greeter.constructor", GREETER),
            ("Greeter.speak", GREETER),
            ("Greeter.handle", GREETER),
        ],
        units: vec![
            merged(1, 15, &["Named", "Salutation", "Mood"]),
            unit(17, 23, K::Class, "Speaker").names(&["Speaker", "log"]),
            // JSDoc and decorator open the class's first chunk.
            unit(25, 34, K::Class, "Greeter").names(&["Greeter", "constructor"]),
            unit(36, 44, K::Method, "Greeter.speak")
                .names(&["speak", "handle"])
                .context(GREETER),
            unit(46, 52, K::Module, "Greetings").names(&["Greetings", "random"]),
            merged(54, 67, &["greeting-plugins", "shout", "sealed", "main"]),
        ],
        together: &[],
    });
}

#[test]
fn tsx_fixture() {
    check_fixture(&Spec {
        lang: Language::Tsx,
        symbols: &[
            (K::Interface, "GreetingProps", 4, 8),
            (K::Field, "GreetingProps.name", 6, 6),
            (K::Field, "GreetingProps.loud", 7, 7),
            (K::Type, "Mood", 10, 10),
            (K::Enum, "Size", 12, 15),
            (K::Variant, "Size.Small", 13, 13),
            (K::Variant, "Size.Large", 14, 14),
            (K::Function, "useCounter", 17, 21),
            (K::Function, "GreetingCard", 23, 33),
            (K::Function, "GreetingList", 35, 42),
            (K::Function, "GreetingList.renderItem", 36, 40),
            (K::Class, "MoodBadge", 44, 48),
            (K::Method, "MoodBadge.render", 45, 47),
        ],
        methods: &[(
            "MoodBadge.render",
            "export class MoodBadge extends React.Component<{ mood: Mood }> {",
        )],
        units: vec![
            merged(1, 15, &["GreetingProps", "Mood", "Size"]),
            unit(17, 21, K::Function, "useCounter"),
            unit(23, 33, K::Function, "GreetingCard").names(&["GreetingCard"]),
            unit(35, 42, K::Function, "GreetingList").names(&["GreetingList", "renderItem"]),
            unit(44, 48, K::Class, "MoodBadge").names(&["MoodBadge", "render"]),
        ],
        together: &[],
    });
}

#[test]
fn rust_fixture() {
    check_fixture(&Spec {
        lang: Language::Rust,
        symbols: &[
            (K::Constant, "DEFAULT_NAME", 5, 6),
            (K::Constant, "GREETINGS", 8, 8),
            (K::Trait, "Greet", 10, 17),
            (K::Method, "Greet::greet_all", 14, 16),
            // The doc comment and the derive attribute belong to the struct.
            (K::Struct, "Greeter", 19, 23),
            (K::Field, "Greeter::prefix", 22, 22),
            (K::Impl, "Greeter", 25, 31),
            (K::Constant, "Greeter::LOUD", 26, 26),
            (K::Method, "Greeter::new", 28, 30),
            (K::Impl, "Greeter", 33, 37),
            (K::Method, "Greeter::greet", 34, 36),
            (K::Impl, "Greeter", 39, 43),
            (K::Method, "Greeter::fmt", 40, 42),
            (K::Enum, "Mood", 45, 48),
            (K::Variant, "Mood::Happy", 46, 46),
            (K::Variant, "Mood::Grumpy", 47, 47),
            (K::Type, "Names", 50, 50),
            (K::Macro, "greet_twice", 52, 56),
            (K::Module, "shout", 58, 65),
            (K::Function, "shout::shout", 59, 64),
            (K::Function, "shout::shout::bang", 60, 62),
            (K::Function, "main", 69, 73),
        ],
        methods: &[
            ("Greet::greet_all", "pub trait Greet {"),
            ("Greeter::new", "impl<'a> Greeter<'a> {"),
            ("Greeter::greet", "impl Greet for Greeter<'_> {"),
            ("Greeter::fmt", "impl fmt::Display for Greeter<'_> {"),
        ],
        units: vec![
            merged(1, 8, &["DEFAULT_NAME", "GREETINGS"]),
            unit(10, 17, K::Trait, "Greet").names(&["Greet", "greet_all"]),
            unit(19, 23, K::Struct, "Greeter"),
            unit(58, 65, K::Module, "shout").names(&["shout", "bang"]),
            // `mod external;` is glue that joins the next unit.
            unit(67, 73, K::Function, "main"),
        ],
        // Each impl header stays with its methods.
        together: &[(25, 28), (33, 34), (39, 40)],
    });
}

#[test]
fn go_fixture() {
    check_fixture(&Spec {
        lang: Language::Go,
        symbols: &[
            (K::Constant, "DefaultName", 9, 10),
            (K::Type, "Mood", 12, 13),
            (K::Constant, "Happy", 16, 16),
            (K::Constant, "Grumpy", 17, 17),
            (K::Interface, "Speaker", 20, 23),
            (K::Struct, "Greeter", 25, 29),
            (K::Field, "Greeter.Prefix", 27, 27),
            (K::Field, "Greeter.mood", 28, 28),
            (K::Type, "Names", 32, 33),
            (K::Struct, "Pair", 34, 35),
            (K::Field, "Pair.A", 35, 35),
            (K::Field, "Pair.B", 35, 35),
            (K::Type, "Alias", 36, 36),
            (K::Function, "NewGreeter", 39, 42),
            // Receivers name the type: `func (g *Greeter) Speak` is `Greeter.Speak`.
            (K::Method, "Greeter.Speak", 44, 50),
            (K::Method, "Greeter.Mood", 52, 52),
            (K::Function, "Shout", 54, 64),
        ],
        methods: &[("Greeter.Speak", ""), ("Greeter.Mood", "")],
        units: vec![
            merged(
                1,
                37,
                &[
                    "DefaultName",
                    "Mood",
                    "Happy",
                    "Grumpy",
                    "Speaker",
                    "Greeter",
                    "Names",
                    "Pair",
                    "Alias",
                ],
            ),
            unit(39, 52, K::Method, "Greeter.Speak").names(&["NewGreeter", "Speak", "Mood"]),
            unit(54, 64, K::Function, "Shout"),
        ],
        together: &[],
    });
}

#[test]
fn go_receivers() {
    let source = "package box\n\n\
        func (b *Box[T]) Get() T { return b.v }\n\
        func (b Box[K, V]) Put() {}\n\
        func (Box) Len() int { return 0 }\n\
        func (b (*Box)) Reset() {}\n";
    let out = chunk_file(source, Language::Go);
    let paths: Vec<(&str, K)> = out
        .symbols
        .iter()
        .map(|s| (s.local_path.as_str(), s.kind))
        .collect();
    assert_eq!(
        paths,
        [
            ("Box.Get", K::Method),
            ("Box.Put", K::Method),
            ("Box.Len", K::Method),
            // A parenthesized receiver type is found, without its type.
            ("Reset", K::Method),
        ]
    );
}

/// `(local path, kind, start line, end line)` of each symbol.
fn symbol_spans(out: &FileChunks) -> Vec<(&str, K, u32, u32)> {
    out.symbols
        .iter()
        .map(|s| (s.local_path.as_str(), s.kind, s.start_line, s.end_line))
        .collect()
}

#[test]
fn go_package_level_variables_are_definitions() {
    let source = "package mux\n\n\
        var (\n\
        \t// ErrNotFound is returned when no route matches.\n\
        \tErrNotFound = errors.New(\"no matching route\")\n\
        \tdefaultPort, fallbackPort = 80, 8080\n\
        )\n\n\
        var SkipRouter = errors.New(\"skip this router\")\n\n\
        var _ http.Handler = (*Router)(nil)\n\n\
        func Serve() {\n\
        \tvar local = 1\n\
        \t_ = local\n\
        }\n";
    let out = chunk_file(source, Language::Go);
    let symbols = symbol_spans(&out);
    // One per name of a spec, with its doc comment; the blank identifier and a function's
    // locals name nothing.
    assert_eq!(
        symbols,
        [
            ("ErrNotFound", K::Variable, 4, 5),
            ("defaultPort", K::Variable, 6, 6),
            ("fallbackPort", K::Variable, 6, 6),
            ("SkipRouter", K::Variable, 9, 9),
            ("Serve", K::Function, 13, 16),
        ]
    );
}

#[test]
fn a_merged_chunk_lists_members_by_their_unit() {
    // Small types merge into one chunk; each field is listed by the type that declares it,
    // so `Return.expr` is told apart from `Block.expr`.
    let source = "object Trees {\n  case class Block(stats: List[Tree], expr: Tree)\n  \
                  case class Return(expr: Tree)\n  def size(t: Tree): Int = 1\n}\n";
    let out = chunk_file(source, Language::Scala);
    let holder = out
        .chunks
        .iter()
        .find(|c| lists_name(&c.names, "Return"))
        .expect("a chunk holds Return");
    let names: Vec<&str> = holder.names.split(' ').collect();
    for name in [
        "Block",
        "Block.stats",
        "Block.expr",
        "Return",
        "Return.expr",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(!names.contains(&"expr"), "{names:?}");
    // Rust joins with `::`; a Markdown section keeps its own name (a chunk's names are
    // separated by spaces, and a section's path by ` > `).
    let out = chunk_file("enum Mood { Happy, Grumpy }\n", Language::Rust);
    assert_eq!(out.chunks[0].names, "Mood Mood::Happy Mood::Grumpy");
    let out = chunk_file(
        "# Guide\n\nIntro.\n\n## Install it\n\nRun pip.\n",
        Language::Markdown,
    );
    assert_eq!(out.chunks[0].names, "Guide Install it");
}

#[test]
fn rust_items_in_a_function_body_are_definitions() {
    let source = "fn usage() -> String {\n    \
        /// Indent of a flag's help.\n    \
        const DASH_SPACE: usize = 2;\n    \
        static SEEN: AtomicBool = AtomicBool::new(false);\n    \
        let width = DASH_SPACE + 1;\n    \
        format!(\"{width}\")\n\
        }\n";
    let out = chunk_file(source, Language::Rust);
    let symbols = symbol_spans(&out);
    // Items, with their doc comments; `let` bindings are not definitions.
    assert_eq!(
        symbols,
        [
            ("usage", K::Function, 1, 7),
            ("usage::DASH_SPACE", K::Constant, 2, 3),
            ("usage::SEEN", K::Constant, 4, 4),
        ]
    );
    // The function stays one chunk that answers for its items' names.
    assert_eq!(out.chunks.len(), 1);
    assert_eq!(out.chunks[0].names, "usage usage::DASH_SPACE usage::SEEN");
}

#[test]
fn python_class_constants_are_definitions() {
    let source = "class Color(Enum):\n    RED = 1\n    GREEN = 2\n    label = \"x\"\n\n    \
        def shade(self):\n        LOCAL = 3\n        return LOCAL\n";
    let out = chunk_file(source, Language::Python);
    // Upper-case names in the class body; lower-case attributes are fields; not a method's
    // locals.
    assert_eq!(
        symbol_spans(&out),
        [
            ("Color", K::Class, 1, 8),
            ("Color.RED", K::Constant, 2, 2),
            ("Color.GREEN", K::Constant, 3, 3),
            ("Color.label", K::Field, 4, 4),
            ("Color.shade", K::Method, 6, 8),
        ]
    );
}

#[test]
fn java_fixture() {
    const SAMPLE: &str = "public final class Sample {";
    const GREETER: &str = "public static class Greeter implements Speaker {";
    check_fixture(&Spec {
        lang: Language::Java,
        symbols: &[
            (K::Class, "Sample", 6, 60),
            (K::Constant, "Sample.DEFAULT_NAME", 8, 9),
            (K::Interface, "Sample.Speaker", 11, 18),
            (K::Method, "Sample.Speaker.speakAll", 15, 17),
            (K::Enum, "Sample.Mood", 20, 27),
            (K::Variant, "Sample.Mood.HAPPY", 21, 21),
            (K::Variant, "Sample.Mood.GRUMPY", 22, 22),
            (K::Method, "Sample.Mood.isHappy", 24, 26),
            (K::Class, "Sample.Greeting", 29, 33),
            (K::Field, "Sample.Greeting.text", 29, 29),
            (K::Field, "Sample.Greeting.loud", 29, 29),
            (K::Method, "Sample.Greeting.Greeting", 30, 32),
            (K::Class, "Sample.Greeter", 35, 49),
            (K::Field, "Sample.Greeter.prefix", 38, 38),
            (K::Method, "Sample.Greeter.Greeter", 40, 42),
            (K::Method, "Sample.Greeter.speak", 44, 48),
            (K::Interface, "Sample.Polite", 51, 53),
            (K::Method, "Sample.Sample", 55, 55),
            (K::Method, "Sample.greet", 57, 59),
        ],
        methods: &[
            ("Sample.Speaker.speakAll", "public interface Speaker {"),
            ("Sample.Mood.isHappy", "public enum Mood {"),
            (
                "Sample.Greeting.Greeting",
                "public record Greeting(String text, boolean loud) {",
            ),
            ("Sample.Greeter.Greeter", GREETER),
            ("Sample.Greeter.speak", GREETER),
            ("Sample.Sample", SAMPLE),
            ("Sample.greet", SAMPLE),
        ],
        units: vec![
            unit(1, 4, K::Code, ""),
            // Javadoc, class header and the documented field.
            unit(6, 9, K::Class, "Sample"),
            unit(11, 18, K::Interface, "Sample.Speaker")
                .names(&["Speaker", "speakAll"])
                .context(SAMPLE),
            unit(35, 42, K::Class, "Sample.Greeter")
                .names(&["Greeter"])
                .context(SAMPLE),
            // `@Override` opens the method's chunk; the class's closing brace joins it.
            unit(44, 49, K::Method, "Sample.Greeter.speak")
                .names(&["speak"])
                .context(GREETER),
            merged(51, 60, &["Polite", "Sample", "greet"]),
        ],
        together: &[],
    });
}

#[test]
fn c_fixture() {
    check_fixture(&Spec {
        lang: Language::C,
        symbols: &[
            // A one-line macro ends on its own line, not on the blank line after it.
            (K::Constant, "MAX_NAME", 6, 6),
            (K::Macro, "MIN", 7, 7),
            (K::Enum, "mood", 9, 13),
            (K::Variant, "mood.MOOD_HAPPY", 11, 11),
            (K::Variant, "mood.MOOD_GRUMPY", 12, 12),
            (K::Struct, "greeter", 15, 19),
            (K::Field, "greeter.prefix", 17, 17),
            (K::Field, "greeter.mood", 18, 18),
            (K::Struct, "greeting_t", 21, 24),
            (K::Field, "greeting_t.text", 22, 22),
            (K::Field, "greeting_t.len", 23, 23),
            (K::Struct, "node", 26, 29),
            (K::Field, "node.next", 27, 27),
            (K::Field, "node.value", 28, 28),
            (K::Struct, "number_t", 31, 34),
            (K::Field, "number_t.as_int", 32, 32),
            (K::Field, "number_t.as_float", 33, 33),
            (K::Type, "counter_t", 36, 36),
            (K::Function, "greeter_greet", 42, 52),
            (K::Function, "shout", 54, 63),
            (K::Function, "main", 65, 75),
        ],
        methods: &[],
        units: vec![
            unit(42, 52, K::Function, "greeter_greet").names(&["greeter_greet"]),
            unit(54, 63, K::Function, "shout"),
            unit(65, 75, K::Function, "main"),
        ],
        together: &[],
    });
}

#[test]
fn cpp_fixture() {
    const GREETER: &str = "class Greeter : public Speaker {";
    check_fixture(&Spec {
        lang: Language::Cpp,
        symbols: &[
            // The macro's continuation line is its last line.
            (K::Macro, "GREET_CHECK", 6, 7),
            (K::Module, "greet", 9, 68),
            (K::Enum, "greet::Mood", 11, 11),
            (K::Variant, "greet::Mood::Happy", 11, 11),
            (K::Variant, "greet::Mood::Grumpy", 11, 11),
            (K::Class, "greet::Speaker", 13, 18),
            (K::Class, "greet::Greeter", 20, 39),
            (K::Method, "greet::Greeter::Greeter", 23, 23),
            (K::Method, "greet::Greeter::~Greeter", 24, 24),
            (K::Method, "greet::Greeter::prefix", 28, 28),
            (K::Method, "greet::Greeter::operator==", 30, 30),
            (K::Struct, "greet::Greeter::Stats", 33, 35),
            (K::Field, "greet::Greeter::Stats::greeted", 34, 34),
            (K::Field, "greet::Greeter::prefix_", 37, 37),
            (K::Field, "greet::Greeter::stats_", 38, 38),
            // Out-of-class definitions keep their qualified name (the query's documented rule).
            (K::Function, "greet::Greeter::speak", 41, 43),
            (K::Struct, "greet::Box", 45, 50),
            (K::Field, "greet::Box::value", 47, 47),
            (K::Method, "greet::Box::get", 48, 48),
            (K::Function, "greet::Box<T>::twice", 52, 55),
            (K::Function, "greet::greet_all", 57, 64),
            (K::Type, "greet::Names", 66, 66),
            (K::Function, "main", 70, 76),
        ],
        methods: &[
            ("greet::Greeter::Greeter", GREETER),
            ("greet::Greeter::~Greeter", GREETER),
            ("greet::Greeter::prefix", GREETER),
            ("greet::Greeter::operator==", GREETER),
            ("greet::Box::get", "struct Box {"),
        ],
        units: vec![
            unit(1, 7, K::Macro, "GREET_CHECK"),
            // The namespace header and the small members after it.
            merged(9, 18, &["greet", "Mood", "Speaker"]),
            unit(20, 39, K::Class, "greet::Greeter")
                .names(&["Greeter", "~Greeter", "prefix", "operator==", "Stats"])
                .context("namespace greet {"),
            unit(41, 43, K::Function, "greet::Greeter::speak").context("namespace greet {"),
            // The template header opens the struct's chunk.
            unit(45, 50, K::Struct, "greet::Box").names(&["Box", "get"]),
            unit(70, 76, K::Function, "main"),
        ],
        together: &[],
    });
}

#[test]
fn csharp_fixture() {
    const GREETER: &str = "public class Greeter : ISpeaker";
    check_fixture(&Spec {
        lang: Language::CSharp,
        symbols: &[
            (K::Module, "Example.Greet", 5, 68),
            (K::Interface, "Example.Greet.ISpeaker", 7, 13),
            (K::Method, "Example.Greet.ISpeaker.SpeakTwice", 12, 12),
            (K::Enum, "Example.Greet.Mood", 15, 19),
            (K::Variant, "Example.Greet.Mood.Happy", 17, 17),
            (K::Variant, "Example.Greet.Mood.Grumpy", 18, 18),
            (K::Type, "Example.Greet.Formatter", 21, 21),
            (K::Class, "Example.Greet.Greeting", 23, 23),
            (K::Field, "Example.Greet.Greeting.Text", 23, 23),
            (K::Field, "Example.Greet.Greeting.Loud", 23, 23),
            (K::Struct, "Example.Greet.Stats", 25, 30),
            (K::Field, "Example.Greet.Stats.Greeted", 27, 27),
            (K::Method, "Example.Greet.Stats.Bump", 29, 29),
            (K::Class, "Example.Greet.Greeter", 32, 67),
            (K::Field, "Example.Greet.Greeter._prefix", 36, 36),
            // The constructor and the finalizer.
            (K::Method, "Example.Greet.Greeter.Greeter", 38, 41),
            (K::Method, "Example.Greet.Greeter.Greeter", 43, 45),
            (K::Field, "Example.Greet.Greeter.Prefix", 47, 47),
            (K::Method, "Example.Greet.Greeter.Speak", 49, 53),
            (K::Function, "Example.Greet.Greeter.Speak.Punctuate", 51, 51),
            (K::Method, "Example.Greet.Greeter.GreetAll", 55, 61),
            (K::Class, "Example.Greet.Greeter.Cache", 63, 66),
            (K::Field, "Example.Greet.Greeter.Cache.Entries", 65, 65),
        ],
        methods: &[
            (
                "Example.Greet.ISpeaker.SpeakTwice",
                "public interface ISpeaker",
            ),
            ("Example.Greet.Stats.Bump", "public struct Stats"),
            ("Example.Greet.Greeter.Greeter", GREETER),
            ("Example.Greet.Greeter.Speak", GREETER),
            ("Example.Greet.Greeter.GreetAll", GREETER),
        ],
        units: vec![
            unit(1, 3, K::Code, ""),
            unit(25, 30, K::Struct, "Example.Greet.Stats").names(&["Stats", "Bump"]),
            // Doc comment and attribute open the class's first chunk.
            unit(32, 47, K::Class, "Example.Greet.Greeter")
                .names(&["Greeter"])
                .context("namespace Example.Greet"),
            unit(49, 53, K::Method, "Example.Greet.Greeter.Speak")
                .names(&["Speak", "Punctuate"])
                .context(GREETER),
            unit(55, 61, K::Method, "Example.Greet.Greeter.GreetAll")
                .names(&["GreetAll", "Cache"])
                .context(GREETER)
                .open_end(),
        ],
        together: &[],
    });
}

#[test]
fn ruby_fixture() {
    const GREETER: &str = "class Greeter";
    check_fixture(&Spec {
        lang: Language::Ruby,
        symbols: &[
            (K::Module, "Greetings", 5, 51),
            (K::Constant, "Greetings.DEFAULT_NAME", 7, 7),
            (K::Module, "Greetings.Speaker", 9, 14),
            (K::Method, "Greetings.Speaker.speak", 11, 13),
            (K::Class, "Greetings.Greeter", 16, 50),
            (K::Field, "Greetings.Greeter.prefix", 20, 20),
            (K::Field, "Greetings.Greeter.count", 20, 20),
            (K::Field, "Greetings.Greeter.mood", 21, 21),
            (K::Method, "Greetings.Greeter.initialize", 23, 26),
            (K::Method, "Greetings.Greeter.speak", 28, 31),
            (K::Method, "Greetings.Greeter.seen?", 33, 33),
            (K::Method, "Greetings.Greeter.default", 35, 37),
            (K::Method, "Greetings.Greeter.loud", 40, 42),
            (K::Method, "Greetings.Greeter.reset!", 47, 49),
            (K::Class, "Greetings::Shouter", 53, 57),
            (K::Method, "Greetings::Shouter.speak", 54, 56),
            (K::Method, "greet_all", 59, 61),
        ],
        methods: &[
            ("Greetings.Speaker.speak", "module Speaker"),
            ("Greetings.Greeter.initialize", GREETER),
            ("Greetings.Greeter.speak", GREETER),
            ("Greetings.Greeter.seen?", GREETER),
            ("Greetings.Greeter.default", GREETER),
            ("Greetings.Greeter.loud", GREETER),
            ("Greetings.Greeter.reset!", GREETER),
            (
                "Greetings::Shouter.speak",
                "class Greetings::Shouter < Greetings::Greeter",
            ),
            ("greet_all", ""),
        ],
        units: vec![
            unit(1, 3, K::Code, ""),
            unit(5, 7, K::Module, "Greetings"),
            unit(9, 14, K::Module, "Greetings.Speaker")
                .names(&["Speaker", "speak"])
                .context("module Greetings"),
            // Ends at 50 or with the module's `end` on 51, which must not stand alone.
            unit(16, 50, K::Class, "Greetings.Greeter")
                .names(&[
                    "Greeter",
                    "prefix",
                    "count",
                    "mood",
                    "initialize",
                    "speak",
                    "seen?",
                    "default",
                    "loud",
                    "reset!",
                ])
                .context("module Greetings")
                .open_end(),
            unit(53, 57, K::Class, "Greetings::Shouter").names(&["Greetings::Shouter", "speak"]),
            unit(59, 63, K::Method, "greet_all"),
        ],
        together: &[],
    });
}

#[test]
fn php_fixture() {
    const GREETER: &str = "final class Greeter implements Speaker";
    check_fixture(&Spec {
        lang: Language::Php,
        symbols: &[
            (K::Constant, "DEFAULT_NAME", 9, 9),
            (K::Interface, "Speaker", 11, 15),
            (K::Trait, "CountsGreetings", 17, 25),
            (K::Field, "CountsGreetings.count", 19, 19),
            (K::Method, "CountsGreetings.bump", 21, 24),
            (K::Enum, "Mood", 27, 36),
            (K::Variant, "Mood.Happy", 29, 29),
            (K::Variant, "Mood.Grumpy", 30, 30),
            (K::Method, "Mood.isHappy", 32, 35),
            (K::Class, "Greeter", 38, 63),
            (K::Method, "Greeter.__construct", 46, 51),
            (K::Field, "Greeter.prefix", 46, 46),
            (K::Method, "Greeter.speak", 53, 57),
            (K::Method, "Greeter.create", 59, 62),
            (K::Class, "Base", 65, 68),
            (K::Function, "shout", 70, 74),
        ],
        methods: &[
            ("CountsGreetings.bump", "trait CountsGreetings"),
            ("Mood.isHappy", "enum Mood: string"),
            ("Greeter.__construct", GREETER),
            ("Greeter.speak", GREETER),
            ("Greeter.create", GREETER),
        ],
        units: vec![
            // The file's preamble joins the first definitions; the interface, not the
            // constant before it, names the chunk.
            unit(1, 15, K::Interface, "Speaker").names(&["DEFAULT_NAME", "Speaker"]),
            unit(17, 25, K::Trait, "CountsGreetings").names(&["CountsGreetings", "bump"]),
            unit(27, 36, K::Enum, "Mood").names(&["Mood", "isHappy"]),
            // Docblock and attribute open the class's first chunk.
            unit(38, 51, K::Class, "Greeter").names(&["Greeter", "__construct"]),
            unit(53, 63, K::Method, "Greeter.speak")
                .names(&["speak", "create"])
                .context(GREETER),
            merged(65, 76, &["Base", "shout"]),
        ],
        together: &[],
    });
}

#[test]
fn kotlin_fixture() {
    const GREETER: &str =
        "open class Greeter(private val prefix: Prefix = Prefix(\"Hello\")) : Speaker {";
    check_fixture(&Spec {
        lang: Language::Kotlin,
        symbols: &[
            (K::Type, "Names", 8, 8),
            (K::Interface, "Speaker", 10, 15),
            (K::Method, "Speaker.speakAll", 14, 14),
            (K::Enum, "Mood", 17, 22),
            (K::Field, "Mood.emoji", 17, 17),
            (K::Variant, "Mood.HAPPY", 18, 18),
            (K::Variant, "Mood.GRUMPY", 19, 19),
            (K::Method, "Mood.flip", 21, 21),
            (K::Class, "Greeting", 24, 24),
            (K::Field, "Greeting.text", 24, 24),
            (K::Field, "Greeting.loud", 24, 24),
            (K::Class, "Prefix", 26, 30),
            (K::Field, "Prefix.value", 30, 30),
            (K::Class, "Greeter", 32, 44),
            (K::Field, "Greeter.prefix", 32, 32),
            (K::Field, "Greeter.count", 33, 33),
            (K::Method, "Greeter.speak", 35, 39),
            (K::Function, "Greeter.speak.punctuate", 36, 36),
            (K::Class, "Greeter.Factory", 41, 43),
            (K::Method, "Greeter.Factory.create", 42, 42),
            (K::Class, "Registry", 46, 52),
            (K::Field, "Registry.greeters", 47, 47),
            (K::Method, "Registry.register", 49, 51),
            (K::Function, "greetEveryone", 54, 54),
            (K::Function, "main", 56, 58),
        ],
        methods: &[
            ("Speaker.speakAll", "interface Speaker {"),
            ("Mood.flip", "enum class Mood(val emoji: String) {"),
            ("Greeter.speak", GREETER),
            ("Greeter.Factory.create", "companion object Factory {"),
            ("Registry.register", "object Registry {"),
        ],
        units: vec![
            unit(1, 8, K::Type, "Names"),
            unit(10, 15, K::Interface, "Speaker").names(&["Speaker", "speakAll"]),
            unit(17, 22, K::Enum, "Mood").names(&["Mood", "flip"]),
            // The KDoc and annotation of `Prefix` are inside the run, not cut off.
            merged(24, 30, &["Greeting", "Prefix"]),
            unit(32, 39, K::Class, "Greeter").names(&["Greeter", "speak", "punctuate"]),
            unit(41, 43, K::Class, "Greeter.Factory")
                .names(&["Factory", "create"])
                .context(GREETER)
                .open_end(),
            unit(46, 52, K::Class, "Registry").names(&["Registry", "register"]),
            merged(54, 58, &["greetEveryone", "main"]),
        ],
        together: &[],
    });
}

#[test]
fn swift_fixture() {
    const GREETER: &str = "final class Greeter: Speaker {";
    check_fixture(&Spec {
        lang: Language::Swift,
        symbols: &[
            (K::Type, "Names", 7, 7),
            (K::Interface, "Speaker", 9, 12),
            (K::Enum, "Mood", 14, 22),
            (K::Variant, "Mood.happy", 15, 15),
            (K::Variant, "Mood.grumpy", 15, 15),
            (K::Method, "Mood.flipped", 19, 21),
            (K::Struct, "Greeting", 24, 27),
            (K::Field, "Greeting.text", 25, 25),
            (K::Field, "Greeting.loud", 26, 26),
            (K::Class, "Greeter", 29, 48),
            (K::Field, "Greeter.prefix", 32, 32),
            (K::Field, "Greeter.count", 33, 33),
            (K::Method, "Greeter.init", 35, 37),
            (K::Method, "Greeter.deinit", 39, 41),
            (K::Method, "Greeter.speak", 43, 47),
            (K::Function, "Greeter.speak.punctuate", 44, 44),
            (K::Impl, "Greeter", 50, 54),
            (K::Field, "Greeter.description", 51, 51),
            (K::Method, "Greeter.make", 53, 53),
            (K::Class, "Counter", 56, 63),
            (K::Field, "Counter.value", 57, 57),
            (K::Method, "Counter.increment", 59, 62),
            (K::Function, "greetAll", 65, 67),
        ],
        methods: &[
            ("Mood.flipped", "enum Mood: String {"),
            ("Greeter.init", GREETER),
            ("Greeter.deinit", GREETER),
            ("Greeter.speak", GREETER),
            (
                "Greeter.make",
                "extension Greeter: CustomStringConvertible {",
            ),
            ("Counter.increment", "actor Counter {"),
        ],
        units: vec![
            unit(14, 22, K::Enum, "Mood").names(&["Mood", "happy", "grumpy", "flipped"]),
            // Doc comment and attribute open the class's first chunk.
            unit(29, 41, K::Class, "Greeter").names(&["Greeter", "init", "deinit"]),
            // The class's last method takes its closing brace, not the extension after it.
            unit(43, 48, K::Method, "Greeter.speak")
                .names(&["speak", "punctuate"])
                .context(GREETER),
            unit(50, 54, K::Impl, "Greeter").names(&["Greeter", "make"]),
            unit(56, 63, K::Class, "Counter").names(&["Counter", "increment"]),
            unit(65, 69, K::Function, "greetAll"),
        ],
        together: &[(50, 53)],
    });
}

#[test]
fn scala_fixture() {
    const GREETER: &str = "class Greeter(prefix: String = \"Hello\") extends Speaker {";
    check_fixture(&Spec {
        lang: Language::Scala,
        symbols: &[
            (K::Trait, "Speaker", 5, 10),
            (K::Method, "Speaker.speakAll", 9, 9),
            (K::Class, "Mood", 12, 12),
            (K::Field, "Mood.emoji", 12, 12),
            (K::Class, "Greeting", 14, 14),
            (K::Field, "Greeting.text", 14, 14),
            (K::Field, "Greeting.loud", 14, 14),
            (K::Class, "Greeter", 16, 30),
            (K::Field, "Greeter.seen", 19, 19),
            (K::Type, "Greeter.Names", 21, 21),
            (K::Method, "Greeter.speak", 23, 27),
            (K::Function, "Greeter.speak.punctuate", 24, 24),
            (K::Method, "Greeter.count", 29, 29),
            // The companion object.
            (K::Class, "Greeter", 32, 36),
            (K::Field, "Greeter.Default", 33, 33),
            (K::Method, "Greeter.apply", 35, 35),
            // An indentation-based enum ends with its last member.
            (K::Enum, "Color", 38, 42),
            (K::Field, "Color.rgb", 38, 38),
            (K::Variant, "Color.Red", 39, 39),
            (K::Variant, "Color.Green", 40, 40),
            (K::Method, "Color.hex", 42, 42),
            (K::Class, "Main", 44, 49),
            (K::Method, "Main.main", 45, 48),
        ],
        methods: &[
            ("Speaker.speakAll", "trait Speaker {"),
            ("Greeter.speak", GREETER),
            ("Greeter.count", GREETER),
            ("Greeter.apply", "object Greeter {"),
            ("Color.hex", "enum Color(val rgb: Int):"),
            ("Main.main", "object Main {"),
        ],
        units: vec![
            unit(1, 3, K::Code, ""),
            unit(5, 10, K::Trait, "Speaker").names(&["Speaker", "speakAll"]),
            merged(12, 14, &["Mood", "Greeting"]),
            // Scaladoc and annotation open the class's first chunk.
            unit(16, 21, K::Class, "Greeter").names(&["Greeter", "Names"]),
            // The class's methods and closing brace, not the companion object after it.
            unit(23, 30, K::Method, "Greeter.speak")
                .names(&["speak", "punctuate", "count"])
                .context(GREETER),
            unit(32, 36, K::Class, "Greeter").names(&["Greeter", "apply"]),
            unit(38, 42, K::Enum, "Color").names(&["Color", "hex"]),
            unit(44, 49, K::Class, "Main").names(&["Main", "main"]),
        ],
        together: &[],
    });
}

#[test]
fn bash_fixture() {
    check_fixture(&Spec {
        lang: Language::Bash,
        symbols: &[
            // Comments directly above a function are its documentation.
            (K::Function, "greet", 8, 13),
            (K::Function, "shout", 15, 18),
            (K::Function, "greet_all", 20, 25),
            (K::Function, "usage", 27, 32),
            (K::Function, "main", 34, 55),
            (K::Function, "main.cleanup", 36, 38),
        ],
        methods: &[],
        units: vec![
            merged(1, 25, &["greet", "shout", "greet_all"]),
            unit(27, 57, K::Function, "main").names(&["usage", "main", "cleanup"]),
        ],
        together: &[],
    });
}

/// In the sample every function is small and merges; here documented functions stand alone.
#[test]
fn bash_script_with_documented_functions() {
    check_source(
        &Spec {
            lang: Language::Bash,
            symbols: &[
                (K::Function, "upload_release", 5, 12),
                (K::Function, "switch_release", 14, 25),
            ],
            methods: &[],
            units: vec![
                unit(5, 12, K::Function, "upload_release"),
                // A two-line comment is documentation as a whole.
                unit(14, 25, K::Function, "switch_release"),
            ],
            together: &[],
        },
        &read_fixture(&["chunk", "deploy.sh"]),
        "deploy.sh",
    );
}

#[test]
fn lua_fixture() {
    check_fixture(&Spec {
        lang: Language::Lua,
        symbols: &[
            (K::Function, "Greeter.new", 10, 16),
            (K::Function, "Greeter:greet", 18, 22),
            (K::Function, "shout", 24, 29),
            (K::Function, "shout.bang", 25, 27),
            (K::Function, "whisper", 31, 33),
            (K::Function, "M.greet_all", 35, 41),
            (K::Function, "M.main", 43, 48),
        ],
        methods: &[],
        units: vec![
            unit(1, 8, K::Code, ""),
            // The `---` doc comment opens the function's chunk.
            unit(10, 16, K::Function, "Greeter.new"),
            merged(18, 33, &["Greeter:greet", "shout", "bang", "whisper"]),
            unit(35, 41, K::Function, "M.greet_all"),
            unit(43, 51, K::Function, "M.main"),
        ],
        together: &[],
    });
}

#[test]
fn zig_fixture() {
    const GREETER: &str = "pub const Greeter = struct {";
    check_fixture(&Spec {
        lang: Language::Zig,
        symbols: &[
            (K::Enum, "Mood", 7, 14),
            (K::Method, "Mood.flipped", 11, 13),
            (K::Struct, "Value", 16, 19),
            (K::Type, "GreetError", 21, 21),
            (K::Struct, "Greeter", 23, 41),
            (K::Struct, "Greeter.Stats", 28, 30),
            (K::Method, "Greeter.init", 32, 34),
            (K::Method, "Greeter.greet", 36, 40),
            (K::Type, "Handle", 43, 45),
            (K::Function, "shout", 47, 50),
            (K::Function, "main", 52, 55),
            (K::Function, "greeter counts greetings", 57, 61),
        ],
        methods: &[
            ("Mood.flipped", "pub const Mood = enum {"),
            ("Greeter.init", GREETER),
            ("Greeter.greet", GREETER),
        ],
        units: vec![
            unit(1, 5, K::Code, ""),
            unit(7, 14, K::Enum, "Mood").names(&["Mood", "flipped"]),
            // The doc comment opens the struct's first chunk.
            unit(23, 34, K::Struct, "Greeter").names(&["Greeter", "Stats", "init"]),
            unit(36, 41, K::Method, "Greeter.greet").context(GREETER),
            unit(52, 55, K::Function, "main"),
            unit(57, 61, K::Function, "greeter counts greetings"),
        ],
        together: &[],
    });
}

// ---------------------------------------------------------------------------------------------
// Markdown and files without structure
// ---------------------------------------------------------------------------------------------

#[test]
fn markdown_sections_follow_headings() {
    let source = read_fixture(&["chunk", "guide.md"]);
    let out = chunk_file(&source, Language::Markdown);
    let mut report = Report::new("markdown guide.md");
    general_checks(&source, &out, &mut report);

    // (start, end, local path); sections end at their last non-blank line.
    let expected: &[(u32, u32, &str)] = &[
        (1, 2, ""),
        (4, 8, "Coderecall"),
        (10, 19, "Coderecall > Install"),
        (21, 31, "Coderecall > Usage"),
        (33, 39, "Coderecall > Usage > Searching"),
        (41, 49, "Coderecall > Configuration"),
        (51, 56, "Appendix"),
        (58, 62, "Appendix > Notes"),
    ];
    let found: Vec<(u32, u32, &str)> = out
        .chunks
        .iter()
        .map(|c| (c.start_line, c.end_line, c.local_path.as_str()))
        .collect();
    report.check(found == expected, || {
        format!("sections differ:\n    found    {found:?}\n    expected {expected:?}")
    });
    for c in &out.chunks[1..] {
        let title = c.local_path.rsplit(" > ").next().unwrap_or_default();
        report.check(c.kind == K::Section && c.symbol == title, || {
            format!("{} should be the section {title:?}", describe(c))
        });
    }
    report.check(out.chunks[0].kind == K::Code, || {
        format!("the preamble should be glue: {}", describe(&out.chunks[0]))
    });
    // Headings are symbols too, with the same ranges.
    let symbols: Vec<(u32, u32, &str)> = out
        .symbols
        .iter()
        .map(|s| (s.start_line, s.end_line, s.local_path.as_str()))
        .collect();
    report.check(symbols == expected[1..], || {
        format!("section symbols differ: {symbols:?}")
    });
    // Fences keep `#` lines and underlines; indented code keeps its `#` line.
    for (line, text) in [
        (15, "# install the package"),
        (26, "# a comment in a fence, not a heading"),
        (29, "=================="),
        (38, "    # an indented code block, not a heading"),
        (49, "#hashtag lines"),
    ] {
        report.check(
            out.chunks
                .iter()
                .any(|c| contains_line(c, line) && c.content.contains(text)),
            || format!("line {line} ({text:?}) is not inside a section"),
        );
    }
    report.finish(&out);
}

#[test]
fn markdown_front_matter_is_not_a_heading() {
    // The closing `---` of YAML front matter is not the underline of a setext heading.
    let source = "---\ntitle: Guide\nlayout: page\n---\n\n# Guide\n\nSee the sections below.\n";
    let out = chunk_file(source, Language::Markdown);
    let mut report = Report::new("markdown front matter");
    general_checks(source, &out, &mut report);
    let symbols: Vec<(&str, u32, u32)> = out
        .symbols
        .iter()
        .map(|s| (s.local_path.as_str(), s.start_line, s.end_line))
        .collect();
    report.check(symbols == [("Guide", 6, 8)], || {
        format!("the only heading is `Guide` (6-8), found {symbols:?}")
    });
    report.finish(&out);
}

/// Checks that a file without structure is cut into overlapping line windows covering it.
fn check_line_windows(source: &str, lang: Language, min_windows: usize) -> Option<String> {
    let out = chunk_file(source, lang);
    let mut report = Report::new(format!("{} line windows", lang.name()));
    general_checks(source, &out, &mut report);
    let last_line = source
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(row, _)| row as u32 + 1)
        .last()
        .unwrap_or(0);
    report.check(out.chunks.len() >= min_windows, || {
        format!(
            "{} windows, expected at least {min_windows}",
            out.chunks.len()
        )
    });
    report.check(out.symbols.is_empty(), || {
        "a text file has no symbols".to_owned()
    });
    report.check(
        out.chunks.first().is_some_and(|c| c.start_line == 1),
        || "the first window starts at line 1".to_owned(),
    );
    report.check(
        out.chunks.last().is_some_and(|c| c.end_line == last_line),
        || format!("the last window ends at line {last_line}"),
    );
    for c in &out.chunks {
        report.check(
            c.kind == K::Text && c.local_path.is_empty() && c.names.is_empty(),
            || format!("{} should be an anonymous text window", describe(c)),
        );
        report.check(approx_tokens(&c.content) <= TARGET_TOKENS + SLACK, || {
            format!("{} is larger than a window", describe(c))
        });
    }
    for pair in out.chunks.windows(2) {
        report.check(pair[1].start_line <= pair[0].end_line, || {
            format!(
                "windows {} and {} do not overlap",
                describe(&pair[0]),
                describe(&pair[1])
            )
        });
    }
    report.outcome(&out)
}

#[test]
fn json_is_cut_into_line_windows() {
    let source = read_fixture(&["chunk", "settings.json"]);
    assert_all_passed(
        check_line_windows(&source, Language::Json, 2)
            .into_iter()
            .collect(),
    );
}

#[test]
fn plain_text_is_cut_into_line_windows() {
    let source: String = (1..=120)
        .map(|i| format!("Release note {i}: fixed the parser for input number {i}.\n\n"))
        .collect();
    let messages = [
        check_line_windows(&source, Language::Text, 3),
        check_line_windows("one short line\nand another\n", Language::Text, 1),
    ];
    assert_all_passed(messages.into_iter().flatten().collect());
}

// ---------------------------------------------------------------------------------------------
// Hashes and determinism, over every fixture
// ---------------------------------------------------------------------------------------------

fn all_fixtures() -> Vec<(Language, String)> {
    let mut all: Vec<(Language, String)> = LANG_FIXTURES
        .iter()
        .map(|&(lang, _)| (lang, lang_fixture(lang)))
        .collect();
    all.push((Language::Markdown, read_fixture(&["chunk", "guide.md"])));
    all.push((Language::Json, read_fixture(&["chunk", "settings.json"])));
    all.push((Language::Bash, read_fixture(&["chunk", "deploy.sh"])));
    all
}

#[test]
fn content_hash_is_the_hash_of_the_content() {
    for (lang, source) in all_fixtures() {
        let out = chunk_file(&source, lang);
        assert!(!out.chunks.is_empty(), "{}: no chunks", lang.name());
        for c in &out.chunks {
            assert_eq!(
                c.content_hash,
                content_hash(c.content.as_bytes()),
                "{}: {}",
                lang.name(),
                describe(c)
            );
        }
    }
}

#[test]
fn chunking_is_deterministic() {
    for (lang, source) in all_fixtures() {
        let first = chunk_file(&source, lang);
        // Chunk something else in between, so no parser state can leak into the second run.
        let _ = chunk_file("def other():\n    return 1\n", Language::Python);
        let second = chunk_file(&source, lang);
        assert_eq!(first, second, "{}: two runs differ", lang.name());
    }
}

// ---------------------------------------------------------------------------------------------
// Generated sources: splitting oversized methods and merging tiny functions
// ---------------------------------------------------------------------------------------------

/// A class whose one method is far over [`MAX_TOKENS`]: `prelude`, 200 lines made from
/// `line` (`{i}` is the line number), `method_end`, then `after`.
struct BigMethod {
    lang: Language,
    prelude: &'static str,
    /// Text of the method's doc comment, decorator or annotation line in the prelude.
    doc: &'static str,
    line: &'static str,
    method_end: &'static str,
    after: &'static str,
    /// Local path of the method.
    path: &'static str,
    /// Header line the windows carry as context (`None`: declared outside its type).
    header: Option<&'static str>,
}

impl BigMethod {
    /// The source, the method's first line (its doc line) and its last line.
    fn build(&self) -> (String, u32, u32) {
        let mut source = self.prelude.to_owned();
        for i in 0..200 {
            source.push_str(&self.line.replace("{i}", &i.to_string()));
            source.push('\n');
        }
        source.push_str(self.method_end);
        let last_line = source.lines().count() as u32;
        source.push_str(self.after);
        let first_line = self
            .prelude
            .lines()
            .position(|l| l.contains(self.doc))
            .map(|row| row as u32 + 1)
            .unwrap_or_else(|| panic!("{:?} is not in the prelude", self.doc));
        (source, first_line, last_line)
    }
}

fn big_methods() -> Vec<BigMethod> {
    vec![
        BigMethod {
            lang: Language::Python,
            prelude: "\
import functools


class Store:
    \"\"\"Holds rows and computes totals.\"\"\"

    @functools.lru_cache(maxsize=None)
    def load(self, rows):
        total = 0
",
            doc: "@functools",
            line: "        total += compute_value_{i}(rows, {i}) * factor_{i}",
            method_end: "        return total\n",
            after: "\n\ndef main():\n    print(Store().load([]))\n",
            path: "Store.load",
            header: Some("class Store:"),
        },
        BigMethod {
            lang: Language::Rust,
            prelude: "\
/// Rows and their totals.
pub struct Store {
    rows: Vec<u64>,
}

impl Store {
    /// Loads every row.
    #[inline(never)]
    pub fn load(&self) -> u64 {
        let mut total = 0;
",
            doc: "/// Loads every row.",
            line: "        total += compute_value_{i}(&self.rows, {i}) * FACTOR_{i};",
            method_end: "        total\n    }\n",
            after: "}\n",
            path: "Store::load",
            header: Some("impl Store {"),
        },
        BigMethod {
            lang: Language::Java,
            prelude: "\
package com.example;

public class Store {
    private final long[] rows = new long[0];

    /** Loads every row. */
    @Override
    public long load() {
        long total = 0;
",
            doc: "/** Loads every row. */",
            line: "        total += computeValue{i}(rows, {i}) * FACTOR_{i};",
            method_end: "        return total;\n    }\n",
            after: "}\n",
            path: "Store.load",
            header: Some("public class Store {"),
        },
        BigMethod {
            lang: Language::TypeScript,
            prelude: "\
import { computeValue } from \"./values\";

export class Store {
  private rows: number[] = [];

  /** Loads every row. */
  load(): number {
    let total = 0;
",
            doc: "/** Loads every row. */",
            line: "    total += computeValue(this.rows, {i}) * FACTOR_{i};",
            method_end: "    return total;\n  }\n",
            after: "}\n",
            path: "Store.load",
            header: Some("export class Store {"),
        },
        BigMethod {
            lang: Language::Cpp,
            prelude: "\
#include <vector>

class Store {
public:
    /// Loads every row.
    long load() const {
        long total = 0;
",
            doc: "/// Loads every row.",
            line: "        total += compute_value_{i}(rows_, {i}) * FACTOR_{i};",
            method_end: "        return total;\n    }\n",
            after: "\nprivate:\n    std::vector<long> rows_;\n};\n",
            path: "Store::load",
            header: Some("class Store {"),
        },
        BigMethod {
            lang: Language::Go,
            prelude: "\
package store

// Store holds rows.
type Store struct {
\trows []int64
}

// Load computes the total of every row.
func (s *Store) Load() int64 {
\ttotal := int64(0)
",
            doc: "// Load computes",
            line: "\ttotal += computeValue{i}(s.rows, {i}) * factor{i}",
            method_end: "\treturn total\n}\n",
            after: "",
            path: "Store.Load",
            header: None,
        },
        BigMethod {
            lang: Language::Ruby,
            prelude: "\
class Store
  attr_reader :rows

  # Loads every row.
  def load
    total = 0
",
            doc: "# Loads every row.",
            line: "    total += compute_value_{i}(rows, {i}) * FACTOR_{i}",
            method_end: "    total\n  end\n",
            after: "end\n",
            path: "Store.load",
            header: Some("class Store"),
        },
    ]
}

#[test]
fn oversized_methods_are_split_into_windows() {
    let mut messages = Vec::new();
    for case in big_methods() {
        let (source, first_line, last_line) = case.build();
        let out = chunk_file(&source, case.lang);
        let mut report = Report::new(format!("{} oversized method", case.lang.name()));
        general_checks(&source, &out, &mut report);
        let method = case.path.rsplit(['.', ':']).next().unwrap_or_default();
        let windows: Vec<&Chunk> = out
            .chunks
            .iter()
            .filter(|c| c.local_path == case.path)
            .collect();
        report.check(windows.len() >= 3, || {
            format!(
                "{} windows for `{}`, expected several",
                windows.len(),
                case.path
            )
        });
        for w in &windows {
            report.check(w.kind == K::Method, || {
                format!("{} is not a method", describe(w))
            });
            if let Some(header) = case.header {
                report.check(w.context.contains(header), || {
                    format!("{} lacks the header {header:?}", describe(w))
                });
            }
            report.check(lists_name(&w.names, method), || {
                format!("{} does not list the method", describe(w))
            });
            let tokens = approx_tokens(&w.content);
            report.check(tokens <= MAX_TOKENS + SLACK, || {
                format!("{} has {tokens} tokens", describe(w))
            });
        }
        if let (Some(first), Some(last)) = (windows.first(), windows.last()) {
            // The window may also hold a bare header merged into it, never lose the doc line.
            report.check(first.start_line <= first_line, || {
                format!(
                    "the first window should start at the doc line {} (or above): {}",
                    first_line,
                    describe(first)
                )
            });
            report.check(last.end_line >= last_line, || {
                format!(
                    "the last window should reach the method's end, line {}: {}",
                    last_line,
                    describe(last)
                )
            });
        }
        for pair in windows.windows(2) {
            report.check(
                pair[1].start_line <= pair[0].end_line && pair[1].start_line > pair[0].start_line,
                || {
                    format!(
                        "windows {} and {} should overlap by at least a line and advance",
                        describe(pair[0]),
                        describe(pair[1])
                    )
                },
            );
        }
        let symbol = out.symbols.iter().find(|s| s.local_path == case.path);
        report.check(
            symbol.is_some_and(|s| {
                s.kind == K::Method && s.start_line == first_line && s.end_line == last_line
            }),
            || {
                format!(
                    "symbol of `{}` should span {}-{}",
                    case.path, first_line, last_line
                )
            },
        );
        messages.extend(report.outcome(&out));
    }
    assert_all_passed(messages);
}

/// Sources of many tiny functions (or methods), with the names they define.
fn tiny_functions() -> Vec<(Language, String, Vec<String>)> {
    // Enough that they cannot all fit one merged chunk.
    const N: usize = 80;
    let names = |prefix: &str| -> Vec<String> { (0..N).map(|i| format!("{prefix}{i}")).collect() };
    let python: String = (0..N)
        .map(|i| format!("def f_{i}(x):\n    return x + {i}\n\n\n"))
        .collect();
    let rust: String = (0..N)
        .map(|i| format!("fn f_{i}(x: u32) -> u32 {{\n    x + {i}\n}}\n\n"))
        .collect();
    let typescript: String = (0..N)
        .map(|i| format!("export function f{i}(x: number): number {{\n  return x + {i};\n}}\n\n"))
        .collect();
    let java = format!(
        "public class Util {{\n{}}}\n",
        (0..N)
            .map(|i| format!("    static int f{i}(int x) {{\n        return x + {i};\n    }}\n\n"))
            .collect::<String>()
    );
    let go = format!(
        "package util\n\n{}",
        (0..N)
            .map(|i| format!("func F{i}(x int) int {{\n\treturn x + {i}\n}}\n\n"))
            .collect::<String>()
    );
    vec![
        (Language::Python, python, names("f_")),
        (Language::Rust, rust, names("f_")),
        (Language::TypeScript, typescript, names("f")),
        (Language::Java, java, names("f")),
        (Language::Go, go, names("F")),
    ]
}

#[test]
fn tiny_functions_are_merged() {
    let mut messages = Vec::new();
    for (lang, source, names) in tiny_functions() {
        let out = chunk_file(&source, lang);
        let mut report = Report::new(format!("{} tiny functions", lang.name()));
        general_checks(&source, &out, &mut report);
        report.check(
            out.chunks.len() > 1 && out.chunks.len() <= names.len() / 3,
            || {
                format!(
                    "{} chunks for {} tiny functions",
                    out.chunks.len(),
                    names.len()
                )
            },
        );
        for c in &out.chunks {
            let tokens = approx_tokens(&c.content);
            report.check(tokens <= MergeSizes::CODE.max_tokens, || {
                format!("{} has {tokens} tokens, over the merge budget", describe(c))
            });
        }
        // Runs grow past the fine sizes: code merges up to a window.
        let largest = out
            .chunks
            .iter()
            .map(|c| approx_tokens(&c.content))
            .max()
            .unwrap_or(0);
        report.check(largest > MergeSizes::FINE.max_tokens, || {
            format!("the largest merged run has {largest} tokens, within the fine sizes")
        });
        for name in &names {
            let holders = out
                .chunks
                .iter()
                .filter(|c| lists_name(&c.names, name))
                .count();
            report.check(holders == 1, || {
                format!("`{name}` is listed by {holders} chunks, expected exactly one")
            });
        }
        messages.extend(report.outcome(&out));
    }
    assert_all_passed(messages);
}

/// A class too large for one chunk is cut into its header and its members; its closing brace
/// (and any field between members) joins a member, which must not then list the class's name:
/// a search for the class would take that member for its definition.
#[test]
fn a_member_that_absorbs_its_class_tail_does_not_name_the_class() {
    let mut source = String::from("public class BoundedReader {\n    private int limit;\n\n");
    for i in 0..12 {
        let _ = write!(
            source,
            "    public int read{i}(char[] buffer, int offset) {{\n        int total = offset + {i};\n        for (int k = 0; k < buffer.length; k++) {{\n            total += buffer[k] * limit + k - {i};\n        }}\n        return total;\n    }}\n\n"
        );
    }
    source.push_str("    private int count;\n}\n");
    let out = chunk_file(&source, Language::Java);
    let holders: Vec<String> = out
        .chunks
        .iter()
        .filter(|c| lists_name(&c.names, "BoundedReader"))
        .map(describe)
        .collect();
    assert!(
        out.chunks.len() > 2,
        "the class is split: {}",
        out.chunks.len()
    );
    assert_eq!(
        holders.len(),
        1,
        "only the class's header names it: {holders:#?}"
    );
    let last = out.chunks.last().expect("the class has chunks");
    assert!(last.content.trim_end().ends_with('}') && last.symbol.starts_with("read"));
}

/// `class LEVELDB_EXPORT Status {`: an export or lock macro between the keyword and the name
/// (tree-sitter-cpp cannot expand it) still gives the class and its members, and the chunks
/// show the file's text, macro included.
#[test]
fn cpp_classes_annotated_with_macros_are_classes() {
    let source = "\
namespace leveldb {

class LEVELDB_EXPORT Status {
 public:
  Status() noexcept : state_(nullptr) {}
  bool ok() const { return (state_ == nullptr); }

 private:
  const char* state_;
};

class LOCKABLE Mutex final {
 public:
  void Lock() EXCLUSIVE_LOCK_FUNCTION() {}
  void Unlock() const UNLOCK_FUNCTION(mu_) NO_THREAD_SAFETY_ANALYSIS { }
};

struct EXPORT_API(db) Options : public Base {
  int write_buffer_size = 4;
};

// Not a macro: a variable of a class type, and a class named in capitals.
class Status STATUS_OK;
class URL {
  int port;
};

}  // namespace leveldb
";
    let out = chunk_file(source, Language::Cpp);
    let symbols: Vec<(String, u32)> = out
        .symbols
        .iter()
        .map(|s| (s.local_path.clone(), s.start_line))
        .collect();
    for (path, line) in [
        ("leveldb::Status", 3),
        ("leveldb::Status::ok", 6),
        ("leveldb::Mutex", 12),
        ("leveldb::Mutex::Lock", 14),
        ("leveldb::Mutex::Unlock", 15),
        ("leveldb::Options", 18),
        ("leveldb::URL", 24),
    ] {
        assert!(
            symbols.contains(&(path.to_owned(), line)),
            "{path} at {line} in {symbols:?}"
        );
    }
    assert_all_passed(content_is_the_line_range(source, &out));
    assert!(
        out.chunks
            .iter()
            .any(|c| c.content.contains("class LEVELDB_EXPORT Status {"))
    );
}

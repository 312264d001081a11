//! Semantic chunking and symbol extraction.
//!
//! A file becomes a list of [`Chunk`]s that follow its semantic units: functions, methods,
//! classes and other definitions found by the language's definitions query. Units larger than
//! [`MAX_TOKENS`] are split (a class into its members, each carrying the class header as
//! context; a long function into overlapping windows); small neighbours are merged. Files
//! without a grammar are chunked by Markdown headings or by line windows. All definitions are
//! returned as [`Symbol`]s from the same pass.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser, QueryCursor, StreamingIterator};

use crate::hash::content_hash;
use crate::lang::{Language, SyntaxQuery};
use crate::refs::{MAX_REFS, Ref};

/// Bumped whenever the chunks, symbols or references produced for a text change, or which
/// files are skipped (their remembered skips are then read again too). It seeds
/// the file version hash ([`crate::hash::file_hash`]), so versions chunked by another version
/// are unknown content, parsed again when their paths are next read (the store has every path
/// re-read once when it sees a new version); chunk hashes, and so vectors, are unaffected.
pub const VERSION: u32 = 21;

/// A unit above this size is split: embedding models truncate around 256–512 tokens and an
/// agent should be able to read a hit whole.
pub const MAX_TOKENS: usize = 480;
/// Size of the windows that oversized units are cut into, leaving room for the header.
pub const TARGET_TOKENS: usize = 320;
/// When neighbouring chunks merge: both of one scope and adjacent, one of them smaller than
/// `min_tokens`, together within `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeSizes {
    pub min_tokens: usize,
    pub max_tokens: usize,
}

impl MergeSizes {
    /// Code: a unit under about a dozen lines (a getter, a builder method, a lone brace or
    /// import line) is not worth a hit of its own, and is best found, and read, with the
    /// neighbours it works with; a merged run stops at the size of a split window, so a hit
    /// on one tiny unit does not drag in a page of unrelated ones. Measured with the quality
    /// benchmark (benches/quality/README.md, "Chunk sizes").
    pub const CODE: MergeSizes = MergeSizes {
        min_tokens: 120,
        max_tokens: TARGET_TOKENS,
    };
    /// Languages without definitions (Markdown sections, line windows of JSON, YAML, SQL,
    /// text, ...), and the unit boundaries of the grammar tests: only fragments merge.
    pub const FINE: MergeSizes = MergeSizes {
        min_tokens: 40,
        max_tokens: 160,
    };
}
/// Overlap between consecutive windows, so a statement cut at a boundary is whole in one of them.
pub const OVERLAP_TOKENS: usize = 40;
/// Parsing that takes longer than this falls back to line windows (pathological inputs).
pub const PARSE_TIMEOUT: Duration = Duration::from_secs(3);
/// Upper bound on query matches in progress per file, against pathological nesting.
const MATCH_LIMIT: u32 = 1 << 16;
/// Context lines are capped so deeply nested or very long signatures cannot bloat every chunk.
const CONTEXT_LINE_CHARS: usize = 200;
/// Glue this small (a closing brace, a bare header) never stands alone.
const LONE_TOKENS: usize = 8;

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    Function,
    Method,
    Class,
    Interface,
    Struct,
    Enum,
    Trait,
    Impl,
    Module,
    Type,
    Macro,
    Constant,
    /// Top-level statements between definitions (imports, module code).
    Code,
    /// A Markdown section.
    Section,
    /// A line window of a file without structure.
    Text,
    /// A module-level variable (Go's package-level `var`).
    Variable,
    /// A member of an enum (a Rust variant, a Java enum constant, a C enumerator).
    Variant,
    /// A field or property of a struct, class or interface (`Config.timeout`).
    Field,
}

impl ChunkKind {
    // Stored outlines name a kind by its position here: new kinds go at the end.
    pub const ALL: [ChunkKind; 18] = [
        ChunkKind::Function,
        ChunkKind::Method,
        ChunkKind::Class,
        ChunkKind::Interface,
        ChunkKind::Struct,
        ChunkKind::Enum,
        ChunkKind::Trait,
        ChunkKind::Impl,
        ChunkKind::Module,
        ChunkKind::Type,
        ChunkKind::Macro,
        ChunkKind::Constant,
        ChunkKind::Code,
        ChunkKind::Section,
        ChunkKind::Text,
        ChunkKind::Variable,
        ChunkKind::Variant,
        ChunkKind::Field,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Interface => "interface",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Trait => "trait",
            ChunkKind::Impl => "impl",
            ChunkKind::Module => "module",
            ChunkKind::Type => "type",
            ChunkKind::Macro => "macro",
            ChunkKind::Constant => "constant",
            ChunkKind::Code => "code",
            ChunkKind::Section => "section",
            ChunkKind::Text => "text",
            ChunkKind::Variable => "variable",
            ChunkKind::Variant => "variant",
            ChunkKind::Field => "field",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<ChunkKind> {
        ChunkKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the chunk is a definition (as opposed to glue code, prose or a text window).
    #[must_use]
    pub fn is_definition(self) -> bool {
        !matches!(self, ChunkKind::Code | ChunkKind::Section | ChunkKind::Text)
    }

    /// A named value (a constant, a module-level variable, an enum's member, a field): it
    /// describes no behaviour.
    #[must_use]
    pub fn is_value(self) -> bool {
        matches!(
            self,
            ChunkKind::Constant | ChunkKind::Variable | ChunkKind::Variant | ChunkKind::Field
        )
    }

    /// A member that only describes its type's data (an enum's member, a struct's field):
    /// members alone do not split their type.
    #[must_use]
    pub fn is_member(self) -> bool {
        matches!(self, ChunkKind::Variant | ChunkKind::Field)
    }

    /// Kinds whose nested functions are methods.
    #[must_use]
    pub fn is_type_like(self) -> bool {
        matches!(
            self,
            ChunkKind::Class
                | ChunkKind::Interface
                | ChunkKind::Struct
                | ChunkKind::Enum
                | ChunkKind::Trait
                | ChunkKind::Impl
        )
    }
}

/// One indexed piece of a file. Lines are 1-based and inclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub start_line: u32,
    pub end_line: u32,
    pub kind: ChunkKind,
    /// The unit's own name ("" for glue code and text windows).
    pub symbol: String,
    /// Symbol path inside the file (`Class.method`); the module prefix is added per path.
    pub local_path: String,
    /// Names of every definition that starts inside the chunk, space separated.
    pub names: String,
    /// Header lines of the enclosing definitions (`class Store:`), one per line.
    pub context: String,
    /// The source text of the line range.
    pub content: String,
    pub content_hash: i64,
}

/// A definition found in a file. Lines are 1-based and inclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: ChunkKind,
    pub local_path: String,
    pub start_line: u32,
    pub end_line: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChunks {
    pub chunks: Vec<Chunk>,
    pub symbols: Vec<Symbol>,
    /// Calls, imports and inheritance, in the same parse (empty without a grammar).
    pub refs: Vec<Ref>,
    /// True when the grammar could not be used (timeout or no tree) and line windows were used.
    pub fell_back: bool,
}

/// The text indexed and embedded for a chunk: a short header naming where it lives, the
/// enclosing headers, then the content.
#[must_use]
pub fn index_text(path: &str, symbol_path: &str, context: &str, content: &str) -> String {
    let mut text =
        String::with_capacity(path.len() + symbol_path.len() + context.len() + content.len() + 3);
    text.push_str(path);
    if !symbol_path.is_empty() {
        text.push(' ');
        text.push_str(symbol_path);
    }
    text.push('\n');
    if !context.is_empty() {
        text.push_str(context);
        text.push('\n');
    }
    text.push_str(content);
    text
}

/// Joins a module path and a local symbol path with the language's separator.
#[must_use]
pub fn join_symbol_path(module: &str, local: &str, lang: Language) -> String {
    match (module.is_empty(), local.is_empty()) {
        (true, _) => local.to_owned(),
        (false, true) => module.to_owned(),
        (false, false) => format!("{module}{}{local}", separator(lang)),
    }
}

/// The symbol path shown to people: [`join_symbol_path`] without the class a Java, Kotlin or
/// Scala file is named after said twice (`org.jsoup.select.QueryParser.parse`, not
/// `...QueryParser.QueryParser.parse`). The index analyses the joined path as it always has.
#[must_use]
pub fn shown_symbol_path(module: &str, local: &str, lang: Language) -> String {
    let named_after = matches!(lang, Language::Java | Language::Kotlin | Language::Scala)
        && module.rsplit('.').next().is_some_and(|stem| {
            local
                .strip_prefix(stem)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        });
    match module.rsplit_once('.') {
        Some((package, _)) if named_after => join_symbol_path(package, local, lang),
        None if named_after => local.to_owned(),
        _ => join_symbol_path(module, local, lang),
    }
}

fn separator(lang: Language) -> &'static str {
    if lang == Language::Markdown {
        " > "
    } else {
        lang.path_separator()
    }
}

/// Approximates the number of model tokens in `text` without a tokenizer: each run of word
/// characters counts one token per six bytes (BPE splits long identifiers), each other visible
/// byte counts one. Close enough to size chunks; budgets shown to users use a real tokenizer.
#[must_use]
pub fn approx_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut run = 0usize;
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 {
            run += 1;
        } else {
            if run > 0 {
                tokens += run.div_ceil(6);
                run = 0;
            }
            if !b.is_ascii_whitespace() {
                tokens += 1;
            }
        }
    }
    tokens + run.div_ceil(6)
}

/// Chunks one file. `source` is the whole file; never fails: a grammar that cannot be used
/// degrades to line windows.
#[must_use]
pub fn chunk_file(source: &str, lang: Language) -> FileChunks {
    // Code is cut into definitions; everything else into sections or line windows.
    let sizes = if lang.definitions_query_source().is_some() {
        MergeSizes::CODE
    } else {
        MergeSizes::FINE
    };
    chunk_file_with(source, lang, sizes)
}

/// [`chunk_file`] with explicit merge sizes (a grammar that cannot be used falls back to line
/// windows, whatever the sizes).
#[must_use]
pub fn chunk_file_with(source: &str, lang: Language, sizes: MergeSizes) -> FileChunks {
    let lines = Lines::new(source);
    let mut out = Emitter::new(&lines);
    let mut fell_back = false;
    let mut refs = Vec::new();
    let unmacroed = if lang == Language::Cpp {
        unmacro_classes(source)
    } else {
        None
    };
    match lang {
        Language::Markdown => markdown_sections(&lines, &mut out),
        Language::Toml => sections(&lines, &mut out, toml_tables(&lines), lang),
        Language::Yaml => sections(&lines, &mut out, yaml_keys(&lines), lang),
        _ => match lang.grammar().zip(lang.syntax_query()) {
            Some((grammar, query)) => {
                match parse(unmacroed.as_deref().unwrap_or(source.as_bytes()), &grammar) {
                    Some(tree) => {
                        let defs;
                        (defs, refs) = definitions_and_refs(&tree, lang, query, source, &lines);
                        out.symbols = defs.symbols(separator(lang));
                        out.range(&defs.roots, 0, lines.len(), &Scope::root(), false);
                    }
                    None => {
                        fell_back = true;
                        out.windows(0, lines.len(), ChunkKind::Text, "", "", "");
                    }
                }
            }
            None => out.windows(0, lines.len(), ChunkKind::Text, "", "", ""),
        },
    }
    let chunks = merge_small(&lines, out.chunks, sizes);
    FileChunks {
        chunks: chunks
            .into_iter()
            .map(|c| c.finish(&lines, separator(lang)))
            .collect(),
        symbols: out.symbols,
        refs,
        fell_back,
    }
}

/// `class LEVELDB_EXPORT Status {`: tree-sitter-cpp cannot know that an export or lock
/// annotation macro expands to an attribute, reads the class as a function returning it, and
/// the class and its members go missing. The text the parser reads has such macros (upper-case
/// words, with or without arguments, between `class`/`struct`/`union` and the name) blanked,
/// byte for byte, so every offset and line stays that of the file; `None` when there are none.
fn unmacro_classes(source: &str) -> Option<Vec<u8>> {
    let b = source.as_bytes();
    let word = |at: usize| {
        let end = at + b[at..].iter().take_while(|&&c| is_ident_byte(c)).count();
        (at < end && !b[at].is_ascii_digit()).then_some(end)
    };
    let skip_space = |at: usize| {
        at + b[at..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count()
    };
    let mut blanks: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let Some(end) = word(at) else {
            at += 1;
            continue;
        };
        let keyword = matches!(&b[at..end], b"class" | b"struct" | b"union")
            && (at == 0 || !is_ident_byte(b[at - 1]));
        if !keyword {
            at = end;
            continue;
        }
        let mut macros = Vec::new();
        let mut next = skip_space(end);
        while let Some(token_end) = word(next) {
            let shaped = is_macro(&b[next..token_end]);
            // A macro's arguments, as in `EXPORT_API(core)`.
            let mut past = token_end;
            if b.get(past) == Some(&b'(') {
                let close = b[past..].iter().position(|&c| c == b')' || c == b'\n');
                match close {
                    Some(close) if b[past + close] == b')' => past += close + 1,
                    _ => break,
                }
            }
            let after = skip_space(past);
            if !shaped || after == past || word(after).is_none() {
                break;
            }
            macros.push((next, past));
            next = after;
        }
        let named = word(next).map(skip_space);
        let opens = named.is_some_and(|after| {
            matches!(b.get(after), Some(b'{' | b':' | b';')) || b[after..].starts_with(b"final")
        });
        if opens {
            blanks.extend(macros);
        }
        at = end;
    }
    // `void Lock() EXCLUSIVE_LOCK_FUNCTION(mu_) {`, `int x() const GUARDED_BY(mu_);`: an
    // annotation macro after a function's parameters reads as its declarator.
    let mut at = 0;
    while at < b.len() {
        let Some(end) = word(at) else {
            at += 1;
            continue;
        };
        if is_macro(&b[at..end]) && (at == 0 || !is_ident_byte(b[at - 1])) {
            // With its arguments, or bare (`NO_THREAD_SAFETY_ANALYSIS`).
            let close = if b.get(end) == Some(&b'(') {
                b[end..]
                    .iter()
                    .position(|&c| c == b')' || c == b'\n')
                    .filter(|&close| b[end + close] == b')')
                    .map(|close| close + 1)
            } else {
                Some(0)
            };
            if let Some(close) = close {
                let past = end + close;
                let before = b[..at].trim_ascii_end();
                let next = skip_space(past);
                let follows_parameters = before.ends_with(b")")
                    || before.ends_with(b" const")
                    || before.ends_with(b" override");
                // Several may follow one another (`LOCKS_EXCLUDED(a) SHARED_LOCKS(b) {`).
                let ends = matches!(b.get(next), Some(b'{' | b';' | b'='))
                    || word(next).is_some_and(|end| is_macro(&b[next..end]));
                if follows_parameters && ends {
                    blanks.push((at, past));
                }
                at = past;
                continue;
            }
        }
        at = end;
    }
    if blanks.is_empty() {
        return None;
    }
    let mut text = b.to_vec();
    for (start, end) in blanks {
        text[start..end].fill(b' ');
    }
    Some(text)
}

/// An upper-case word of two letters or more, as macros are named (`LEVELDB_EXPORT`).
fn is_macro(token: &[u8]) -> bool {
    token.len() > 1
        && token.iter().any(u8::is_ascii_uppercase)
        && token
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn parse(source: &[u8], grammar: &tree_sitter::Language) -> Option<tree_sitter::Tree> {
    thread_local! {
        static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
    }
    PARSER.with(|parser| {
        let mut parser = parser.borrow_mut();
        parser.set_language(grammar).ok()?;
        let started = Instant::now();
        let mut on_progress = |_: &tree_sitter::ParseState| {
            if started.elapsed() > PARSE_TIMEOUT {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let mut read = |offset: usize, _| source.get(offset..).unwrap_or_default();
        let options = ParseOptions::new().progress_callback(&mut on_progress);
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        // A cancelled parse leaves state behind that would leak into the next file.
        parser.reset();
        tree
    })
}

/// Line table of a file: byte offset of every line start, and approximate tokens per line.
struct Lines<'a> {
    source: &'a str,
    starts: Vec<usize>,
    /// `token_prefix[i]` = tokens in lines `0..i`.
    token_prefix: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(source: &'a str) -> Self {
        let starts = line_starts(source);
        let mut token_prefix = Vec::with_capacity(starts.len() + 1);
        token_prefix.push(0);
        let mut total = 0;
        for row in 0..starts.len() {
            total += approx_tokens(line_text(source, &starts, row));
            token_prefix.push(total);
        }
        Lines {
            source,
            starts,
            token_prefix,
        }
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    fn line(&self, row: usize) -> &'a str {
        line_text(self.source, &self.starts, row)
    }

    /// Tokens of rows `lo..hi`.
    fn tokens(&self, lo: usize, hi: usize) -> usize {
        self.token_prefix[hi] - self.token_prefix[lo]
    }

    fn is_blank(&self, row: usize) -> bool {
        self.line(row).trim().is_empty()
    }

    /// Source text of rows `lo..hi`, without the final newline.
    fn text(&self, lo: usize, hi: usize) -> &'a str {
        rows_text(self.source, &self.starts, lo, hi)
    }
}

/// The name a definition's `@name` capture gives it: its text on one line, and a Ruby
/// attribute's symbol (`attr_reader :name`) without its colon. `None` when nothing is left.
#[must_use]
pub fn definition_name(name: Node<'_>, source: &str) -> Option<String> {
    let text = name.utf8_text(source.as_bytes()).ok()?;
    let text = if name.kind() == "simple_symbol" {
        text.trim_start_matches(':')
    } else {
        text
    };
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

/// Byte offset where each line of `source` starts (a trailing newline opens no line).
#[must_use]
pub fn line_starts(source: &str) -> Vec<usize> {
    if source.is_empty() {
        return Vec::new();
    }
    let mut starts = vec![0];
    starts.extend(memchr_newlines(source.as_bytes()).map(|i| i + 1));
    if starts.last() == Some(&source.len()) {
        starts.pop();
    }
    starts
}

/// The text of 1-based lines `start_line..=end_line`, as a chunk's `content` holds it: the
/// rows as they are, without the final line ending. Empty when out of range.
#[must_use]
pub fn lines_text<'a>(
    source: &'a str,
    starts: &[usize],
    start_line: u32,
    end_line: u32,
) -> &'a str {
    let lo = (start_line as usize).saturating_sub(1);
    let hi = (end_line as usize).min(starts.len());
    rows_text(source, starts, lo, hi)
}

fn rows_text<'a>(source: &'a str, starts: &[usize], lo: usize, hi: usize) -> &'a str {
    if lo >= hi {
        return "";
    }
    let start = starts[lo];
    let end = starts.get(hi).map_or(source.len(), |&next| next - 1);
    strip_eol(&source[start..end.max(start)])
}

/// Drops one line ending (`\n` or `\r\n`) and any carriage return before it.
fn strip_eol(text: &str) -> &str {
    text.strip_suffix('\n')
        .unwrap_or(text)
        .trim_end_matches('\r')
}

fn line_text<'a>(source: &'a str, starts: &[usize], row: usize) -> &'a str {
    let start = starts[row];
    let end = starts.get(row + 1).map_or(source.len(), |&next| next - 1);
    strip_eol(&source[start..end.max(start)])
}

fn memchr_newlines(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', bytes)
}

/// A definition in the nesting forest. Rows are 0-based; `hi` is exclusive.
#[derive(Debug)]
struct Def {
    kind: ChunkKind,
    name: String,
    local_path: String,
    lo: usize,
    hi: usize,
    /// First line of the definition itself (after doc comments), used as context for members.
    header: String,
    /// Row of that line.
    head: usize,
    children: Vec<Def>,
}

struct Defs {
    roots: Vec<Def>,
}

impl Defs {
    fn symbols(&self, sep: &str) -> Vec<Symbol> {
        fn walk(defs: &[Def], sep: &str, out: &mut Vec<Symbol>) {
            for d in defs {
                out.push(Symbol {
                    name: d.name.clone(),
                    kind: d.kind,
                    local_path: d.local_path.replace('\u{0}', sep),
                    start_line: row_to_line(d.lo),
                    end_line: row_to_line(d.hi.saturating_sub(1).max(d.lo)),
                });
                walk(&d.children, sep, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.roots, sep, &mut out);
        out
    }
}

fn row_to_line(row: usize) -> u32 {
    u32::try_from(row + 1).unwrap_or(u32::MAX)
}

/// Flat definition found by the query, before nesting.
struct RawDef {
    kind: ChunkKind,
    name: String,
    name_start: usize,
    start_byte: usize,
    end_byte: usize,
    lo: usize,
    hi: usize,
    header: String,
    head: usize,
    /// Type a method is declared on outside its body (Go receivers).
    receiver: Option<String>,
}

/// The definitions and the references of a parsed file, from one pass of its language's
/// query.
fn definitions_and_refs(
    tree: &tree_sitter::Tree,
    lang: Language,
    query: &SyntaxQuery,
    source: &str,
    lines: &Lines<'_>,
) -> (Defs, Vec<Ref>) {
    let names = query.query.capture_names();
    let mut cursor = QueryCursor::new();
    cursor.set_match_limit(MATCH_LIMIT);
    let mut raw: Vec<RawDef> = Vec::new();
    let mut refs: Vec<Ref> = Vec::new();
    let mut matches = cursor.matches(&query.query, tree.root_node(), source.as_bytes());
    while let Some(m) = matches.next() {
        if !query.admits(m) {
            continue;
        }
        if query.is_reference(m.pattern_index) {
            if refs.len() < MAX_REFS
                && let Some(r) = crate::refs::from_match(m.captures, names, source, lang)
            {
                refs.push(r);
            }
            continue;
        }
        let mut def: Option<(ChunkKind, Node<'_>)> = None;
        let mut name: Option<Node<'_>> = None;
        let mut receiver: Option<Node<'_>> = None;
        for cap in m.captures {
            let cap_name = names.get(cap.index as usize).copied().unwrap_or_default();
            if cap_name == "name" {
                name = Some(cap.node);
            } else if cap_name == "receiver" {
                receiver = Some(cap.node);
            } else if let Some(kind) = cap_name
                .strip_prefix("definition.")
                .and_then(ChunkKind::from_name)
                .filter(|k| k.is_definition())
            {
                def = Some((kind, cap.node));
            }
        }
        let (Some((kind, node)), Some(name)) = (def, name) else {
            continue;
        };
        let Some(name_text) = definition_name(name, source) else {
            continue;
        };
        // The signature line, past decorators, annotations and template headers.
        let def_row = name.start_position().row.max(node.start_position().row);
        let lo = leading_row(node, lines);
        let mut hi = (last_row(node) + 1).min(lines.len());
        while hi > lo + 1 && lines.is_blank(hi - 1) {
            hi -= 1;
        }
        if lo >= hi {
            continue;
        }
        raw.push(RawDef {
            kind,
            name: name_text,
            name_start: name.start_byte(),
            start_byte: node.start_byte(),
            end_byte: node.end_byte(),
            lo,
            hi,
            header: context_line(lines.line(def_row)),
            head: def_row,
            receiver: receiver
                .and_then(|r| r.utf8_text(source.as_bytes()).ok())
                .map(|r| r.trim_start_matches(['*', '&']).trim().to_owned())
                .filter(|r| !r.is_empty()),
        });
    }
    // Two patterns may capture one definition (e.g. with and without its decorator or export
    // wrapper); keep the widest node per name, and of two as wide the one that is not a mere
    // field (a Java `static final` field is a constant).
    raw.sort_by(|a, b| {
        (
            a.name_start,
            b.end_byte - b.start_byte,
            a.kind == ChunkKind::Field,
        )
            .cmp(&(
                b.name_start,
                a.end_byte - a.start_byte,
                b.kind == ChunkKind::Field,
            ))
    });
    raw.dedup_by_key(|d| d.name_start);
    raw.sort_by(|a, b| (a.start_byte, b.end_byte).cmp(&(b.start_byte, a.end_byte)));
    refs.sort();
    refs.dedup();
    (Defs { roots: nest(raw) }, refs)
}

/// Row where a definition's chunk starts: its own first row, extended over directly preceding
/// comments, attributes and decorators (no blank line in between), so doc comments stay with
/// their unit.
fn leading_row(node: Node<'_>, lines: &Lines<'_>) -> usize {
    let mut lo = node.start_position().row;
    // `prev_sibling` costs O(siblings) in tree-sitter, so only ask when the line above could
    // hold a comment, attribute or decorator at all.
    if lo == 0 || !may_attach(lines.line(lo - 1)) {
        return lo;
    }
    let mut prev = node.prev_sibling();
    while let Some(sib) = prev {
        let kind = sib.kind();
        let attached = kind.contains("comment")
            || kind.contains("attribute")
            || kind.contains("annotation")
            || kind == "decorator";
        let end_row = last_row(sib);
        // The sibling must end on the line right above (or on the same line as) the current start.
        if !attached || end_row + 1 < lo || (end_row < lo && lines.is_blank(end_row + 1)) {
            break;
        }
        // A trailing comment on the previous statement's line belongs to that statement.
        if sib
            .prev_sibling()
            .is_some_and(|p| last_row(p) == sib.start_position().row)
        {
            break;
        }
        lo = sib.start_position().row;
        prev = sib.prev_sibling();
    }
    lo
}

/// Whether a line could end a comment, attribute, annotation or decorator of any language.
fn may_attach(line: &str) -> bool {
    const STARTS: [&str; 10] = ["//", "/*", "*", "#", "@", "--", "[", ";", "'", "\""];
    let line = line.trim();
    !line.is_empty()
        && (STARTS.iter().any(|p| line.starts_with(p))
            || line.ends_with("*/")
            || line.ends_with(']'))
}

/// Last row a node covers: a node ending at column 0 (one that includes its line's newline,
/// like a line comment or a preprocessor line) ends on the row before.
fn last_row(node: Node<'_>) -> usize {
    let end = node.end_position();
    if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    }
}

fn context_line(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(CONTEXT_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// Builds the nesting forest from definitions sorted by (start asc, end desc), reclassifying
/// functions directly inside type-like definitions as methods and computing local paths.
fn nest(raw: Vec<RawDef>) -> Vec<Def> {
    // Stack of open definitions with their end byte; each closes into its parent.
    let mut roots: Vec<Def> = Vec::new();
    let mut stack: Vec<(Def, usize, usize)> = Vec::new(); // (def, start_byte, end_byte)
    for r in raw {
        // One node captured for each of its names (`var a, b = 1, 2`) defines siblings.
        while let Some((_, start, end)) = stack.last() {
            if r.start_byte >= *end || (r.start_byte, r.end_byte) == (*start, *end) {
                close_top(&mut stack, &mut roots);
            } else {
                break;
            }
        }
        if let Some((_, start, end)) = stack.last() {
            // Partial overlap cannot happen in a syntax tree; skip anything that would nest badly.
            if r.end_byte > *end || r.start_byte < *start {
                continue;
            }
        }
        let parent = stack.last().map(|(d, _, _)| d);
        let kind = match parent {
            Some(p) if r.kind == ChunkKind::Function && p.kind.is_type_like() => ChunkKind::Method,
            None if r.receiver.is_some() => ChunkKind::Method,
            _ => r.kind,
        };
        // A parameter that declares a field (TypeScript's `constructor(private x: X)`, PHP's
        // promoted `__construct(private int $x)`) is a field of the constructor's type; it
        // stays in the constructor's unit, which covers its line and names it.
        let owner = match parent {
            Some(p) if kind == ChunkKind::Field && p.kind == ChunkKind::Method => stack
                .len()
                .checked_sub(2)
                .map(|i| &stack[i].0)
                .filter(|o| o.kind.is_type_like())
                .or(parent),
            _ => parent,
        };
        let local_path = match (owner, &r.receiver) {
            (Some(p), _) => format!("{}\u{0}{}", p.local_path, r.name),
            (None, Some(receiver)) => format!("{receiver}\u{0}{}", r.name),
            (None, None) => r.name.clone(),
        };
        // The doc-comment extension must not reach above the parent's own first row.
        let lo = parent.map_or(r.lo, |p| r.lo.max(p.lo));
        stack.push((
            Def {
                kind,
                name: r.name,
                local_path,
                lo,
                hi: r.hi,
                header: r.header,
                head: r.head,
                children: Vec::new(),
            },
            r.start_byte,
            r.end_byte,
        ));
    }
    while !stack.is_empty() {
        close_top(&mut stack, &mut roots);
    }
    roots
}

fn close_top(stack: &mut Vec<(Def, usize, usize)>, roots: &mut Vec<Def>) {
    if let Some((def, _, _)) = stack.pop() {
        match stack.last_mut() {
            Some((parent, _, _)) => parent.children.push(def),
            None => roots.push(def),
        }
    }
}

/// Where a chunk sits: the enclosing definition's path, header lines and name.
#[derive(Clone)]
struct Scope {
    local_path: String,
    /// Identity of the scope for merging: sibling definitions may share a local path.
    id: String,
    context: String,
    /// Context for glue inside this scope: the outer context, since the glue of a split
    /// definition (its header, fields, closing lines) contains the header line itself.
    gap_context: String,
    kind: ChunkKind,
    name: String,
    /// Row of the enclosing definition's own first line (its name), if any.
    head: Option<usize>,
}

impl Scope {
    fn root() -> Self {
        Scope {
            local_path: String::new(),
            id: String::new(),
            context: String::new(),
            gap_context: String::new(),
            kind: ChunkKind::Code,
            name: String::new(),
            head: None,
        }
    }
}

/// A chunk before its text is cut out of the file. Rows are 0-based; `hi` is exclusive.
struct Pending {
    lo: usize,
    hi: usize,
    kind: ChunkKind,
    symbol: String,
    local_path: String,
    names: Vec<String>,
    context: String,
    tokens: usize,
    /// Glue between definitions (headers, fields, closing lines) rather than a unit.
    glue: bool,
    /// Holds the header of a split container: it names whatever merges into it.
    head: bool,
    /// Local path of the enclosing definition; only chunks of one scope merge.
    scope: String,
    /// One of several windows of an oversized unit: it holds part of that unit only.
    window: bool,
}

impl Pending {
    /// Names the chunk answers for too, each once.
    fn add_names(&mut self, names: impl IntoIterator<Item = String>) {
        for name in names {
            if !self.names.contains(&name) {
                self.names.push(name);
            }
        }
    }

    fn finish(self, lines: &Lines<'_>, sep: &str) -> Chunk {
        let content = lines.text(self.lo, self.hi).to_owned();
        Chunk {
            start_line: row_to_line(self.lo),
            end_line: row_to_line(self.hi.saturating_sub(1).max(self.lo)),
            kind: self.kind,
            symbol: self.symbol,
            local_path: self.local_path.replace('\u{0}', sep),
            names: self
                .names
                .iter()
                .map(|name| qualified_name(name, sep))
                .collect::<Vec<_>>()
                .join(" "),
            context: self.context,
            content_hash: content_hash(content.as_bytes()),
            content,
        }
    }
}

struct Emitter<'l, 'a> {
    lines: &'l Lines<'a>,
    chunks: Vec<Pending>,
    symbols: Vec<Symbol>,
    /// Local path of the scope being emitted.
    scope: String,
}

impl<'l, 'a> Emitter<'l, 'a> {
    fn new(lines: &'l Lines<'a>) -> Self {
        Emitter {
            lines,
            chunks: Vec::new(),
            symbols: Vec::new(),
            scope: String::new(),
        }
    }

    /// Emits rows `lo..hi` of a scope: its definitions and the glue between them (values
    /// left in the glue with `skip_values`).
    fn range(&mut self, defs: &[Def], lo: usize, hi: usize, scope: &Scope, skip_values: bool) {
        let outer = std::mem::replace(&mut self.scope, scope.id.clone());
        let start = self.chunks.len();
        let mut cursor = lo;
        let mut first = !scope.local_path.is_empty();
        // A member declared on its container's own first line (Kotlin's `class Point(val x:
        // Int)`) stays in the container's head, which names it: a unit of its own would take
        // the line that names the container.
        let on_head = |d: &Def| d.kind.is_member() && scope.head.is_some_and(|row| d.lo <= row);
        let mut held = Vec::new();
        for def in defs.iter().filter(|d| !(skip_values && d.kind.is_value())) {
            if on_head(def) {
                held.push(def);
                continue;
            }
            if def.hi <= cursor {
                // Shares a line with a previous unit that already covers it (`case a, b`):
                // that unit answers for its names too.
                if let Some(last) = self.chunks.last_mut().filter(|c| c.lo <= def.lo) {
                    last.add_names(collect_names(def));
                }
                continue;
            }
            let before = self.chunks.len();
            self.gap(cursor, def.lo.max(cursor), scope);
            if first
                && self.chunks.len() > before
                && let Some(last) = self.chunks.last_mut()
            {
                last.head = true;
            }
            first = false;
            self.def(def, def.lo.max(cursor), scope);
            cursor = def.hi;
        }
        self.gap(cursor, hi, scope);
        for def in held {
            if let Some(piece) = self.chunks[start..]
                .iter_mut()
                .find(|c| c.lo <= def.lo && def.lo < c.hi)
            {
                piece.add_names(collect_names(def));
            }
        }
        self.scope = outer;
    }

    fn def(&mut self, def: &Def, lo: usize, scope: &Scope) {
        let local_path = def.local_path.clone();
        // Types split into their members so a hit points at the method asked for; other
        // units split only when too large. Tiny members merge back in `merge_small`. An
        // enum's variants or a struct's fields alone do not split it (`enum Mood { Happy,
        // Grumpy }` is one unit that names them all), only its size does.
        let container = def.kind.is_type_like() || def.kind == ChunkKind::Module;
        let splits = container && def.children.iter().any(|c| !c.kind.is_member());
        let fits = self.lines.tokens(lo, def.hi) <= MAX_TOKENS;
        if fits && (!splits || def.children.is_empty()) {
            let names = collect_names(def);
            self.push(
                lo,
                def.hi,
                def.kind,
                &def.name,
                &local_path,
                names,
                &scope.context,
            );
            return;
        }
        // Values declared in a function's body (a Rust `const`) are no place to cut it: an
        // oversized function is cut at its nested functions only, or windowed, and each
        // piece names the values it holds. (A type splits at its members, values included.)
        let skip_values = !container;
        let first = self.chunks.len();
        if def
            .children
            .iter()
            .all(|c| skip_values && c.kind.is_value())
        {
            self.windows(lo, def.hi, def.kind, &def.name, &local_path, &scope.context);
        } else {
            let mut context = scope.context.clone();
            if !context.is_empty() {
                context.push('\n');
            }
            context.push_str(&def.header);
            let inner = Scope {
                id: format!("{}/{lo}", scope.id),
                local_path,
                context,
                gap_context: scope.context.clone(),
                kind: def.kind,
                name: def.name.clone(),
                head: Some(def.head),
            };
            self.range(&def.children, lo, def.hi, &inner, skip_values);
        }
        if skip_values {
            for value in def.children.iter().filter(|c| c.kind.is_value()) {
                for piece in &mut self.chunks[first..] {
                    if piece.lo <= value.lo && value.lo < piece.hi {
                        piece.add_names(collect_names(value));
                    }
                }
            }
        }
    }

    /// Glue between definitions: imports, statements, fields, closing braces.
    fn gap(&mut self, lo: usize, hi: usize, scope: &Scope) {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi && self.lines.is_blank(lo) {
            lo += 1;
        }
        while hi > lo && self.lines.is_blank(hi - 1) {
            hi -= 1;
        }
        if lo >= hi {
            return;
        }
        let kind = if scope.kind == ChunkKind::Code {
            ChunkKind::Code
        } else {
            scope.kind
        };
        let local_path = scope.local_path.clone();
        let name = scope.name.clone();
        if self.lines.tokens(lo, hi) <= MAX_TOKENS {
            let names = if name.is_empty() {
                vec![]
            } else {
                vec![name.clone()]
            };
            self.push(lo, hi, kind, &name, &local_path, names, &scope.gap_context);
        } else {
            self.windows(lo, hi, kind, &name, &local_path, &scope.gap_context);
        }
        if let Some(last) = self.chunks.last_mut() {
            last.glue = true;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        lo: usize,
        hi: usize,
        kind: ChunkKind,
        symbol: &str,
        local_path: &str,
        names: Vec<String>,
        context: &str,
    ) {
        let mut hi = hi;
        while hi > lo + 1 && self.lines.is_blank(hi - 1) {
            hi -= 1;
        }
        self.chunks.push(Pending {
            lo,
            hi,
            kind,
            symbol: symbol.to_owned(),
            local_path: local_path.to_owned(),
            names,
            context: context.to_owned(),
            tokens: self.lines.tokens(lo, hi),
            glue: false,
            head: false,
            scope: self.scope.clone(),
            window: false,
        });
    }

    /// Cuts rows `lo..hi` into windows of about [`TARGET_TOKENS`] with [`OVERLAP_TOKENS`] overlap.
    fn windows(
        &mut self,
        lo: usize,
        hi: usize,
        kind: ChunkKind,
        symbol: &str,
        local_path: &str,
        context: &str,
    ) {
        let lines = self.lines;
        let first = self.chunks.len();
        let mut start = lo;
        while start < hi {
            while start < hi && lines.is_blank(start) {
                start += 1;
            }
            if start >= hi {
                break;
            }
            let mut end = start + 1;
            while end < hi && lines.tokens(start, end + 1) <= TARGET_TOKENS {
                end += 1;
            }
            let names = if symbol.is_empty() {
                vec![]
            } else {
                vec![symbol.to_owned()]
            };
            self.push(start, end, kind, symbol, local_path, names, context);
            if end >= hi {
                break;
            }
            // Step back over whole lines worth at most OVERLAP_TOKENS, always moving forward.
            let mut next = end;
            while next > start + 1 && lines.tokens(next - 1, end) <= OVERLAP_TOKENS {
                next -= 1;
            }
            start = next;
        }
        if self.chunks.len() - first > 1 {
            for c in &mut self.chunks[first..] {
                c.window = true;
            }
        }
    }
}

/// The names a unit answers for: its own, and those of the definitions nested in it by their
/// path from the unit's scope (`Block\0expr`), so a chunk of several small types still tells
/// whose `expr` it holds (a field that a constructor's parameter declares is the type's:
/// `program`, not `constructor.program`). The segments are joined with the language's
/// separator when the chunk is made.
fn collect_names(def: &Def) -> Vec<String> {
    fn walk(def: &Def, scope: &str, out: &mut Vec<String>) {
        for c in &def.children {
            out.push(
                c.local_path
                    .strip_prefix(scope)
                    .unwrap_or(&c.name)
                    .to_owned(),
            );
            walk(c, scope, out);
        }
    }
    // The unit's own path ends with its name.
    let scope = &def.local_path[..def.local_path.len().saturating_sub(def.name.len())];
    let mut out = vec![def.name.clone()];
    walk(def, scope, &mut out);
    out
}

/// A name of [`collect_names`] as a chunk lists it: its segments joined with `sep`, or only
/// its last where `sep` holds a space (a Markdown section's ` > `), since a chunk's names are
/// separated by spaces.
fn qualified_name(name: &str, sep: &str) -> String {
    if sep.contains(' ') {
        name.rsplit('\u{0}').next().unwrap_or(name).to_owned()
    } else {
        name.replace('\u{0}', sep)
    }
}

/// Whether rows `lo..hi` only close blocks (`}`, `};`, `end`, ...), trailing comments aside.
fn closing_only(lines: &Lines<'_>, lo: usize, hi: usize) -> bool {
    (lo..hi).all(|r| {
        let line = lines.line(r);
        let line = line.split("//").next().unwrap_or(line).trim();
        line.chars().all(|ch| matches!(ch, '}' | ')' | ']' | ';'))
            || matches!(line, "end" | "fi" | "done" | "esac")
    })
}

/// Merges runs of small neighbouring chunks of the same scope, as long as the result stays
/// within `sizes.max_tokens`.
fn merge_small(lines: &Lines<'_>, chunks: Vec<Pending>, sizes: MergeSizes) -> Vec<Pending> {
    let mut out: Vec<Pending> = Vec::with_capacity(chunks.len());
    for c in chunks {
        if let Some(prev) = out.last_mut() {
            let small = prev.tokens < sizes.min_tokens || c.tokens < sizes.min_tokens;
            let fits = prev.tokens + c.tokens <= sizes.max_tokens;
            let adjacent = c.lo >= prev.hi;
            // A window of a split unit is never padded with its neighbours.
            let whole = !prev.window && !c.window;
            let normal = small && fits && adjacent && whole && prev.scope == c.scope;
            // A lone brace or bare header joins its neighbour, across one level of nesting and
            // past the merge budget: it is not worth a hit of its own.
            let lone = |p: &Pending| p.glue && p.tokens <= LONE_TOKENS;
            let nested = |a: &str, b: &str| a == b || b.starts_with(&format!("{a}/"));
            let rescue = adjacent
                && prev.tokens + c.tokens <= MAX_TOKENS
                && ((lone(&c) && closing_only(lines, c.lo, c.hi) && nested(&c.scope, &prev.scope))
                    || (lone(prev) && prev.head && nested(&prev.scope, &c.scope)));
            if normal || rescue {
                // A container's header names the members merged into it; a closing tail or
                // anonymous top-level glue defers to the unit; a named value defers to any
                // other definition (it says least of what the chunk does); between equals,
                // the larger. A lone brace or bare header never names the unit it joins.
                let constant = |p: &Pending| p.kind.is_value();
                let prev_wins = if !normal {
                    !lone(prev)
                } else {
                    prev.head
                        || match (prev.glue, c.glue) {
                            (true, false) => !prev.symbol.is_empty(),
                            (false, true) => true,
                            _ if constant(prev) != constant(&c) => constant(&c),
                            _ => prev.tokens >= c.tokens,
                        }
                };
                prev.hi = c.hi;
                prev.tokens += c.tokens;
                // A gap of the enclosing container (fields, its closing tail) carries the
                // container's name; a member that absorbs it does not define the container,
                // and would otherwise answer for its name like the header that does.
                let container_gap = c.glue && !c.head && prev_wins;
                if !container_gap {
                    prev.add_names(c.names);
                }
                if !prev_wins {
                    prev.kind = c.kind;
                    prev.symbol = c.symbol;
                    prev.local_path = c.local_path;
                    prev.context = c.context;
                    prev.scope = c.scope;
                    prev.head = c.head;
                }
                prev.glue &= c.glue;
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Markdown: one section per heading (ATX `#` or setext `===`/`---` underline), outside fenced
/// code blocks; the symbol is the heading and the local path the chain of parent headings.
fn markdown_sections(lines: &Lines<'_>, out: &mut Emitter<'_, '_>) {
    let mut headings: Vec<(usize, usize, String)> = Vec::new(); // (row, level, title)
    let mut fence: Option<&str> = None;
    // YAML front matter: `---` on the first line up to the next `---` or `...`.
    let body = if lines.len() > 1 && lines.line(0).trim_end() == "---" {
        (1..lines.len())
            .find(|&r| matches!(lines.line(r).trim_end(), "---" | "..."))
            .map_or(0, |r| r + 1)
    } else {
        0
    };
    for row in body..lines.len() {
        let line = lines.line(row);
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent < 4 {
            let level = trimmed.bytes().take_while(|&b| b == b'#').count();
            if (1..=6).contains(&level) && trimmed[level..].starts_with([' ', '\t'])
                || (1..=6).contains(&level) && trimmed.len() == level
            {
                let title = trimmed[level..]
                    .trim()
                    .trim_end_matches('#')
                    .trim()
                    .to_owned();
                headings.push((row, level, title));
                continue;
            }
        }
        if row > 0 && !trimmed.is_empty() && indent < 4 {
            let underline = trimmed.trim_end();
            let level = if underline.bytes().all(|b| b == b'=') {
                1
            } else if underline.len() >= 3 && underline.bytes().all(|b| b == b'-') {
                2
            } else {
                0
            };
            let above = lines.line(row - 1).trim();
            let above_is_text = !above.is_empty()
                && !above.starts_with(['#', '-', '*', '>', '|'])
                && headings.last().is_none_or(|h| h.0 != row - 1);
            if level > 0 && above_is_text {
                headings.push((row - 1, level, above.to_owned()));
            }
        }
    }
    let mut chain: Vec<(usize, String)> = Vec::new();
    let mut found = Vec::with_capacity(headings.len());
    for (row, level, title) in headings {
        while chain.last().is_some_and(|(l, _)| *l >= level) {
            chain.pop();
        }
        chain.push((level, title));
        found.push((row, chain.iter().map(|(_, t)| t.clone()).collect()));
    }
    sections(lines, out, found, Language::Markdown);
}

/// One section per heading: `found` holds each heading's row and its path of titles (its
/// own last), in order; a section runs to the next heading, what precedes the first is glue.
fn sections(
    lines: &Lines<'_>,
    out: &mut Emitter<'_, '_>,
    found: Vec<(usize, Vec<String>)>,
    lang: Language,
) {
    let first = found.first().map_or(lines.len(), |h| h.0);
    out.gap(0, first, &Scope::root());
    for (i, (row, path)) in found.iter().enumerate() {
        let Some(title) = path.last() else {
            continue;
        };
        let end = found.get(i + 1).map_or(lines.len(), |h| h.0);
        let local_path = path.join("\u{0}");
        let tokens = lines.tokens(*row, end);
        if tokens <= MAX_TOKENS {
            // Listed by its whole path: sections merge across paths (`tool.mypy` after
            // `tool.pytest`), all at the top.
            out.push(
                *row,
                end,
                ChunkKind::Section,
                title,
                &local_path,
                vec![local_path.clone()],
                "",
            );
        } else {
            out.windows(*row, end, ChunkKind::Section, title, &local_path, "");
        }
        out.symbols.push(Symbol {
            name: title.clone(),
            kind: ChunkKind::Section,
            local_path: local_path.replace('\u{0}', separator(lang)),
            start_line: row_to_line(*row),
            end_line: row_to_line(last_filled(lines, *row, end)),
        });
    }
}

/// TOML: one section per table header (`[tool.pytest]`) at the start of a line, outside
/// multi-line strings; its path is the table's dotted key (`tool`, `pytest`). The entries of
/// an array of tables (`[[test]]`, thousands of them in a data file) all share one name:
/// they stay in the section before them.
fn toml_tables(lines: &Lines<'_>) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let mut in_string = false;
    for row in 0..lines.len() {
        let line = lines.line(row);
        // A line with an odd number of `"""` or `\'\'\'` opens or closes a multi-line string.
        if (line.matches("\"\"\"").count() + line.matches("\'\'\'").count()) % 2 == 1 {
            in_string = !in_string;
            continue;
        }
        if in_string {
            continue;
        }
        let Some(header) = line.strip_prefix('[') else {
            continue;
        };
        if header.starts_with('[') {
            continue;
        }
        let Some(end) = header.find(']') else {
            continue;
        };
        let rest = header[end..].trim_start_matches(']').trim();
        if !(rest.is_empty() || rest.starts_with('#')) {
            continue;
        }
        if let Some(path) = dotted_key(&header[..end]) {
            found.push((row, path));
        }
    }
    found
}

/// The parts of a TOML or YAML key (`tool."my.app".x` is `tool`, `my.app`, `x`); `None` for
/// anything else (an array of values, an empty key).
fn dotted_key(key: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut quote: Option<char> = None;
    for ch in key.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => part.push(c),
            (None, '"' | '\'') => quote = Some(ch),
            (None, '.') => parts.push(std::mem::take(&mut part)),
            (None, c) if c.is_alphanumeric() || matches!(c, '_' | '-') => part.push(c),
            (None, c) if c.is_whitespace() => {}
            (None, _) => return None,
        }
    }
    parts.push(part);
    let parts: Vec<String> = parts.into_iter().map(|p| p.trim().to_owned()).collect();
    (quote.is_none() && parts.iter().all(|p| !p.is_empty() && !p.contains(' '))).then_some(parts)
}

/// YAML: one section per key at the top of a document (`jobs:`) and per block one level in
/// (`jobs:` / `  build:` and the lines below it, path `jobs`, `build`); not inside a block
/// scalar (`key: |`), list items or flow collections. A key one level in whose value fits
/// on its line (`  button_clear: Clear`, a locale's thousand messages) is an entry of its
/// section, as a TOML key is of its table.
fn yaml_keys(lines: &Lines<'_>) -> Vec<(usize, Vec<String>)> {
    let mut found: Vec<(usize, Vec<String>)> = Vec::new();
    // The top-level key being read, whether its value is a block scalar, and the indent of
    // its own keys once seen.
    let mut top: Option<(String, bool, Option<usize>)> = None;
    for row in 0..lines.len() {
        let line = lines.line(row);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent == 0 {
            top = None;
            if let Some((key, value)) = yaml_key(line) {
                found.push((row, vec![key.clone()]));
                top = Some((key, is_block_scalar(value), None));
            }
            continue;
        }
        let Some((key1, scalar, inner)) = top.as_mut() else {
            continue;
        };
        if *scalar || line.starts_with('\t') {
            continue;
        }
        // A merge key (`<<: *defaults`) brings keys defined elsewhere.
        if trimmed.starts_with("<<") {
            continue;
        }
        let level = *inner.get_or_insert(indent);
        if indent != level {
            continue;
        }
        match yaml_key(trimmed) {
            Some((key, value)) => {
                let block = value.is_empty() || value.starts_with('&') || is_block_scalar(value);
                if block {
                    found.push((row, vec![key1.clone(), key]));
                }
            }
            // A sequence or a scalar at that indent: no keys below this top-level key.
            None => *scalar = true,
        }
    }
    found
}

/// `key: value` at the start of `line`: the key (unquoted) and the rest after the colon.
fn yaml_key(line: &str) -> Option<(String, &str)> {
    if line.starts_with(['-', '[', '{', '&', '*', '!', '%', '?', '|', '>', '@', '`']) {
        return None;
    }
    let colon = if line.starts_with(['"', '\'']) {
        let close = line[1..].find(line.as_bytes()[0] as char)? + 1;
        close + line[close..].find(':')?
    } else {
        line.find(": ")
            .or_else(|| line.ends_with(':').then(|| line.len() - 1))?
    };
    let key = line[..colon].trim().trim_matches(['"', '\'']);
    let after = &line[colon + 1..];
    (!key.is_empty() && !key.contains(['#', '\t']) && (after.is_empty() || after.starts_with(' ')))
        .then(|| (key.to_owned(), after.trim()))
}

/// `|`, `>-`, `|2+` and such: the value is the indented text below.
fn is_block_scalar(value: &str) -> bool {
    let value = value.split(" #").next().unwrap_or(value).trim();
    value.starts_with(['|', '>'])
        && value[1..]
            .chars()
            .all(|c| matches!(c, '+' | '-' | '1'..='9'))
}

/// Last non-blank row of `lo..hi` (`lo` if all are blank).
fn last_filled(lines: &Lines<'_>, lo: usize, hi: usize) -> usize {
    (lo..hi).rev().find(|&r| !lines.is_blank(r)).unwrap_or(lo)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn approx_tokens_counts_words_and_punctuation() {
        assert_eq!(approx_tokens(""), 0);
        assert_eq!(approx_tokens("fn main() {}"), 6);
        assert_eq!(approx_tokens("a_very_long_identifier"), 4);
    }

    #[test]
    fn line_windows_cover_the_file_with_overlap() {
        let src: String = (0..400)
            .map(|i| format!("line number {i} of a text file\n"))
            .collect();
        let out = chunk_file(&src, Language::Text);
        assert!(out.chunks.len() > 3);
        assert_eq!(out.chunks[0].start_line, 1);
        assert_eq!(out.chunks.last().unwrap().end_line, 400);
        for pair in out.chunks.windows(2) {
            assert!(pair[1].start_line <= pair[0].end_line, "windows overlap");
            assert!(pair[1].start_line > pair[0].start_line, "windows advance");
        }
        for c in &out.chunks {
            assert!(approx_tokens(&c.content) <= TARGET_TOKENS + 20);
        }
    }

    #[test]
    fn one_pass_finds_definitions_and_references_at_any_depth() {
        // Eight nested functions put the innermost 16 levels down the syntax tree.
        let mut src = String::new();
        for depth in 0..8 {
            let indent = "    ".repeat(depth);
            src.push_str(&format!("{indent}def level{depth}():\n"));
        }
        src.push_str(&format!("{}return helper(1)\n", "    ".repeat(8)));
        let out = chunk_file(&src, Language::Python);
        let names: Vec<&str> = out.symbols.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), 8, "{names:?}");
        assert!(names.contains(&"level7"), "{names:?}");
        assert_eq!(out.refs.len(), 1);
        assert_eq!((out.refs[0].name.as_str(), out.refs[0].line), ("helper", 9));
    }

    #[test]
    fn toml_tables_and_yaml_keys_are_sections() {
        let paths = |src: &str, lang| -> Vec<(u32, String)> {
            chunk_file(src, lang)
                .symbols
                .into_iter()
                .map(|s| (s.start_line, s.local_path))
                .collect()
        };
        let toml = "name = \"x\"\n[tool.pytest]\nlog = \"\"\"\n[not.a.table]\n\"\"\"\n\
                    data = [\n[1, 2],\n]\n[[bin]] # first\n[tool.\"my.app\".x]\n";
        assert_eq!(
            paths(toml, Language::Toml),
            [
                (2, "tool.pytest".to_owned()),
                (10, "tool.my.app.x".to_owned())
            ]
        );
        let yaml = "# CI\nname: CI\njobs:\n  <<: *all\n  build:\n    - make\n  \
                    lint:\n    x: 1\nscript: |\n  foo: bar\nitems:\n  - a: 1\n  b: 2\n\
                    \"quoted\": 3\nurl: http://x\n---\nkind: Service\n";
        assert_eq!(
            paths(yaml, Language::Yaml),
            [
                (2, "name".to_owned()),
                (3, "jobs".to_owned()),
                (5, "jobs.build".to_owned()),
                (7, "jobs.lint".to_owned()),
                (9, "script".to_owned()),
                (11, "items".to_owned()),
                (14, "quoted".to_owned()),
                (15, "url".to_owned()),
                (17, "kind".to_owned())
            ]
        );
        // Entries that fit on their line are no sections, one level in.
        let locale = "en:\n  button_clear: Clear\n  notice:\n    saved: Saved\n";
        assert_eq!(
            paths(locale, Language::Yaml),
            [(1, "en".to_owned()), (3, "en.notice".to_owned())]
        );
        // A merged chunk lists each section by its path.
        let out = chunk_file("[tool.a]\nx = 1\n[tool.b]\ny = 2\n", Language::Toml);
        assert_eq!(out.chunks.len(), 1);
        assert_eq!(out.chunks[0].names, "tool.a tool.b");
    }

    #[test]
    fn markdown_splits_by_headings_and_ignores_fences() {
        let body = "word ".repeat(60);
        let src = format!(
            "# Title\n\nIntro {body}\n\n## Install\n\n{body}\n```sh\n# not a heading\n```\n\n## Usage\n\n{body}\n"
        );
        let out = chunk_file(&src, Language::Markdown);
        let symbols: Vec<_> = out.chunks.iter().map(|c| c.local_path.as_str()).collect();
        assert_eq!(symbols, ["Title", "Title > Install", "Title > Usage"]);
        assert_eq!(out.symbols[1].local_path, "Title > Install");
        assert!(out.chunks[1].content.contains("# not a heading"));
    }

    #[test]
    fn index_text_names_the_place_then_the_code() {
        let path = join_symbol_path("store", "Store::open", Language::Rust);
        assert_eq!(path, "store::Store::open");
        assert_eq!(join_symbol_path("", "main", Language::Python), "main");
        assert_eq!(join_symbol_path("pkg.mod", "", Language::Python), "pkg.mod");
        let java = |module, local| shown_symbol_path(module, local, Language::Java);
        assert_eq!(java("org.x.Parser", "Parser.parse"), "org.x.Parser.parse");
        assert_eq!(java("org.x.Parser", "Parser"), "org.x.Parser");
        assert_eq!(java("Parser", "Parser.parse"), "Parser.parse");
        assert_eq!(
            java("org.x.Parser", "ParserTest.run"),
            "org.x.Parser.ParserTest.run"
        );
        assert_eq!(java("org.x.Parser", ""), "org.x.Parser");
        let python = shown_symbol_path("pkg.parser", "parser.run", Language::Python);
        assert_eq!(python, "pkg.parser.parser.run");
        let text = index_text("src/store.rs", &path, "impl Store {", "pub fn open() {}");
        assert_eq!(
            text,
            "src/store.rs store::Store::open\nimpl Store {\npub fn open() {}"
        );
        assert_eq!(index_text("a.txt", "", "", "x"), "a.txt\nx");
    }

    #[test]
    fn empty_and_blank_files_have_no_chunks() {
        assert!(chunk_file("", Language::Text).chunks.is_empty());
        assert!(chunk_file("\n\n  \n", Language::Text).chunks.is_empty());
    }
}

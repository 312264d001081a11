//! The code-aware tokenizer shared by indexing and queries.
//!
//! The same function analyses documents and query strings, so whatever it does to one it does to
//! the other. The rules, in order:
//!
//! * **Words** are maximal runs of Unicode alphanumerics and `_` that contain at least one
//!   alphanumeric (a run of bare underscores is not a word). Each word yields its whole form,
//!   lowercased: `parse_args`, `httpserver`, `__init__`.
//! * **Parts.** When a word has internal boundaries it also yields each part, lowercased. A word
//!   splits on `_`, between a lowercase letter and an uppercase one (`camelCase` → `camel`,
//!   `case`), before the last capital of an acronym that is followed by a lowercase letter
//!   (`HTTPServer` → `http`, `server`), and between letters and digits in both directions
//!   (`utf8` → `utf`, `8`; `sha256sum` → `sha`, `256`, `sum`). An acronym followed by a lone
//!   plural `s` stays whole (`parseURLs` → `parse`, `urls`; `getIDs` → `get`, `ids`). Empty parts
//!   (from `__init__`) are dropped. Letters without case behave like lowercase.
//! * **Scripts without spaces.** Han, kana and Hangul are set apart from other letters and
//!   digits (`読込text` → `読込`, `text`), and a run of three or more of them yields its
//!   overlapping pairs of characters (`日本語テキスト` → `日本`, `本語`, `語テ`, ...): a run is
//!   a phrase, not a word, so a query's `テキスト` meets it through `テキ`, `キス`, `スト`.
//! * **Compounds.** Words joined by `.`, `::`, `->` or `-`, with the separator directly between two
//!   word characters, also yield the whole compound lowercased with its separators:
//!   `os.path.join`, `std::io::read`, `kebab-case-name`, `foo->bar`. Numbers are not special:
//!   `1.5` and `2024-01-31` are compounds too, on documents and queries alike.
//! * **Length cap.** No token is longer than [`MAX_TOKEN_BYTES`] bytes. A longer word or compound
//!   skips its whole form but keeps its parts (each subject to the same cap), so minified code
//!   and base64 blobs cannot flood the dictionary with one-off giant terms.
//! * Short tokens (one or two characters) are kept; there are no stop words.
//! * **Stems.** [`for_each_token`] follows a plain lowercase word with its English stem or, for an
//!   irregular form, its base ([`crate::irregular`]), and a Latin word with diacritics with its
//!   form without them (`café` -> `cafe`); [`for_each_split_token`] does the rest.
//!
//! Tokens are emitted in text order: for each word its whole form, then its parts; a compound
//! right after its last word.
//!
//! Lowercasing is Unicode-correct (`str::to_lowercase`, including the final-sigma rule) and takes
//! an allocation-free ASCII path for ASCII words, which is nearly all of source code.
//!
//! # Throughput
//!
//! `cargo run --release --example analyze -- DIR` times [`for_each_token`] on one thread over
//! the source files under `DIR` (best of five passes). On the speed benchmark's large tree
//! (15,354 files, 130 MB, 24.7 million tokens; 2026-11-27, Intel VM): 116-118 MB/s, where
//! the analyzer before accents and scripts without spaces were handled ran at 122-124 MB/s
//! over 1.3% fewer tokens (the extra ones come from translation files and test data in
//! those languages: django's locales alone, 114-115 against 121-122 MB/s); on a tree of
//! code only (1,893 files, 12 MB) 154-158 MB/s against 155-160. Earlier, a scratch
//! benchmark over 59.9 MB of Rust read 150-300 MB/s with [`for_each_token`] and 75-155 MB/s
//! with [`analyze`] (one `String` per token), the range being the shared VM's run-to-run
//! variation; [`crate::bm25::analyze_doc`] (tokenise plus per-document term counting) ran at
//! 65-95 MB/s on ~1 KB chunks of that code plus C, JavaScript and Markdown.

use std::cell::RefCell;
use std::collections::HashMap;

/// The longest token the analyzer emits, in bytes (before lowercasing).
pub const MAX_TOKEN_BYTES: usize = 64;

// Character classes. The ASCII ones come from a table; `NON_ASCII` means "decode the char".
const NON_WORD: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 3;
const UNDERSCORE: u8 = 4;
const NON_ASCII: u8 = 5;
/// Letters of scripts written without spaces between words (Han, kana, Hangul, Yi).
const CJK: u8 = 6;

static ASCII_CLASS: [u8; 256] = build_class_table();

const fn build_class_table() -> [u8; 256] {
    let mut table = [NON_WORD; 256];
    let mut i = 0;
    while i < 256 {
        #[allow(clippy::cast_possible_truncation)] // i < 256
        let b = i as u8;
        table[i] = match b {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            b'_' => UNDERSCORE,
            0x80..=0xff => NON_ASCII,
            _ => NON_WORD,
        };
        i += 1;
    }
    table
}

/// Class of a word character (`NON_WORD` for anything else).
fn char_class(c: char) -> u8 {
    if c.is_ascii() {
        ASCII_CLASS[c as usize]
    } else if !c.is_alphanumeric() {
        NON_WORD
    } else if is_cjk(c) {
        CJK
    } else if c.is_uppercase() {
        UPPER
    } else if c.is_numeric() {
        DIGIT
    } else {
        // Lowercase letters and letters without case.
        LOWER
    }
}

/// Han ideographs, kana, Hangul, bopomofo and Yi (with their radicals, extensions and
/// half-width forms): scripts whose words are not set apart by spaces.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{1100}'..='\u{11FF}'
        | '\u{2E80}'..='\u{A4CF}'
        | '\u{A960}'..='\u{A97F}'
        | '\u{AC00}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FF66}'..='\u{FFDC}'
        | '\u{20000}'..='\u{3FFFF}')
}

/// Reusable buffers for one call of [`for_each_token`].
#[derive(Default)]
struct Scratch {
    /// The lowercased token being emitted.
    lower: String,
    /// Part boundaries of the current word, as byte ranges into the word.
    parts: Vec<(usize, usize)>,
    /// Byte offset, class and "is `s`" flag of each char of a non-ASCII word.
    chars: Vec<(usize, u8, bool)>,
}

/// Bumped whenever the tokens produced for a text change: derived indexes built by another
/// version are rebuilt rather than queried with mismatched tokens.
pub const VERSION: u32 = 5;

/// Words shorter than this are not stemmed: short tokens are mostly identifiers' parts
/// (`id`, `len`, `err`) whose stems would only add noise.
const MIN_STEM_BYTES: usize = 4;

/// The shortest irregular form the analyzer joins to its base (`ran`, `got`, `met`).
const MIN_IRREGULAR_BYTES: usize = 3;

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
}

/// Calls `f` once per token of `text`, in order, without allocating per token.
///
/// The `&str` handed to `f` lives in a reused buffer, so it is only valid during the call: copy
/// it (or look it up in a dictionary) there. See the [module documentation](self) for the rules.
///
/// Plain lowercase words of [`MIN_STEM_BYTES`] or more letters are followed by their English
/// (Snowball) stem when it differs, so "reads" in a question meets `read` in code while exact
/// forms still match twice. Measured on the quality benchmark: doc-to-code NDCG@10 +0.03 on
/// both halves of the projects, symbol queries unchanged. An irregular form is followed by its
/// base instead, stemmed the same way ("bought" by `buy`, "chose" by `choos`, the stem of
/// "choose"), so a question about buying meets the sentence that says what was bought.
///
/// A Latin word with diacritics is also given without them, then stemmed like any ASCII
/// word (`résumés` -> `resumes`, `resum`; `größe` -> `grosse`), so a query typed without
/// accents meets text written with them, and the other way round.
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    let plain = |token: &str| {
        token.len() >= MIN_IRREGULAR_BYTES && token.bytes().all(|b| b.is_ascii_lowercase())
    };
    STEMS.with(|cell| {
        let mut stems = cell.borrow_mut();
        let mut folded = String::new();
        for_each_split_token(text, |token| {
            f(token);
            if plain(token) {
                stems.with_stem(token, &mut f);
            } else if fold_latin(token, &mut folded) {
                f(&folded);
                if plain(&folded) {
                    stems.with_stem(&folded, &mut f);
                }
            }
        });
    });
}

/// The other spellings of one lowercase word of prose, by the rules the analyzer applies to
/// text beyond ASCII: the word as typed without its diacritics (`None` when it has none to
/// drop or folds to something not ASCII), and each run of Chinese, Japanese or Korean
/// characters in it followed by the run's overlapping pairs. For callers that split text
/// into words themselves (memory's labels and near-duplicates).
#[must_use]
pub fn word_variants(word: &str) -> (Option<String>, Vec<String>) {
    let mut bare = String::new();
    let bare = fold_latin(word, &mut bare).then_some(bare);
    let mut pieces = Vec::new();
    let mut run: Vec<char> = Vec::new();
    for c in word.chars().chain(std::iter::once(' ')) {
        if is_cjk(c) {
            run.push(c);
        } else if !run.is_empty() {
            pieces.push(run.iter().collect());
            pieces.extend(run.windows(2).map(|pair| pair.iter().collect()));
            run.clear();
        }
    }
    (bare, pieces)
}

/// `token` (lowercase) without the diacritics of its Latin letters, into `out`; whether that
/// is a different, all-ASCII token. Letters that do not decompose are spelled as they are
/// usually typed without them (`ß` -> `ss`, `ø` -> `o`). Other scripts are left alone: in
/// Cyrillic or Greek a mark makes another letter.
fn fold_latin(token: &str, out: &mut String) -> bool {
    let latin = |c| matches!(c, '\u{C0}'..='\u{24F}' | '\u{1E00}'..='\u{1EFF}');
    if token.is_ascii() || !token.contains(latin) {
        return false;
    }
    out.clear();
    for c in token.chars() {
        match c {
            'ß' => out.push_str("ss"),
            'æ' => out.push_str("ae"),
            'œ' => out.push_str("oe"),
            'þ' => out.push_str("th"),
            'ø' => out.push('o'),
            'ł' => out.push('l'),
            'đ' | 'ð' => out.push('d'),
            'ı' => out.push('i'),
            c => unicode_normalization::char::decompose_canonical(c, |part| {
                if !unicode_normalization::char::is_combining_mark(part) {
                    out.push(part);
                }
            }),
        }
    }
    out.is_ascii()
}

/// The Snowball stem of `word`, or the word itself when it is too short to stem.
fn stem_of(word: &str) -> std::borrow::Cow<'_, str> {
    if word.len() >= MIN_STEM_BYTES {
        stemmer().stem(word)
    } else {
        std::borrow::Cow::Borrowed(word)
    }
}

/// Most words of code repeat endlessly and Snowball costs ~10x a hash lookup, so each thread
/// remembers the stems it computed (cleared when full, which bounds it at a few MB).
struct StemMemo {
    /// Word -> its stem, or `None` when the stem is the word itself.
    known: HashMap<Box<str>, Option<Box<str>>, foldhash::fast::RandomState>,
}

/// Entries of a thread's [`StemMemo`] before it starts over.
const STEM_MEMO_ENTRIES: usize = 1 << 16;

thread_local! {
    static STEMS: RefCell<StemMemo> = RefCell::new(StemMemo { known: HashMap::default() });
}

impl StemMemo {
    /// Calls `f` with the stem of `word` (the stemmed base of an irregular form) when it differs
    /// from the word.
    fn with_stem(&mut self, word: &str, f: impl FnOnce(&str)) {
        if let Some(known) = self.known.get(word) {
            if let Some(stem) = known {
                f(stem);
            }
            return;
        }
        if self.known.len() >= STEM_MEMO_ENTRIES {
            self.known.clear();
        }
        let stem = match crate::irregular::base(word) {
            Some(base) => Some(Box::from(stem_of(base).as_ref())),
            None => {
                let stem = stem_of(word);
                (stem != word).then(|| Box::from(stem.as_ref()))
            }
        };
        if let Some(stem) = &stem {
            f(stem);
        }
        self.known.insert(Box::from(word), stem);
    }
}

/// The code-aware splitting alone (no stems): whole identifiers, their parts and compounds.
pub fn for_each_split_token(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut scratch = Scratch::default();
    // The current compound: its start, how many words it has, whether it is all ASCII.
    let mut compound_start = 0;
    let mut compound_words = 0usize;
    let mut compound_ascii = true;
    let mut i = 0;
    while i < bytes.len() {
        let class = ASCII_CLASS[usize::from(bytes[i])];
        if class == NON_WORD {
            i += 1;
            continue;
        }
        if class == NON_ASCII {
            let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else {
                break;
            };
            if char_class(c) == NON_WORD {
                i += c.len_utf8();
                continue;
            }
        }
        // A word starts at `i`.
        let start = i;
        let (end, ascii, has_alnum) = scan_word(text, start);
        let word = &text[start..end];
        if has_alnum {
            emit_word(word, ascii, &mut scratch, &mut f);
        }
        if compound_words == 0 {
            compound_start = start;
            compound_ascii = true;
        }
        compound_words += 1;
        compound_ascii &= ascii;
        // Does a separator followed by another word char continue the compound?
        let sep = separator_len(bytes, end);
        if sep > 0 && starts_with_word_char(text, end + sep) {
            i = end + sep;
            continue;
        }
        if compound_words >= 2 && end - compound_start <= MAX_TOKEN_BYTES {
            lowercase_into(
                &text[compound_start..end],
                compound_ascii,
                &mut scratch.lower,
            );
            f(&scratch.lower);
        }
        compound_words = 0;
        i = end;
    }
}

/// Scans the word starting at `start`; returns its end, whether it is ASCII, and whether it
/// contains an alphanumeric char (rather than only underscores).
fn scan_word(text: &str, start: usize) -> (usize, bool, bool) {
    let bytes = text.as_bytes();
    let mut j = start;
    let mut ascii = true;
    let mut has_alnum = false;
    while j < bytes.len() {
        match ASCII_CLASS[usize::from(bytes[j])] {
            NON_WORD => break,
            UNDERSCORE => j += 1,
            NON_ASCII => {
                let Some(c) = text.get(j..).and_then(|rest| rest.chars().next()) else {
                    break;
                };
                if char_class(c) == NON_WORD {
                    break;
                }
                ascii = false;
                has_alnum = true;
                j += c.len_utf8();
            }
            _ => {
                has_alnum = true;
                j += 1;
            }
        }
    }
    (j, ascii, has_alnum)
}

/// Length of the compound separator at `pos` (`.`, `::`, `->`, `-`), or 0.
fn separator_len(bytes: &[u8], pos: usize) -> usize {
    match bytes.get(pos) {
        Some(b':') if bytes.get(pos + 1) == Some(&b':') => 2,
        Some(b'-') if bytes.get(pos + 1) == Some(&b'>') => 2,
        Some(b'.' | b'-') => 1,
        _ => 0,
    }
}

fn starts_with_word_char(text: &str, pos: usize) -> bool {
    match text.as_bytes().get(pos) {
        None => false,
        Some(&b) if b < 0x80 => ASCII_CLASS[usize::from(b)] != NON_WORD,
        Some(_) => text
            .get(pos..)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| char_class(c) != NON_WORD),
    }
}

/// Lowercases `s` into `out` (cleared first).
fn lowercase_into(s: &str, ascii: bool, out: &mut String) {
    out.clear();
    if ascii {
        out.push_str(s);
        out.make_ascii_lowercase();
    } else {
        // Rare in code; `str::to_lowercase` gets context-dependent mappings (final sigma) right.
        out.push_str(&s.to_lowercase());
    }
}

/// Emits the whole form of one word and, if it has internal boundaries, its parts.
fn emit_word(word: &str, ascii: bool, scratch: &mut Scratch, f: &mut impl FnMut(&str)) {
    let bytes = word.as_bytes();
    if ascii {
        // Fast path: all lowercase letters (most words of most code) has no boundaries.
        if bytes.iter().all(u8::is_ascii_lowercase) {
            if bytes.len() <= MAX_TOKEN_BYTES {
                f(word);
            }
            return;
        }
        scratch.parts.clear();
        let split = split_parts(
            bytes.len(),
            |i| ASCII_CLASS[usize::from(bytes[i])],
            |i| i,
            |i| bytes[i] == b's',
            &mut scratch.parts,
        );
        // ASCII lowercasing keeps byte offsets, so parts are slices of the lowercased word.
        lowercase_into(word, true, &mut scratch.lower);
        if word.len() <= MAX_TOKEN_BYTES {
            f(&scratch.lower);
        }
        if split {
            for &(s, e) in &scratch.parts {
                if e - s <= MAX_TOKEN_BYTES {
                    f(&scratch.lower[s..e]);
                }
            }
        }
    } else {
        scratch.chars.clear();
        scratch.chars.extend(
            word.char_indices()
                .map(|(i, c)| (i, char_class(c), c == 's')),
        );
        scratch.parts.clear();
        let chars = &scratch.chars;
        let split = split_parts(
            chars.len(),
            |i| chars[i].1,
            |i| chars.get(i).map_or(word.len(), |c| c.0),
            |i| chars[i].2,
            &mut scratch.parts,
        );
        if word.len() <= MAX_TOKEN_BYTES {
            lowercase_into(word, false, &mut scratch.lower);
            f(&scratch.lower);
        }
        if split {
            for &(s, e) in &scratch.parts {
                if e - s <= MAX_TOKEN_BYTES {
                    let part = &word[s..e];
                    lowercase_into(part, part.is_ascii(), &mut scratch.lower);
                    f(&scratch.lower);
                }
            }
        }
    }
}

/// Splits a word of `n` chars into parts (byte ranges, pushed to `parts`); returns whether the
/// word has any internal boundary. `class(i)` is the class of char `i`, `offset(i)` its byte
/// offset (`offset(n)` is the word's length) and `is_s(i)` whether it is a lowercase `s`.
fn split_parts(
    n: usize,
    class: impl Fn(usize) -> u8,
    offset: impl Fn(usize) -> usize,
    is_s: impl Fn(usize) -> bool,
    parts: &mut Vec<(usize, usize)>,
) -> bool {
    let mut boundary = false;
    // The current part: its first char and that char's byte offset.
    let mut start: Option<(usize, usize)> = None;
    // A run of three or more CJK chars is not one word but several, unmarked: it yields its
    // overlapping pairs of chars (the bigrams of Lucene's CJK analyzer), which a query's
    // words of two or more chars meet wherever they stand.
    let close = |first: usize, s: usize, end: usize, parts: &mut Vec<(usize, usize)>| {
        if class(first) == CJK && end - first > 2 {
            parts.extend((first..end - 1).map(|k| (offset(k), offset(k + 2))));
            true
        } else {
            parts.push((s, offset(end)));
            false
        }
    };
    for i in 0..n {
        let c = class(i);
        if c == UNDERSCORE {
            if let Some((first, s)) = start.take() {
                close(first, s, i, parts);
            }
            boundary = true;
            continue;
        }
        let Some((first, s)) = start else {
            start = Some((i, offset(i)));
            continue;
        };
        // `start` is set, so char i-1 exists and is not an underscore.
        let split = match (class(i - 1), c) {
            (CJK, CJK) => false,
            (CJK, _) | (_, CJK) => true,
            (LOWER, UPPER) | (DIGIT, LOWER | UPPER) | (LOWER | UPPER, DIGIT) => true,
            // `HTTPServer`: split before the `S`, but keep `URLs` whole.
            (UPPER, UPPER) => {
                i + 1 < n
                    && class(i + 1) == LOWER
                    && !(is_s(i + 1) && (i + 2 >= n || class(i + 2) != LOWER))
            }
            _ => false,
        };
        if split {
            close(first, s, i, parts);
            start = Some((i, offset(i)));
            boundary = true;
        }
    }
    if let Some((first, s)) = start {
        boundary |= close(first, s, n, parts);
    }
    boundary
}

/// Appends the tokens of `text` to `out`. See the [module documentation](self) for the rules.
pub fn analyze(text: &str, out: &mut Vec<String>) {
    for_each_token(text, |t| out.push(t.to_owned()));
}

/// Returns the tokens of `text`. See the [module documentation](self) for the rules.
#[must_use]
pub fn analyze_to_vec(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyze(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The splitting rules, without stems (tested separately below).
    fn toks(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_split_token(text, |t| out.push(t.to_owned()));
        out
    }

    #[test]
    fn plain_words_are_followed_by_their_stem() {
        assert_eq!(
            analyze_to_vec("Reads values"),
            ["reads", "read", "values", "valu"]
        );
        assert_eq!(
            analyze_to_vec("readValue"),
            ["readvalue", "readvalu", "read", "value", "valu"]
        );
        // Short words, numbers, snake-case wholes and compounds are not stemmed.
        assert_eq!(analyze_to_vec("args 42"), ["args", "arg", "42"]);
        assert_eq!(analyze_to_vec("ids"), ["ids"]);
        assert_eq!(
            analyze_to_vec("parse_files os.path"),
            [
                "parse_files",
                "parse",
                "pars",
                "files",
                "file",
                "os",
                "path",
                "os.path"
            ]
        );
    }

    #[test]
    fn accents_are_also_given_without() {
        assert_eq!(
            analyze_to_vec("Résumés größe"),
            ["résumés", "resumes", "resum", "größe", "grosse", "gross"]
        );
        assert_eq!(
            analyze_to_vec("naïve_café"),
            [
                "naïve_café",
                "naive_cafe",
                "naïve",
                "naive",
                "naiv",
                "café",
                "cafe"
            ]
        );
        // A query typed without accents meets the text, and the other way round.
        for (written, typed) in [("Crème brûlée", "creme brulee"), ("Łódź", "Lodz")] {
            let written = analyze_to_vec(written);
            assert!(analyze_to_vec(typed).iter().all(|t| written.contains(t)));
        }
        // Other scripts keep their marks: `й` is not `и`.
        assert_eq!(analyze_to_vec("йод"), ["йод"]);
        assert_eq!(analyze_to_vec("日本語"), ["日本語", "日本", "本語"]);
    }

    #[test]
    fn a_word_is_given_its_other_spellings() {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(word_variants("josé"), (Some("jose".to_owned()), vec![]));
        assert_eq!(
            word_variants("straße"),
            (Some("strasse".to_owned()), vec![])
        );
        assert_eq!(word_variants("plain"), (None, vec![]));
        assert_eq!(word_variants("йод"), (None, vec![]));
        assert_eq!(
            word_variants("数据库"),
            (None, owned(&["数据库", "数据", "据库"]))
        );
        // Runs apart inside one word; a single character is a run without pairs.
        assert_eq!(
            word_variants("田中さんabc山"),
            (None, owned(&["田中さん", "田中", "中さ", "さん", "山"]))
        );
    }

    #[test]
    fn irregular_forms_meet_their_base() {
        assert_eq!(
            analyze_to_vec("went bought chose"),
            ["went", "go", "bought", "buy", "chose", "choos"]
        );
        assert_eq!(analyze_to_vec("ran met"), ["ran", "run", "met", "meet"]);
        // Every form shares a token with every inflection of its base.
        for (form, inflections) in [
            ("went", &["go", "goes", "going"][..]),
            ("bought", &["buy", "buying", "buys"]),
            ("chosen", &["choose", "choosing", "chooses"]),
            ("knives", &["knife"]),
            ("thought", &["think", "thinking", "thinks"]),
            ("felt", &["feel", "feeling", "feels"]),
        ] {
            let form_tokens = analyze_to_vec(form);
            for inflection in inflections {
                let shared = analyze_to_vec(inflection)
                    .into_iter()
                    .any(|t| form_tokens.contains(&t));
                assert!(shared, "{form} and {inflection} share no token");
            }
        }
        // Ambiguous forms and ordinary short words are left alone.
        assert_eq!(analyze_to_vec("left bit let"), ["left", "bit", "let"]);
    }

    fn assert_tokens(text: &str, expected: &[&str]) {
        assert_eq!(toks(text), expected, "tokens of {text:?}");
    }

    #[test]
    fn plain_lowercase_words() {
        assert_tokens("fn main() { return x; }", &["fn", "main", "return", "x"]);
        assert_tokens("", &[]);
        assert_tokens("  ;;; (){}  ", &[]);
    }

    #[test]
    fn camel_and_pascal_case() {
        assert_tokens("camelCase", &["camelcase", "camel", "case"]);
        assert_tokens("getUserName", &["getusername", "get", "user", "name"]);
        assert_tokens("PascalCase", &["pascalcase", "pascal", "case"]);
        // A single capitalised word has no boundary.
        assert_tokens("Foo", &["foo"]);
        assert_tokens("iOS", &["ios", "i", "os"]);
    }

    #[test]
    fn snake_and_screaming_snake() {
        assert_tokens("parse_args", &["parse_args", "parse", "args"]);
        assert_tokens(
            "MAX_BUFFER_SIZE",
            &["max_buffer_size", "max", "buffer", "size"],
        );
        assert_tokens("__init__", &["__init__", "init"]);
        assert_tokens("_private", &["_private", "private"]);
        assert_tokens("a__b", &["a__b", "a", "b"]);
        // Bare underscores are not words.
        assert_tokens("_ = __;", &[]);
    }

    #[test]
    fn acronyms() {
        assert_tokens("HTTPServer", &["httpserver", "http", "server"]);
        assert_tokens(
            "XMLHttpRequest",
            &["xmlhttprequest", "xml", "http", "request"],
        );
        assert_tokens("IOError", &["ioerror", "io", "error"]);
        assert_tokens("parseURLs", &["parseurls", "parse", "urls"]);
        assert_tokens("getIDs", &["getids", "get", "ids"]);
        assert_tokens("URLsForUser", &["urlsforuser", "urls", "for", "user"]);
        assert_tokens("HTTP", &["http"]);
        assert_tokens("ASet", &["aset", "a", "set"]);
    }

    #[test]
    fn digits() {
        assert_tokens("utf8", &["utf8", "utf", "8"]);
        assert_tokens("sha256sum", &["sha256sum", "sha", "256", "sum"]);
        assert_tokens("UTF8String", &["utf8string", "utf", "8", "string"]);
        assert_tokens("int32_t", &["int32_t", "int", "32", "t"]);
        assert_tokens("x86_64", &["x86_64", "x", "86", "64"]);
        assert_tokens("42", &["42"]);
        assert_tokens("CPUs2", &["cpus2", "cpus", "2"]);
    }

    #[test]
    fn dotted_and_path_compounds() {
        assert_tokens("os.path.join", &["os", "path", "join", "os.path.join"]);
        assert_tokens(
            "self.userName",
            &["self", "username", "user", "name", "self.username"],
        );
        assert_tokens("std::io::Read", &["std", "io", "read", "std::io::read"]);
        assert_tokens("foo->bar", &["foo", "bar", "foo->bar"]);
        assert_tokens(
            "kebab-case-name",
            &["kebab", "case", "name", "kebab-case-name"],
        );
        assert_tokens("src/main.rs", &["src", "main", "rs", "main.rs"]);
        // Numbers are treated like everything else.
        assert_tokens("1.5", &["1", "5", "1.5"]);
    }

    #[test]
    fn separators_need_word_chars_on_both_sides() {
        assert_tokens("a . b", &["a", "b"]);
        assert_tokens("end.", &["end"]);
        assert_tokens(".start", &["start"]);
        assert_tokens("--flag", &["flag"]);
        assert_tokens("a--b", &["a", "b"]);
        assert_tokens("a:b", &["a", "b"]);
        assert_tokens("a::", &["a"]);
        assert_tokens("a->", &["a"]);
        assert_tokens("x->y.z", &["x", "y", "z", "x->y.z"]);
        assert_tokens("a.b c.d", &["a", "b", "a.b", "c", "d", "c.d"]);
    }

    #[test]
    fn unicode_words() {
        assert_tokens("Größe", &["größe"]);
        assert_tokens("straßeName", &["straßename", "straße", "name"]);
        assert_tokens("ΟΔΟΣ", &["οδος"]); // final sigma
        assert_tokens("数据", &["数据"]);
        assert_tokens(
            "日本語テキスト",
            &[
                "日本語テキスト",
                "日本",
                "本語",
                "語テ",
                "テキ",
                "キス",
                "スト",
            ],
        );
        assert_tokens("読込text", &["読込text", "読込", "text"]);
        assert_tokens(
            "데이터베이스에서",
            &[
                "데이터베이스에서",
                "데이",
                "이터",
                "터베",
                "베이",
                "이스",
                "스에",
                "에서",
            ],
        );
        assert_tokens("naïve_café", &["naïve_café", "naïve", "café"]);
        assert_tokens("ÉtatInitial", &["étatinitial", "état", "initial"]);
        assert_tokens("数据2", &["数据2", "数据", "2"]);
        // Non-word symbols split words.
        assert_tokens("a→b", &["a", "b"]);
        assert_tokens("émoji🙂ok", &["émoji", "ok"]);
    }

    #[test]
    fn short_tokens_are_kept() {
        assert_tokens("a b cd", &["a", "b", "cd"]);
        assert_tokens("i += 1", &["i", "1"]);
    }

    #[test]
    fn long_blobs_keep_only_short_parts() {
        let long_lower = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert_tokens(&long_lower, &[]);
        let exact = "b".repeat(MAX_TOKEN_BYTES);
        assert_eq!(toks(&exact), vec![exact.clone()]);
        // A base64-like blob: the whole form is dropped, the parts stay.
        let blob = "aGVsbG8gd29ybGQgdGhpcyBpcyBhIHZlcnkgbG9uZyBiYXNlNjQgYmxvYiB0aGF0IGdvZXM";
        assert!(blob.len() > MAX_TOKEN_BYTES);
        let t = toks(blob);
        assert!(!t.is_empty());
        assert!(t.iter().all(|t| t.len() <= MAX_TOKEN_BYTES && t.len() < 10));
        // A long dotted chain drops the compound but keeps the words.
        let chain = ["segment"; 12].join(".");
        assert!(chain.len() > MAX_TOKEN_BYTES);
        assert_eq!(toks(&chain), vec!["segment"; 12]);
        // A long snake identifier keeps its parts.
        let snake = ["part"; 20].join("_");
        assert_eq!(toks(&snake), vec!["part"; 20]);
    }

    #[test]
    fn vec_and_callback_agree() {
        let text = "impl HTTPServer { fn parse_args(&self) -> Vec<u8> { os.path.join(a, b) } }";
        let mut from_callback = Vec::new();
        for_each_token(text, |t| from_callback.push(t.to_owned()));
        let mut appended = vec!["existing".to_owned()];
        analyze(text, &mut appended);
        assert_eq!(appended[0], "existing");
        assert_eq!(&appended[1..], &from_callback[..]);
        assert_eq!(analyze_to_vec(text), from_callback);
    }

    #[test]
    fn queries_and_documents_meet() {
        // Different spellings of the same identifier share their parts.
        let doc = toks("let server = HttpServer::new(config);");
        for q in ["http server", "HTTPServer", "http_server", "httpServer"] {
            for t in toks(q) {
                if t != "http_server" {
                    assert!(doc.contains(&t), "{t} from {q:?} not in {doc:?}");
                }
            }
        }
    }
}

//! BERT WordPiece tokenization without the alignment bookkeeping.
//!
//! `tokenizers` tracks the offsets of every character through each normalisation step,
//! which a static model never reads: on code, that bookkeeping took most of the static
//! engine's time. For a tokenizer whose pipeline is BERT's (its normalizer, its
//! pre-tokenizer, WordPiece), a text gets the same ids here, with the same character tables
//! (`unicode_categories`, `unicode-normalization-alignments`); ASCII text takes a shorter
//! path still. A text holding an added token such as `[MASK]` goes through `tokenizers`.

use std::collections::HashMap;

use tokenizers::{
    Model, ModelWrapper, NormalizerWrapper, PreTokenizerWrapper, Tokenizer,
    normalizers::bert::BertNormalizer,
};
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

type Vocab = HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>;

/// The fast path of one BERT WordPiece tokenizer.
pub(crate) struct FastWordPiece {
    /// Pieces that start a word.
    starts: Vocab,
    /// Pieces that continue one, without the continuation prefix.
    continues: Vocab,
    unknown: u32,
    max_word: usize,
    lowercase: bool,
    /// Spaces around each CJK ideograph, so that each is a word.
    chinese: bool,
    /// Accents (nonspacing marks after canonical decomposition) dropped.
    strip_accents: bool,
    /// Added tokens (`[CLS]`, `[MASK]`, ...): `tokenizers` matches them in the text first.
    added: Vec<String>,
}

impl FastWordPiece {
    /// The fast path of `tokenizer`, or `None` if its pipeline is not BERT's.
    pub(crate) fn of(tokenizer: &Tokenizer) -> Option<Self> {
        let (lowercase, chinese, strip_accents) = match tokenizer.get_normalizer()? {
            NormalizerWrapper::BertNormalizer(BertNormalizer {
                clean_text: true,
                lowercase,
                handle_chinese_chars,
                strip_accents,
                ..
            }) => (
                *lowercase,
                *handle_chinese_chars,
                strip_accents.unwrap_or(*lowercase),
            ),
            _ => return None,
        };
        if !matches!(
            tokenizer.get_pre_tokenizer()?,
            PreTokenizerWrapper::BertPreTokenizer(_)
        ) {
            return None;
        }
        let ModelWrapper::WordPiece(model) = tokenizer.get_model() else {
            return None;
        };
        // Without a prefix a continuing piece is any piece: rare enough to leave to
        // `tokenizers`.
        let prefix = model.continuing_subword_prefix.as_bytes();
        if prefix.is_empty() {
            return None;
        }
        let mut starts = Vocab::default();
        let mut continues = Vocab::default();
        for (piece, id) in model.get_vocab() {
            let bytes = piece.as_bytes();
            if bytes.starts_with(prefix) {
                continues.insert(bytes[prefix.len()..].into(), id);
            }
            starts.insert(bytes.into(), id);
        }
        let unknown = *starts.get(model.unk_token.as_bytes())?;
        let added = tokenizer
            .get_added_tokens_decoder()
            .values()
            .filter(|token| !token.content.is_empty())
            .map(|token| token.content.clone())
            .collect();
        Some(Self {
            starts,
            continues,
            unknown,
            max_word: model.max_input_chars_per_word,
            lowercase,
            chinese,
            strip_accents,
            added,
        })
    }

    /// The first `max` ids of `text` (no special tokens), or `None` when `text` needs the
    /// full tokenizer (it holds an added token).
    pub(crate) fn encode(&self, text: &str, max: usize) -> Option<Vec<u32>> {
        let clean = if text.is_ascii() {
            self.normalize_ascii(text)
        } else {
            self.normalize(text)
        };
        if self
            .added
            .iter()
            .any(|token| text.contains(token.as_str()) || clean.contains(token.as_str()))
        {
            return None;
        }
        // BertPreTokenizer: words split at whitespace, each punctuation character a word.
        let mut ids = Vec::new();
        let mut start = 0;
        for (at, c) in clean.char_indices() {
            let space = c.is_whitespace();
            if space || c.is_ascii_punctuation() || (!c.is_ascii() && c.is_punctuation()) {
                self.word(&clean.as_bytes()[start..at], &mut ids);
                let end = at + c.len_utf8();
                if !space {
                    self.word(&clean.as_bytes()[at..end], &mut ids);
                }
                start = end;
                if ids.len() >= max {
                    break;
                }
            }
        }
        if ids.len() < max {
            self.word(&clean.as_bytes()[start..], &mut ids);
        }
        ids.truncate(max);
        Some(ids)
    }

    /// `BertNormalizer` on ASCII: control characters go, tab and line breaks become spaces,
    /// letters are lowercased (accents and Chinese characters are not ASCII).
    fn normalize_ascii(&self, text: &str) -> String {
        text.chars()
            .filter(|&c| c >= ' ' && c != '\x7f' || matches!(c, '\t' | '\n' | '\r'))
            .map(|c| match c {
                '\t' | '\n' | '\r' => ' ',
                _ if self.lowercase => c.to_ascii_lowercase(),
                _ => c,
            })
            .collect()
    }

    /// `BertNormalizer`: control characters out, whitespace to spaces, spaces around CJK
    /// ideographs, canonical decomposition without nonspacing marks, lowercase; in that order.
    fn normalize(&self, text: &str) -> String {
        let mut clean = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            match c {
                '\t' | '\n' | '\r' => clean.push(' '),
                '\0' | '\u{fffd}' => {}
                c if c.is_other() => {}
                c if c.is_whitespace() => clean.push(' '),
                c if self.chinese && is_chinese_char(c) => {
                    clean.push(' ');
                    clean.push(c);
                    clean.push(' ');
                }
                c => clean.push(c),
            }
        }
        if self.strip_accents {
            clean = clean
                .nfd()
                .map(|(c, _)| c)
                .filter(|c| !c.is_mark_nonspacing())
                .collect();
        }
        if self.lowercase {
            clean = clean.chars().flat_map(char::to_lowercase).collect();
        }
        clean
    }

    /// WordPiece: the longest known piece at each position, the whole word unknown if some
    /// position has none (or the word has too many characters). Pieces end at character
    /// boundaries: a key cut inside a character is not UTF-8, so no piece matches it.
    fn word(&self, word: &[u8], ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        let chars = || word.iter().filter(|&&b| !is_continuation(b)).count();
        if word.len() > self.max_word && chars() > self.max_word {
            ids.push(self.unknown);
            return;
        }
        let before = ids.len();
        let mut start = 0;
        while start < word.len() {
            let pieces = if start == 0 {
                &self.starts
            } else {
                &self.continues
            };
            let Some((end, id)) = (start + 1..=word.len())
                .rev()
                .filter(|&end| end == word.len() || !is_continuation(word[end]))
                .find_map(|end| pieces.get(&word[start..end]).map(|&id| (end, id)))
            else {
                ids.truncate(before);
                ids.push(self.unknown);
                return;
            };
            ids.push(id);
            start = end;
        }
    }
}

/// A byte inside a UTF-8 character, after its first.
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The CJK ideographs `BertNormalizer` sets apart (its table: the CJK Unified Ideographs
/// blocks and their extensions, and the compatibility ideographs).
fn is_chinese_char(c: char) -> bool {
    matches!(u32::from(c),
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x2_0000..=0x2_A6DF
        | 0x2_A700..=0x2_B73F
        | 0x2_B740..=0x2_B81F
        | 0x2_B920..=0x2_CEAF
        | 0xF900..=0xFAFF
        | 0x2_F800..=0x2_FA1F)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use tokenizers::{
        AddedToken, models::wordpiece::WordPiece, pre_tokenizers::bert::BertPreTokenizer,
    };

    use super::*;

    fn bert(lowercase: bool, prefix: &str) -> Tokenizer {
        let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .map(ToString::to_string)
            .collect();
        for word in [
            "the", "self", "parse", "def", "return", "value", "read", "to", "end", "http",
            "server", "a", "b", "e", "x", "1", "2", "0", "Parse", "Self", "un", "known", "é",
            "creme", "crème", "stra", "数", "据", "東", "京", "한국", "йод", "Йод", "ελ", "i",
        ] {
            vocab.push(word.into());
        }
        for piece in [
            "s",
            "er",
            "ing",
            "ed",
            "r",
            "e",
            "x",
            "1",
            "0",
            "ver",
            "args",
            "Args",
            "ße",
            "어",
            "\u{307}",
            "ληνικα",
            "λληνικά",
        ] {
            vocab.push(format!("{prefix}{piece}"));
        }
        vocab.extend(
            (33u8..127)
                .filter(u8::is_ascii_punctuation)
                .map(|b| (b as char).to_string()),
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vocab.txt");
        std::fs::write(&file, vocab.join("\n")).unwrap();
        let model = WordPiece::from_file(file.to_str().unwrap())
            .unk_token("[UNK]".into())
            .continuing_subword_prefix(prefix.into())
            .max_input_chars_per_word(12)
            .build()
            .unwrap();
        let mut tokenizer = Tokenizer::new(model);
        tokenizer
            .with_normalizer(Some(BertNormalizer::new(true, true, None, lowercase)))
            .unwrap();
        tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
        tokenizer
            .add_special_tokens([
                AddedToken::from("[CLS]", true),
                AddedToken::from("[SEP]", true),
                AddedToken::from("[MASK]", true),
            ])
            .unwrap();
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: 40,
                ..tokenizers::TruncationParams::default()
            }))
            .unwrap();
        tokenizer
    }

    /// Code-like texts: words the vocabulary knows, pieces, unknown words, words too long,
    /// punctuation runs, control characters, added tokens; every ASCII character, and
    /// characters of every kind the normalizer treats apart (accents, ideographs, other
    /// whitespace and punctuation, format, private-use and unassigned characters).
    fn texts() -> Vec<String> {
        let words = [
            "the",
            "Parse",
            "parser",
            "parsed",
            "selfs",
            "SELF",
            "read_to_end",
            "HTTPServer",
            "parseArgs",
            "x1",
            "e10",
            "unknownword",
            "abcdefghijklmnop",
            "[MASK]",
            "[cls]",
            "a.b",
            "(value)",
            "->",
            "::",
            "\t",
            "\n",
            "\r\n",
            "\x00",
            "\x07",
            "\x0b",
            "\x0c",
            "\x1f",
            "\x7f",
            "  ",
            "##s",
            "#",
            "é",
            "Crème",
            "cre\u{300}me",
            "straße",
            "İstanbul",
            "ǅemal",
            "ﬁle",
            "数据库",
            "東京",
            "한국어",
            "Йод",
            "Ελληνικά",
            "مرحبا",
            "\u{200b}",
            "\u{85}",
            "\u{a0}",
            "\u{3000}",
            "\u{fffd}",
            "\u{e000}",
            "\u{378}",
            "\u{1f970}",
            "😀",
            "«quoted»",
            "—",
            "…",
            "\u{903}",
            "\u{20001}",
            "ééééééééééééé",
        ];
        let mut rng = StdRng::seed_from_u64(7);
        let mut out: Vec<String> = words.iter().map(ToString::to_string).collect();
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..rng.random_range(0..30) {
                if rng.random_bool(0.1) {
                    text.push(char::from(rng.random_range(0u8..128)));
                } else if rng.random_bool(0.1) {
                    // Anywhere in Unicode, mostly the first planes.
                    let top = if rng.random_bool(0.8) {
                        0x3_0000
                    } else {
                        0x11_0000
                    };
                    text.extend(char::from_u32(rng.random_range(0x80..top)));
                } else {
                    text.push_str(words[rng.random_range(0..words.len())]);
                    if rng.random_bool(0.6) {
                        text.push(' ');
                    }
                }
            }
            out.push(text);
        }
        out
    }

    #[test]
    fn text_gets_the_ids_tokenizers_gives() {
        let texts = texts();
        for (lowercase, chinese, strip_accents) in [
            (true, true, None),
            (false, true, None),
            (true, false, Some(false)),
            (false, true, Some(true)),
        ] {
            let mut tokenizer = bert(lowercase, "##");
            tokenizer
                .with_normalizer(Some(BertNormalizer::new(
                    true,
                    chinese,
                    strip_accents,
                    lowercase,
                )))
                .unwrap();
            let fast = FastWordPiece::of(&tokenizer).unwrap();
            let (mut ascii, mut unicode) = (0, 0);
            for text in &texts {
                let Some(ids) = fast.encode(text, 40) else {
                    assert!(text.contains('[') || text.to_lowercase().contains("[cls"));
                    continue;
                };
                let expected = tokenizer.encode(text.as_str(), false).unwrap();
                assert_eq!(
                    ids,
                    expected.get_ids(),
                    "{text:?} ({lowercase}, {chinese}, {strip_accents:?})"
                );
                if text.is_ascii() {
                    ascii += 1;
                } else {
                    unicode += 1;
                }
            }
            assert!(ascii > 200 && unicode > 2000, "{ascii} {unicode}");
        }
    }

    #[test]
    fn other_pipelines_have_no_fast_path() {
        assert!(FastWordPiece::of(&bert(true, "##")).is_some());
        let mut tokenizer = bert(true, "##");
        tokenizer.with_pre_tokenizer(None::<PreTokenizerWrapper>);
        assert!(FastWordPiece::of(&tokenizer).is_none());
        let mut tokenizer = bert(true, "##");
        tokenizer
            .with_normalizer(None::<NormalizerWrapper>)
            .unwrap();
        assert!(FastWordPiece::of(&tokenizer).is_none());
        // No continuation prefix: left to `tokenizers`.
        assert!(FastWordPiece::of(&bert(true, "")).is_none());
    }
}

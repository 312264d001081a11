//! BERT WordPiece tokenization of ASCII text without the alignment bookkeeping.
//!
//! `tokenizers` tracks the offsets of every character through each normalisation step,
//! which a static model never reads: on code, that bookkeeping (and Unicode decomposition
//! for accents ASCII does not have) took most of the static engine's time. For a tokenizer
//! whose pipeline is BERT's (its normalizer, its pre-tokenizer, WordPiece), an ASCII text
//! gets the same ids here; any other text, or one holding an added token such as `[MASK]`,
//! goes through `tokenizers` as before.

use std::collections::HashMap;

use tokenizers::{
    Model, ModelWrapper, NormalizerWrapper, PreTokenizerWrapper, Tokenizer,
    normalizers::bert::BertNormalizer,
};

type Vocab = HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>;

/// The ASCII fast path of one BERT WordPiece tokenizer.
pub(crate) struct AsciiWordPiece {
    /// Pieces that start a word.
    starts: Vocab,
    /// Pieces that continue one, without the continuation prefix.
    continues: Vocab,
    unknown: u32,
    max_word: usize,
    lowercase: bool,
    /// Added tokens (`[CLS]`, `[MASK]`, ...): `tokenizers` matches them in the text first.
    added: Vec<String>,
}

impl AsciiWordPiece {
    /// The fast path of `tokenizer`, or `None` if its pipeline is not BERT's.
    pub(crate) fn of(tokenizer: &Tokenizer) -> Option<Self> {
        let lowercase = match tokenizer.get_normalizer()? {
            NormalizerWrapper::BertNormalizer(BertNormalizer {
                clean_text: true,
                lowercase,
                ..
            }) => *lowercase,
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
            added,
        })
    }

    /// The first `max` ids of `text` (no special tokens), or `None` when `text` needs the
    /// full tokenizer (not ASCII, or holding an added token).
    pub(crate) fn encode(&self, text: &str, max: usize) -> Option<Vec<u32>> {
        if !text.is_ascii() {
            return None;
        }
        // BertNormalizer on ASCII: control characters go, tab and line breaks become spaces,
        // letters are lowercased (accents and Chinese characters are not ASCII).
        let clean: Vec<u8> = text
            .bytes()
            .filter(|&b| b >= 0x20 && b != 0x7f || matches!(b, b'\t' | b'\n' | b'\r'))
            .map(|b| match b {
                b'\t' | b'\n' | b'\r' => b' ',
                _ if self.lowercase => b.to_ascii_lowercase(),
                _ => b,
            })
            .collect();
        // ASCII in, ASCII out: always valid UTF-8.
        let cleaned = std::str::from_utf8(&clean).ok()?;
        if self
            .added
            .iter()
            .any(|token| text.contains(token.as_str()) || cleaned.contains(token.as_str()))
        {
            return None;
        }
        let mut ids = Vec::new();
        // BertPreTokenizer: words split at spaces, each punctuation character a word.
        let mut start = 0;
        for (at, &b) in clean.iter().enumerate() {
            if b == b' ' || b.is_ascii_punctuation() {
                self.word(&clean[start..at], &mut ids);
                if b != b' ' {
                    self.word(&clean[at..=at], &mut ids);
                }
                start = at + 1;
                if ids.len() >= max {
                    break;
                }
            }
        }
        if ids.len() < max {
            self.word(&clean[start..], &mut ids);
        }
        ids.truncate(max);
        Some(ids)
    }

    /// WordPiece: the longest known piece at each position, the whole word unknown if some
    /// position has none (or the word is too long).
    fn word(&self, word: &[u8], ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.len() > self.max_word {
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
            "server", "a", "b", "e", "x", "1", "2", "0", "Parse", "Self", "un", "known",
        ] {
            vocab.push(word.into());
        }
        for piece in [
            "s", "er", "ing", "ed", "r", "e", "x", "1", "0", "ver", "args", "Args",
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

    /// Texts of every ASCII character, mostly code-like: words the vocabulary knows, pieces,
    /// unknown words, words too long, punctuation runs, control characters, added tokens.
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
        ];
        let mut rng = StdRng::seed_from_u64(7);
        let mut out: Vec<String> = words.iter().map(ToString::to_string).collect();
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..rng.random_range(0..30) {
                if rng.random_bool(0.2) {
                    text.push(char::from(rng.random_range(0u8..128)));
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
    fn ascii_text_gets_the_ids_tokenizers_gives() {
        for lowercase in [true, false] {
            let tokenizer = bert(lowercase, "##");
            let fast = AsciiWordPiece::of(&tokenizer).unwrap();
            let mut checked = 0;
            for text in texts() {
                let Some(ids) = fast.encode(&text, 40) else {
                    assert!(!text.is_ascii() || text.contains('[') || text.contains("cls"));
                    continue;
                };
                let expected = tokenizer.encode(text.as_str(), false).unwrap();
                assert_eq!(ids, expected.get_ids(), "{text:?} (lowercase {lowercase})");
                checked += 1;
            }
            assert!(checked > 1000, "{checked}");
        }
    }

    #[test]
    fn other_pipelines_have_no_fast_path() {
        assert!(AsciiWordPiece::of(&bert(true, "##")).is_some());
        let mut tokenizer = bert(true, "##");
        tokenizer.with_pre_tokenizer(None::<PreTokenizerWrapper>);
        assert!(AsciiWordPiece::of(&tokenizer).is_none());
        let mut tokenizer = bert(true, "##");
        tokenizer
            .with_normalizer(None::<NormalizerWrapper>)
            .unwrap();
        assert!(AsciiWordPiece::of(&tokenizer).is_none());
        // No continuation prefix: left to `tokenizers`.
        assert!(AsciiWordPiece::of(&bert(true, "")).is_none());
    }
}

//! A file's text from its bytes. UTF-8 is read as it is; a file that is not UTF-8 is decoded
//! rather than left out of the index, since one accented letter in a comment would otherwise
//! hide all of its code from search.
//!
//! - A UTF-16 byte-order mark (`FF FE`, `FE FF`): UTF-16 of that byte order (Windows editors
//!   still save resource files, scripts and C# sources so).
//! - Bytes that are not UTF-8 and hold no valid UTF-8 beyond ASCII: a legacy single-byte
//!   encoding, read as Windows-1252 (what the web reads for "Latin-1" too): accented letters,
//!   curly quotes and dashes come out right.
//! - UTF-8 with a few invalid bytes (a file edited in two encodings, a truncated character):
//!   each invalid sequence becomes U+FFFD and the rest stays as written.
//!
//! Bytes that decode to text with more than one character in 50 that no text holds (control
//! characters other than whitespace, U+FFFD; two pass in any file) are not text: binary data
//! without a NUL in its head used to be caught by failing UTF-8, and still is. A byte-order
//! mark is never part of the text. Lines are never merged or split, so line numbers match the
//! file on disk.

use std::borrow::Cow;

/// How a file's bytes were turned into text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Encoding {
    Utf8,
    /// UTF-8 with invalid sequences replaced by U+FFFD.
    Utf8Lossy,
    Windows1252,
    Utf16Le,
    Utf16Be,
}

impl Encoding {
    /// The name shown in reports; `None` for plain UTF-8, which needs no mention.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        match self {
            Encoding::Utf8 => None,
            Encoding::Utf8Lossy => Some("UTF-8 with invalid bytes replaced"),
            Encoding::Windows1252 => Some("Windows-1252"),
            Encoding::Utf16Le => Some("UTF-16LE"),
            Encoding::Utf16Be => Some("UTF-16BE"),
        }
    }
}

/// The byte order a UTF-16 byte-order mark at the start of `bytes` names.
#[must_use]
pub fn utf16_bom(bytes: &[u8]) -> Option<Encoding> {
    match bytes {
        [0xFF, 0xFE, ..] => Some(Encoding::Utf16Le),
        [0xFE, 0xFF, ..] => Some(Encoding::Utf16Be),
        _ => None,
    }
}

/// The text of `bytes` without its byte-order mark, and how it was read (see the module
/// docs), or `None` when what is not UTF-8 does not decode to text. In UTF-16 an unpaired
/// surrogate or an odd last byte becomes U+FFFD.
#[must_use]
pub fn decode(bytes: &[u8]) -> Option<(Cow<'_, str>, Encoding)> {
    let (text, encoding) = match (utf16_bom(bytes), std::str::from_utf8(bytes)) {
        (None, Ok(text)) => (Cow::Borrowed(text), Encoding::Utf8),
        (Some(order), _) => (Cow::Owned(utf16(&bytes[2..], order)), order),
        (None, Err(_)) => legacy(bytes),
    };
    if encoding != Encoding::Utf8 {
        let (chars, odd) = text.chars().fold((0, 0), |(n, odd), c| {
            (n + 1, odd + usize::from(not_text(c)))
        });
        // Two such characters pass in any file: a short one is judged by its share.
        if odd * 50 > chars.max(100) {
            return None;
        }
    }
    let text = match text {
        Cow::Borrowed(text) => Cow::Borrowed(text.strip_prefix('\u{feff}').unwrap_or(text)),
        Cow::Owned(mut text) => {
            if text.starts_with('\u{feff}') {
                text.drain(..'\u{feff}'.len_utf8());
            }
            Cow::Owned(text)
        }
    };
    Some((text, encoding))
}

/// Characters that text does not hold: controls other than whitespace (tab, line breaks,
/// form feed, escape), C1 controls, and the replacement character.
fn not_text(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' | '\x0c' | '\x1b' => false,
        _ => c.is_control() || c == char::REPLACEMENT_CHARACTER,
    }
}

/// UTF-16 units of the byte `order` (`body` follows the mark).
fn utf16(body: &[u8], order: Encoding) -> String {
    let unit = |pair: &[u8]| {
        let pair = [pair[0], pair[1]];
        if order == Encoding::Utf16Le {
            u16::from_le_bytes(pair)
        } else {
            u16::from_be_bytes(pair)
        }
    };
    let mut text: String = char::decode_utf16(body.chunks_exact(2).map(unit))
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect();
    if body.len() % 2 == 1 {
        text.push(char::REPLACEMENT_CHARACTER);
    }
    text
}

/// Bytes that are not UTF-8: UTF-8 with invalid sequences replaced when some of it is valid
/// beyond ASCII, else Windows-1252.
fn legacy(bytes: &[u8]) -> (Cow<'_, str>, Encoding) {
    if bytes.utf8_chunks().any(|chunk| !chunk.valid().is_ascii()) {
        (String::from_utf8_lossy(bytes), Encoding::Utf8Lossy)
    } else {
        let text = bytes.iter().map(|&b| windows_1252(b)).collect();
        (Cow::Owned(text), Encoding::Windows1252)
    }
}

/// One byte of Windows-1252: Latin-1 but for `80`-`9F`, which hold punctuation and a few
/// letters (as Python's `cp1252` codec has them); its five unassigned bytes become U+FFFD, not
/// the C1 controls the WHATWG table gives them, which a terminal may act on.
fn windows_1252(byte: u8) -> char {
    const HIGH: [char; 32] = [
        '\u{20AC}', '\u{FFFD}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}',
        '\u{2021}', '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{FFFD}',
        '\u{017D}', '\u{FFFD}', '\u{FFFD}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}',
        '\u{2022}', '\u{2013}', '\u{2014}', '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}',
        '\u{0153}', '\u{FFFD}', '\u{017E}', '\u{0178}',
    ];
    match byte {
        0x80..=0x9F => HIGH[usize::from(byte - 0x80)],
        _ => char::from(byte),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_borrowed_as_it_is() {
        let (text, how) = decode("naïve = 1\n".as_bytes()).unwrap();
        assert!(matches!(text, Cow::Borrowed(_)));
        assert_eq!((text.as_ref(), how), ("naïve = 1\n", Encoding::Utf8));
        assert_eq!(how.name(), None);
        // The mark goes, whatever the encoding.
        assert_eq!(decode(b"\xef\xbb\xbfx = 1").unwrap().0, "x = 1");
        let lossy = decode(b"\xef\xbb\xbfcaf\xc3\xa9 \xe9").unwrap();
        assert_eq!(lossy, (Cow::Borrowed("café \u{FFFD}"), Encoding::Utf8Lossy));
    }

    #[test]
    fn legacy_bytes_read_as_windows_1252() {
        let bytes = b"# \xa9 M\xfcller \x93quoted\x94 \x96 \x80\n\x81def f(): pass\n";
        let (text, how) = decode(bytes).unwrap();
        assert_eq!(how, Encoding::Windows1252);
        assert_eq!(text, "# © Müller “quoted” – €\n\u{FFFD}def f(): pass\n");
    }

    #[test]
    fn utf8_with_a_stray_byte_keeps_its_characters() {
        let (text, how) =
            decode(b"caf\xc3\xa9 = 1  # \xe9t\xe9 and much more text\nx = 2\n").unwrap();
        assert_eq!(how, Encoding::Utf8Lossy);
        assert_eq!(
            text,
            "café = 1  # \u{FFFD}t\u{FFFD} and much more text\nx = 2\n"
        );
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn utf16_with_a_mark_in_either_order() {
        let source = "class Ünit {\r\n  int x; // 😀\r\n}\r\n";
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(source.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(source.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(
            decode(&le),
            Some((Cow::Borrowed(source), Encoding::Utf16Le))
        );
        assert_eq!(
            decode(&be),
            Some((Cow::Borrowed(source), Encoding::Utf16Be))
        );
        // A lone surrogate and an odd last byte are replaced, not fatal.
        let mut odd = vec![0xFF, 0xFE, 0x00, 0xD8];
        odd.extend("b".repeat(100).encode_utf16().flat_map(u16::to_le_bytes));
        odd.push(b'c');
        let (text, _) = decode(&odd).unwrap();
        assert_eq!(text, format!("\u{FFFD}{}\u{FFFD}", "b".repeat(100)));
    }

    /// What is not UTF-8 and does not decode to text is binary data: random bytes, a UTF-16
    /// mark before them, or mostly invalid UTF-8. Valid UTF-8 is never questioned.
    #[test]
    fn bytes_that_decode_to_no_text_are_refused() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        assert_eq!(decode(&random), None);
        assert_eq!(decode(&[&[0xFF, 0xFE][..], &random].concat()), None);
        assert_eq!(decode(b"\xe9\xe9\x01\x02\x03 ab"), None);
        let mixed = [&"é".repeat(10).into_bytes()[..], &[0xE9; 20]].concat();
        assert_eq!(decode(&mixed), None);
        assert!(decode("tab\tbell\x07 text".as_bytes()).is_some());
        // One form feed, one escape, one stray byte in a page of Latin-1: text.
        let page = [&b"\x0c\x1b[1m M\xfcller "[..], &b"x".repeat(200)].concat();
        assert_eq!(
            decode(&page).map(|(_, how)| how),
            Some(Encoding::Windows1252)
        );
    }
}

//! A file's text from its bytes. UTF-8 is read as it is; a file that is not UTF-8 is decoded
//! rather than left out of the index, since one accented letter in a comment would otherwise
//! hide all of its code from search.
//!
//! - A UTF-16 byte-order mark (`FF FE`, `FE FF`): UTF-16 of that byte order (Windows editors
//!   still save resource files, scripts and C# sources so).
//! - Bytes that are not UTF-8 and name their encoding (a coding comment, an XML declaration,
//!   an HTML `<meta>` charset): that encoding, when they decode in it without error.
//! - Bytes that are not UTF-8 and hold few valid UTF-8 characters beyond ASCII: a legacy
//!   encoding, the one Mozilla's detector (`chardetng`, what Firefox runs on pages and local
//!   files that name none) finds likeliest: Windows-1252 for Western European text, Shift_JIS,
//!   EUC-KR, GBK or Big5 for East Asian, Windows-1251 or KOI8-R for Cyrillic, and so on;
//!   decoded with `encoding_rs`.
//! - UTF-8 with a few invalid bytes (a file edited in two encodings, a truncated character), or
//!   behind a UTF-8 byte-order mark: each invalid sequence becomes U+FFFD and the rest stays as
//!   written.
//!
//! Bytes that decode to text with more than one character in 50 that no text holds (control
//! characters other than whitespace, U+FFFD; two pass in any file) are not text: binary data
//! without a NUL in its head used to be caught by failing UTF-8, and still is. A byte-order
//! mark is never part of the text. Lines are never merged or split, so line numbers match the
//! file on disk as editors show it: a file whose only line breaks are CRs (classic Mac OS)
//! has them read as line breaks, as editors and Python do, not as one line.

use std::borrow::Cow;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};

/// How a file's bytes were turned into text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    Utf8,
    /// UTF-8 with invalid sequences replaced by U+FFFD.
    Utf8Lossy,
    /// UTF-16 (after its byte-order mark) or a detected legacy encoding.
    Other(&'static encoding_rs::Encoding),
}

impl Encoding {
    /// The name shown in reports (the WHATWG name: `windows-1252`, `Shift_JIS`, `UTF-16LE`);
    /// `None` for plain UTF-8, which needs no mention.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        match self {
            Encoding::Utf8 => None,
            Encoding::Utf8Lossy => Some("UTF-8 with invalid bytes replaced"),
            Encoding::Other(charset) => Some(charset.name()),
        }
    }
}

/// Whether `bytes` open with a UTF-16 byte-order mark (whose text holds NULs).
#[must_use]
pub fn utf16_bom(bytes: &[u8]) -> bool {
    matches!(bytes, [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..])
}

/// The text of `bytes` without its byte-order mark, and how it was read (see the module
/// docs), or `None` when what is not UTF-8 does not decode to text. In UTF-16 an unpaired
/// surrogate or an odd last byte becomes U+FFFD.
#[must_use]
pub fn decode(bytes: &[u8]) -> Option<(Cow<'_, str>, Encoding)> {
    let (marked, body) = match encoding_rs::Encoding::for_bom(bytes) {
        Some((charset, len)) => (Some(charset), &bytes[len..]),
        None => (None, bytes),
    };
    let (text, encoding) = match marked {
        Some(utf16) if utf16 != encoding_rs::UTF_8 => (
            utf16.decode_without_bom_handling(body).0,
            Encoding::Other(utf16),
        ),
        _ => match std::str::from_utf8(body) {
            Ok(text) => return Some((cr_lines(Cow::Borrowed(text)), Encoding::Utf8)),
            Err(_) => legacy(body, marked.is_some()),
        },
    };
    let text = cr_lines(text);
    let (chars, odd) = text.chars().fold((0, 0), |(n, odd), c| {
        (n + 1, odd + usize::from(not_text(c)))
    });
    // Two such characters pass in any file: a short one is judged by its share.
    (odd * 50 <= chars.max(100)).then_some((text, encoding))
}

/// `text` with its CRs as LFs when CRs are its only line breaks; as it is otherwise (the
/// common case costs a search for the first LF).
fn cr_lines(text: Cow<'_, str>) -> Cow<'_, str> {
    if text.contains('\n') || !text.contains('\r') {
        return text;
    }
    Cow::Owned(text.replace('\r', "\n"))
}

/// Characters that text does not hold: controls other than whitespace (tab, line breaks,
/// form feed, escape), C1 controls, and the replacement character.
fn not_text(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' | '\x0c' | '\x1b' => false,
        _ => c.is_control() || c == char::REPLACEMENT_CHARACTER,
    }
}

/// Bytes that are not UTF-8: UTF-8 with invalid sequences replaced when they are marked as
/// UTF-8 or hold at least as many valid characters beyond ASCII as invalid sequences, else the
/// legacy encoding they most likely are. (Double-byte encodings form a valid UTF-8 sequence by
/// chance for every three to ten invalid ones; UTF-8 with a stray byte holds many valid ones.)
fn legacy(body: &[u8], marked_utf8: bool) -> (Cow<'_, str>, Encoding) {
    if let Some(charset) = declared(body).filter(|_| !marked_utf8) {
        let (text, errors) = charset.decode_without_bom_handling(body);
        if !errors {
            return (without_c1(text), Encoding::Other(charset));
        }
    }
    let (wide, invalid) = body.utf8_chunks().fold((0, 0), |(wide, invalid), chunk| {
        let chars = chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        (
            wide + chars,
            invalid + usize::from(!chunk.invalid().is_empty()),
        )
    });
    if marked_utf8 || wide >= invalid {
        return (String::from_utf8_lossy(body), Encoding::Utf8Lossy);
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(body, true);
    let charset = detector.guess(None, Utf8Detection::Deny);
    let (text, _) = charset.decode_without_bom_handling(body);
    (without_c1(text), Encoding::Other(charset))
}

/// Bytes a single-byte table leaves unassigned come out as C1 controls, which a terminal
/// showing a hit may act on: they become U+FFFD.
fn without_c1(text: Cow<'_, str>) -> Cow<'_, str> {
    let c1 = |c| matches!(c, '\u{80}'..='\u{9f}');
    if !text.contains(c1) {
        return text;
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if c1(c) {
                    char::REPLACEMENT_CHARACTER
                } else {
                    c
                }
            })
            .collect(),
    )
}

/// The legacy encoding a file names for itself: a coding comment in one of its first two
/// lines (`# -*- coding: latin-1 -*-`, as Python, Ruby, Emacs and Vim read it), an XML
/// declaration (`<?xml version="1.0" encoding="Shift_JIS"?>`) or an HTML `<meta>` charset in
/// its first KiB. Labels are read as browsers read them (`latin1` is windows-1252); UTF-8 and
/// UTF-16 are not legacy, and bytes that are not valid UTF-8 have already disproved the one,
/// while the other would have shown NULs.
fn declared(body: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let head = &body[..body.len().min(1024)];
    let label = if head.starts_with(b"<?xml") {
        let end = head.windows(2).position(|w| w == b"?>")?;
        label_after(&head[..end], b"encoding")
    } else {
        let two_lines = head.split(|&b| b == b'\n').take(2);
        two_lines
            .filter_map(|line| label_after(line, b"coding"))
            .next()
            .or_else(|| {
                let meta = find(head, b"<meta")?;
                let tag = &head[meta..];
                label_after(&tag[..find(tag, b">")?], b"charset")
            })
    }?;
    let charset = encoding_rs::Encoding::for_label(label)?;
    (charset.output_encoding() == charset && charset != encoding_rs::UTF_8).then_some(charset)
}

/// The label after the first `key` in `hay` that a `:` or `=` follows (spaces and a quote
/// may stand between).
fn label_after<'a>(hay: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut rest = hay;
    while let Some(at) = find(rest, key) {
        rest = &rest[at + key.len()..];
        let value = rest.trim_ascii_start();
        if let [b':' | b'=', value @ ..] = value {
            let value = value.trim_ascii_start();
            let value = value
                .strip_prefix(b"\"")
                .or(value.strip_prefix(b"'"))
                .unwrap_or(value);
            let len = value
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b"-_.:".contains(&b)))
                .unwrap_or(value.len());
            return (len > 0).then_some(&value[..len]);
        }
    }
    None
}

/// Where `needle` (lowercase ASCII) first occurs in `hay`, ignoring ASCII case.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_whose_only_line_breaks_are_crs_has_lines() {
        let (text, how) = decode(b"def one():\r    return 1\r\rdef two():\r").unwrap();
        assert_eq!(text, "def one():\n    return 1\n\ndef two():\n");
        assert_eq!(how, Encoding::Utf8);
        // CRLF and a stray CR inside LF lines stay as written.
        let (text, _) = decode(b"a\r\nb\rc\n").unwrap();
        assert!(matches!(text, Cow::Borrowed("a\r\nb\rc\n")));
        let (text, how) = decode(b"caf\xe9 = 1\rx = 2\r").unwrap();
        assert_eq!(
            (text.as_ref(), how.name()),
            ("café = 1\nx = 2\n", Some("windows-1252"))
        );
    }

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
        assert_eq!(how.name(), Some("windows-1252"));
        // An unassigned byte is U+FFFD, not the C1 control WHATWG's table maps it to.
        assert_eq!(text, "# © Müller “quoted” – €\n\u{FFFD}def f(): pass\n");
    }

    /// Comments in the legacy encodings of other scripts, as old code bases hold them, come
    /// back as written.
    #[test]
    fn legacy_encodings_are_detected() {
        let sources = [
            (
                encoding_rs::SHIFT_JIS,
                "// 設定ファイルを読み込んで、結果を返します。\n\
                 int load_config(const char *path) {\n    return 0; // 失敗した場合\n}\n",
            ),
            (
                encoding_rs::GBK,
                "/* 从数据库中读取用户列表，并返回结果。 */\nint list_users(void) { return 0; }\n",
            ),
            (
                encoding_rs::EUC_KR,
                "// 데이터베이스에서 사용자 목록을 가져옵니다.\nint list_users(void) { return 0; }\n",
            ),
            (
                encoding_rs::WINDOWS_1251,
                "# Функция возвращает список пользователей из базы данных.\ndef users():\n    pass\n",
            ),
        ];
        for (charset, source) in sources {
            let (bytes, _, unmappable) = charset.encode(source);
            assert!(!unmappable && std::str::from_utf8(&bytes).is_err());
            assert_eq!(
                decode(&bytes),
                Some((Cow::Borrowed(source), Encoding::Other(charset))),
                "{}",
                charset.name()
            );
        }
    }

    /// A file that names its encoding is read in it, where the detector has too little text
    /// to go on (these two are jsoup's test fixtures, which the detector reads as Windows-1251
    /// and Windows-1257).
    #[test]
    fn a_declared_encoding_wins() {
        let xml =
            b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<data>\xe4\xf6\xe5\xe9\xfc</data>\n";
        let html =
            b"<html>\n<head><meta charset=\"gb2312\"></head>\n<body>\xd6\xd0</body>\n</html>\n";
        let (python, _, _) = encoding_rs::KOI8_R
            .encode("#!/usr/bin/env python\n# -*- coding: koi8-r -*-\nNAME = 'Привет'\n");
        let cases: [(&[u8], &str, _); 3] = [
            (xml, "<data>äöåéü</data>", encoding_rs::WINDOWS_1252),
            (html, "<body>中</body>", encoding_rs::GBK),
            (&python, "NAME = 'Привет'", encoding_rs::KOI8_R),
        ];
        for (bytes, expected, charset) in cases {
            let (text, how) = decode(bytes).unwrap();
            assert!(text.contains(expected), "{text}");
            assert_eq!(how, Encoding::Other(charset));
        }
        // A label that is not a legacy encoding, or text that is not in the one named, is
        // left to the detector.
        let utf8_named = b"# coding: utf-8\n# M\xfcller and M\xfcller again\n";
        assert_eq!(decode(utf8_named).unwrap().1.name(), Some("windows-1252"));
        let wrongly_named =
            "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?>\n<a>Müller München Köln</a>\n";
        let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(wrongly_named);
        let (text, _) = decode(&bytes).unwrap();
        assert!(text.contains("Müller München Köln"), "{text}");
        assert_eq!(
            label_after(b"x = 1  # vim: set fileencoding = 'cp1252' :", b"coding"),
            Some(&b"cp1252"[..])
        );
        assert_eq!(label_after(b"print('coding is fun')", b"coding"), None);
    }

    #[test]
    fn utf8_with_a_stray_byte_keeps_its_characters() {
        let (text, how) =
            decode(b"caf\xc3\xa9 = 1  # \xe9t\xe9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9\nx = 2\n")
                .unwrap();
        assert_eq!(how, Encoding::Utf8Lossy);
        assert_eq!(text, "café = 1  # \u{FFFD}t\u{FFFD} naïve résumé\nx = 2\n");
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
        let utf16 = |charset| Some((Cow::Borrowed(source), Encoding::Other(charset)));
        assert_eq!(decode(&le), utf16(encoding_rs::UTF_16LE));
        assert_eq!(decode(&be), utf16(encoding_rs::UTF_16BE));
        // A lone surrogate and an odd last byte are replaced, not fatal.
        let mut odd = vec![0xFF, 0xFE, 0x00, 0xD8];
        odd.extend("b".repeat(100).encode_utf16().flat_map(u16::to_le_bytes));
        odd.push(b'c');
        let (text, _) = decode(&odd).unwrap();
        assert_eq!(text, format!("\u{FFFD}{}\u{FFFD}", "b".repeat(100)));
    }

    /// What is not UTF-8 and does not decode to text is binary data: random bytes, a UTF-16
    /// mark before them, or UTF-8 with too many invalid bytes. Valid UTF-8 is never questioned.
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
        let mixed = [&"é".repeat(20).into_bytes()[..], &[0xE9; 10]].concat();
        assert_eq!(decode(&mixed), None);
        assert!(decode("tab\tbell\x07 text".as_bytes()).is_some());
        // One form feed, one escape, one stray byte in a page of Latin-1: text.
        let page = [&b"\x0c\x1b[1m M\xfcller "[..], &b"x".repeat(200)].concat();
        assert_eq!(
            decode(&page).and_then(|(_, how)| how.name()),
            Some("windows-1252")
        );
    }
}

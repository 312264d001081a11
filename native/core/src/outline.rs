//! The chunks and symbols of a file version as one compressed blob (`files.outline`).
//!
//! A row per chunk and per symbol cost more than the file's own compressed text: on a
//! 128 MB tree, 27 MB of chunk rows and 18 MB of symbol rows with their indexes, for 12 MB
//! and 8 MB of strings. Nothing ever asked SQLite for one chunk or symbol by anything but its
//! file version, so they are stored the way they are read, per version, and compress to a
//! fraction of that.
//!
//! Layout before compression (one zstd frame), integers as LEB128 varints, strings as a
//! varint length and UTF-8 bytes:
//!
//! ```text
//! format (1) · chunk count · content hash of each chunk (8 bytes, little-endian)
//! per chunk:  start line · end - start · kind · has content (0/1) · symbol · local path
//!             · names · context · [content, when it is not its line range of the text]
//! symbol count
//! per symbol: name · kind · local path · start line · end - start
//! ```
//!
//! Content hashes come first so that the callers who only need them (pending vectors, the
//! view's vector keys) read no strings.

use crate::bm25::{get_varint, put_varint};
use crate::chunk::{Chunk, ChunkKind, Symbol};

const FORMAT: u8 = 1;
/// The largest outline accepted when decompressing: a damaged blob must not ask for an
/// absurd allocation (a 1 MiB file has a few thousand chunks, well under this).
const MAX_OUTLINE_BYTES: usize = 256 << 20;

/// The decoded outline. A chunk whose content is its line range of the file's text comes
/// back with an empty `content` and `derived` set: the caller cuts it from the text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outline {
    pub chunks: Vec<Chunk>,
    pub derived: Vec<bool>,
    pub symbols: Vec<Symbol>,
}

/// Encodes and compresses an outline; `derived[i]` says chunk `i`'s content is not stored.
///
/// # Errors
///
/// zstd's, on allocation failure.
pub fn encode(chunks: &[Chunk], derived: &[bool], symbols: &[Symbol]) -> std::io::Result<Vec<u8>> {
    let strings: usize = chunks
        .iter()
        .map(|c| c.symbol.len() + c.local_path.len() + c.names.len() + c.context.len() + 16)
        .sum::<usize>()
        + symbols
            .iter()
            .map(|s| s.name.len() + s.local_path.len() + 8)
            .sum::<usize>();
    let mut raw = Vec::with_capacity(strings + chunks.len() * 8 + 16);
    raw.push(FORMAT);
    put_varint(&mut raw, chunks.len() as u64);
    for c in chunks {
        raw.extend_from_slice(&c.content_hash.to_le_bytes());
    }
    for (i, c) in chunks.iter().enumerate() {
        let stored = !derived.get(i).copied().unwrap_or(false);
        put_varint(&mut raw, u64::from(c.start_line));
        put_varint(&mut raw, u64::from(c.end_line.saturating_sub(c.start_line)));
        raw.push(kind_code(c.kind));
        raw.push(u8::from(stored));
        for s in [&c.symbol, &c.local_path, &c.names, &c.context] {
            put_str(&mut raw, s);
        }
        if stored {
            put_str(&mut raw, &c.content);
        }
    }
    put_varint(&mut raw, symbols.len() as u64);
    for s in symbols {
        put_str(&mut raw, &s.name);
        raw.push(kind_code(s.kind));
        put_str(&mut raw, &s.local_path);
        put_varint(&mut raw, u64::from(s.start_line));
        put_varint(&mut raw, u64::from(s.end_line.saturating_sub(s.start_line)));
    }
    crate::textblob::zstd_compress(&raw)
}

/// The whole outline of a blob written by [`encode`].
///
/// # Errors
///
/// A message naming the damage when the blob is not a valid outline.
pub fn decode(blob: &[u8]) -> Result<Outline, String> {
    let raw = decompress(blob)?;
    let mut r = Reader::new(&raw)?;
    let hashes = r.hashes()?;
    let mut out = Outline {
        chunks: Vec::with_capacity(hashes.len()),
        derived: Vec::with_capacity(hashes.len()),
        symbols: Vec::new(),
    };
    for content_hash in hashes {
        let start_line = r.u32()?;
        let end_line = start_line.saturating_add(r.u32()?);
        let kind = r.kind()?;
        let stored = r.byte()? != 0;
        let [symbol, local_path, names, context] =
            [r.string()?, r.string()?, r.string()?, r.string()?];
        let content = if stored { r.string()? } else { String::new() };
        out.derived.push(!stored);
        out.chunks.push(Chunk {
            start_line,
            end_line,
            kind,
            symbol,
            local_path,
            names,
            context,
            content,
            content_hash,
        });
    }
    let count = r.count()?;
    out.symbols.reserve(count);
    for _ in 0..count {
        let name = r.string()?;
        let kind = r.kind()?;
        let local_path = r.string()?;
        let start_line = r.u32()?;
        let end_line = start_line.saturating_add(r.u32()?);
        out.symbols.push(Symbol {
            name,
            kind,
            local_path,
            start_line,
            end_line,
        });
    }
    if r.pos != raw.len() {
        return Err(format!("{} bytes after the outline", raw.len() - r.pos));
    }
    Ok(out)
}

/// The content hash of each chunk, in order, without reading the rest.
///
/// # Errors
///
/// As [`decode`].
pub fn content_hashes(blob: &[u8]) -> Result<Vec<i64>, String> {
    let raw = decompress(blob)?;
    Reader::new(&raw)?.hashes()
}

fn decompress(blob: &[u8]) -> Result<Vec<u8>, String> {
    crate::textblob::zstd_decompress(blob, MAX_OUTLINE_BYTES).map_err(|e| format!("outline: {e}"))
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn kind_code(kind: ChunkKind) -> u8 {
    // ALL has 18 entries: the position always fits in a byte.
    ChunkKind::ALL
        .iter()
        .position(|&k| k == kind)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Result<Self, String> {
        match buf.first() {
            Some(&FORMAT) => Ok(Reader { buf, pos: 1 }),
            Some(other) => Err(format!("outline: unknown format {other}")),
            None => Err("outline: empty".into()),
        }
    }

    fn varint(&mut self) -> Result<u64, String> {
        get_varint(self.buf, &mut self.pos)
            .ok_or_else(|| format!("outline: bad integer at byte {}", self.pos))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| format!("outline: {v} is out of range"))
    }

    /// A count of items of at least one byte each, so it cannot exceed what is left.
    fn count(&mut self) -> Result<usize, String> {
        let v = self.varint()?;
        usize::try_from(v)
            .ok()
            .filter(|&n| n <= self.buf.len() - self.pos)
            .ok_or_else(|| format!("outline: count {v} exceeds the data"))
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.buf.get(self.pos).ok_or("outline: truncated")?;
        self.pos += 1;
        Ok(b)
    }

    fn kind(&mut self) -> Result<ChunkKind, String> {
        let code = self.byte()?;
        ChunkKind::ALL
            .get(usize::from(code))
            .copied()
            .ok_or_else(|| format!("outline: unknown kind {code}"))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or("outline: truncated")?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn string(&mut self) -> Result<String, String> {
        let len = self.count()?;
        let bytes = self.bytes(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| "outline: a string is not UTF-8".into())
    }

    fn hashes(&mut self) -> Result<Vec<i64>, String> {
        let n = self.count()?;
        let block = self.bytes(n.checked_mul(8).ok_or("outline: truncated")?)?;
        Ok(block
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::chunk::chunk_file;
    use crate::lang::Language;

    fn sample() -> (Vec<Chunk>, Vec<Symbol>) {
        let text = "class Store:\n    \"\"\"Keeps things.\"\"\"\n\n    def open(self, path):\n        return path\n\n\ndef héllo():\n    return 'ü'\n";
        let parsed = chunk_file(text, Language::Python);
        assert!(parsed.chunks.len() >= 2 && !parsed.symbols.is_empty());
        (parsed.chunks, parsed.symbols)
    }

    #[test]
    fn outlines_round_trip() {
        let (chunks, symbols) = sample();
        let derived: Vec<bool> = (0..chunks.len()).map(|i| i % 2 == 0).collect();
        let blob = encode(&chunks, &derived, &symbols).unwrap();
        let back = decode(&blob).unwrap();
        assert_eq!(back.derived, derived);
        assert_eq!(back.symbols, symbols);
        for ((got, want), &derived) in back.chunks.iter().zip(&chunks).zip(&derived) {
            let content = if derived { "" } else { want.content.as_str() };
            assert_eq!(
                got,
                &Chunk {
                    content: content.into(),
                    ..want.clone()
                }
            );
        }
        let hashes: Vec<i64> = chunks.iter().map(|c| c.content_hash).collect();
        assert_eq!(content_hashes(&blob).unwrap(), hashes);
        let empty = encode(&[], &[], &[]).unwrap();
        assert_eq!(decode(&empty).unwrap(), Outline::default());
    }

    /// Any damage is an error, never a panic or a wrong outline taken for a right one.
    #[test]
    fn damaged_outlines_are_refused() {
        let (chunks, symbols) = sample();
        let derived = vec![true; chunks.len()];
        let blob = encode(&chunks, &derived, &symbols).unwrap();
        assert!(decode(&[]).is_err());
        assert!(decode(&blob[..blob.len() / 2]).is_err());
        assert!(decode(b"not zstd at all").is_err());
        // The raw layout damaged anywhere, then compressed again: checksums cannot help here,
        // so every field read must be checked.
        let raw = decompress(&blob).unwrap();
        let mut refused = 0;
        for cut in 0..raw.len() {
            let truncated = crate::textblob::zstd_compress(&raw[..cut]).unwrap();
            refused += usize::from(decode(&truncated).is_err());
        }
        assert_eq!(refused, raw.len(), "every truncation is refused");
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0xa5;
            let _ = decode(&crate::textblob::zstd_compress(&bad).unwrap());
        }
    }
}

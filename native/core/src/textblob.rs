//! A file's text, stored zstd-compressed in blocks of whole lines that decompress on their own.
//!
//! The store keeps each file version's text once instead of every chunk's text, and cuts a
//! chunk's content from it when asked. Compressing the whole file would be ~10% smaller, but
//! showing one hit would then decompress the whole file; with blocks of about
//! [`BLOCK_BYTES`] a hit costs one or two small blocks. Measured on the 128 MB benchmark tree:
//! whole files 4.05x smaller, 16 KiB blocks 3.69x, 8 KiB blocks 3.48x.
//!
//! Layout: a format byte, the number of blocks, then per block its first row (0-based line),
//! length and compressed length (all LEB128 varints), then the zstd frames one after the other.

use crate::bm25::{get_varint, put_varint};
use crate::chunk::{line_starts, lines_text};

/// Uncompressed size a block grows to before it ends (at the next line end).
const BLOCK_BYTES: usize = if cfg!(test) { 64 } else { 16 << 10 };

/// zstd level: level 3 compresses code ~4x at a few hundred MB/s per core.
const ZSTD_LEVEL: i32 = 3;

const FORMAT: u8 = 1;

/// Far above any file size worth indexing (the default cap is 1 MiB).
const MAX_TEXT_BYTES: usize = 1 << 30;

/// Compresses `text` into blocks; `None` only if zstd fails (allocation failure).
#[must_use]
pub fn compress(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut header = vec![FORMAT];
    let mut frames = Vec::new();
    let mut blocks = Vec::new();
    let (mut start, mut row) = (0, 0u64);
    while start < bytes.len() {
        let mut end = (start + BLOCK_BYTES).min(bytes.len());
        if end < bytes.len() {
            end = memchr_after(bytes, end).unwrap_or(bytes.len());
        }
        let frame = zstd_compress(&bytes[start..end]).ok()?;
        blocks.push((row, (end - start) as u64, frame.len() as u64));
        frames.extend_from_slice(&frame);
        row += bytes[start..end].iter().filter(|&&b| b == b'\n').count() as u64;
        start = end;
    }
    put_varint(&mut header, blocks.len() as u64);
    for (first_row, len, compressed) in blocks {
        put_varint(&mut header, first_row);
        put_varint(&mut header, len);
        put_varint(&mut header, compressed);
    }
    header.extend_from_slice(&frames);
    Some(header)
}

/// Just past the first `\n` at or after `from`.
fn memchr_after(bytes: &[u8], from: usize) -> Option<usize> {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| from + i + 1)
}

/// One block: its first row, its length, and where its frame sits in the blob.
struct Block {
    first_row: usize,
    len: usize,
    start: usize,
    end: usize,
}

fn blocks(blob: &[u8]) -> Result<Vec<Block>, String> {
    let mut pos = 0;
    let mut next = |what: &str| -> Result<usize, String> {
        get_varint(blob, &mut pos)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| format!("stored text: truncated {what}"))
    };
    if blob.first() != Some(&FORMAT) {
        return Err(format!("stored text: unknown format {:?}", blob.first()));
    }
    next("format")?; // the format byte reads as a one-byte varint
    let n = next("block count")?;
    let mut entries = Vec::with_capacity(n.min(blob.len()));
    for _ in 0..n {
        entries.push((
            next("block row")?,
            next("block length")?,
            next("block size")?,
        ));
    }
    let mut start = pos;
    let mut blocks = Vec::with_capacity(n);
    for (first_row, len, size) in entries {
        let end = start
            .checked_add(size)
            .filter(|&end| end <= blob.len())
            .ok_or("stored text: block past the end")?;
        blocks.push(Block {
            first_row,
            len,
            start,
            end,
        });
        start = end;
    }
    Ok(blocks)
}

thread_local! {
    /// A decompression context costs an allocation of its own: each thread keeps one.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    /// So does a compression context, a large one (its match tables are zeroed on creation):
    /// indexing compresses a block or two per file, so each thread keeps one.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `bytes` as one zstd frame at [`ZSTD_LEVEL`], with this thread's compression context.
///
/// # Errors
///
/// zstd's, on allocation failure.
pub(crate) fn zstd_compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match &mut *slot {
            Some(c) => c,
            None => slot.insert(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
        };
        compressor.compress(bytes)
    })
}

/// `f` with this thread's decompression context.
fn with_decompressor<T>(
    f: impl FnOnce(&mut zstd::bulk::Decompressor<'static>) -> Result<T, String>,
) -> Result<T, String> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let decompressor = match &mut *slot {
            Some(d) => d,
            None => slot.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
        };
        f(decompressor)
    })
}

/// One zstd frame written by [`zstd_compress`], which records its size: exactly that many
/// bytes, refused when the size is missing or above `max` (damage must not ask for an absurd
/// allocation).
///
/// # Errors
///
/// What is wrong with the frame.
pub(crate) fn zstd_decompress(frame: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
        .ok_or("not a zstd frame with its size")?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= max)
        .ok_or_else(|| format!("implausible size {size}"))?;
    with_decompressor(|decompressor| {
        let mut out = vec![0; size];
        let written = decompressor
            .decompress_to_buffer(frame, &mut out[..])
            .map_err(|e| e.to_string())?;
        if written != size {
            return Err(format!("{written} bytes where {size} were expected"));
        }
        Ok(out)
    })
}

fn decompress_blocks(blob: &[u8], blocks: &[Block]) -> Result<String, String> {
    let total = blocks.iter().map(|b| b.len).sum::<usize>();
    // Lengths come from the blob: a damaged one must not ask for an absurd allocation.
    if total > MAX_TEXT_BYTES {
        return Err(format!("stored text: implausible length {total}"));
    }
    let mut out = vec![0u8; total];
    with_decompressor(|decompressor| {
        let mut at = 0;
        for b in blocks {
            let written = decompressor
                .decompress_to_buffer(&blob[b.start..b.end], &mut out[at..at + b.len])
                .map_err(|e| format!("stored text: {e}"))?;
            if written != b.len {
                return Err(format!(
                    "stored text: block of {written} bytes, {} expected",
                    b.len
                ));
            }
            at += b.len;
        }
        Ok::<(), String>(())
    })?;
    String::from_utf8(out).map_err(|_| "stored text is not UTF-8".to_owned())
}

/// The whole text.
///
/// # Errors
///
/// A description of the damage if `blob` is not a valid blob.
pub fn text(blob: &[u8]) -> Result<String, String> {
    decompress_blocks(blob, &blocks(blob)?)
}

/// 1-based lines `start_line..=end_line`, exactly as [`lines_text`] cuts them from the whole
/// text, decompressing only the blocks that hold them.
///
/// # Errors
///
/// A description of the damage if `blob` is not a valid blob.
pub fn lines(blob: &[u8], start_line: u32, end_line: u32) -> Result<String, String> {
    let blocks = blocks(blob)?;
    let (lo, hi) = ((start_line as usize).saturating_sub(1), end_line as usize);
    if lo >= hi || blocks.is_empty() {
        return Ok(String::new());
    }
    // Blocks start at line starts, so rows lo..hi live in the blocks from the last one
    // starting at or before lo to the last one starting before hi.
    let first = blocks
        .partition_point(|b| b.first_row <= lo)
        .saturating_sub(1);
    let last = blocks.partition_point(|b| b.first_row < hi).max(first + 1);
    let base = blocks[first].first_row;
    let mut segment = decompress_blocks(blob, &blocks[first..last])?;
    if last < blocks.len() {
        // Stand-in for the next block's first line: the last row then ends where it does in
        // the whole text (before the newline that precedes the next row), not at the
        // segment's end.
        segment.push(' ');
    }
    let starts = line_starts(&segment);
    let rel = |row: usize| u32::try_from(row - base).unwrap_or(u32::MAX);
    Ok(lines_text(&segment, &starts, rel(lo) + 1, rel(hi)).to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn random_text(rng: &mut StdRng) -> String {
        let pieces = [
            "fn main() {",
            "    let x = 1;",
            "}",
            "",
            "  ",
            "\r",
            "héllo wörld",
            "x",
            "// ünïcode ✓",
        ];
        let mut text = String::new();
        for _ in 0..rng.random_range(0..80) {
            text.push_str(pieces[rng.random_range(0..pieces.len())]);
            text.push_str(if rng.random_bool(0.2) { "\r\n" } else { "\n" });
        }
        if rng.random_bool(0.5) {
            text.push_str("no final newline");
        }
        text
    }

    #[test]
    fn every_line_range_reads_as_from_the_whole_text() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..40 {
            let text = random_text(&mut rng);
            let blob = compress(&text).unwrap();
            assert_eq!(super::text(&blob).unwrap(), text);
            let starts = line_starts(&text);
            let n = u32::try_from(starts.len()).unwrap();
            for start in 1..=n + 1 {
                for end in start.saturating_sub(1)..=n + 1 {
                    assert_eq!(
                        lines(&blob, start, end).unwrap(),
                        lines_text(&text, &starts, start, end),
                        "lines {start}..={end} of {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn long_texts_span_many_blocks_and_damage_is_an_error() {
        let text: String = (0..500).map(|i| format!("line {i}\n")).collect();
        let blob = compress(&text).unwrap();
        assert!(blocks(&blob).unwrap().len() > 10);
        assert_eq!(lines(&blob, 250, 251).unwrap(), "line 249\nline 250");
        assert!(super::text(&blob[..blob.len() - 3]).is_err());
        assert!(lines(&[9, 1, 0, 5], 1, 1).is_err());
        assert!(super::text(&[]).is_err());
        assert_eq!(super::text(&compress("").unwrap()).unwrap(), "");
    }
}

//! A file's text, stored zstd-compressed in blocks of whole lines that decompress on their own.
//!
//! The store keeps each file version's text once instead of every chunk's text, and cuts a
//! chunk's content from it when asked. Compressing the whole file would be ~10% smaller, but
//! showing one hit would then decompress the whole file; with blocks of about
//! [`BLOCK_BYTES`] a hit costs one or two small blocks. Measured on the 128 MB benchmark tree:
//! whole files 4.05x smaller, 16 KiB blocks 3.69x, 8 KiB blocks 3.48x.
//!
//! Small frames compress poorly on their own: half the files of a code base are under 3 KB.
//! A [`Dictionary`] trained on an index's own files (zstd's dictionary builder, ~0.5 s on a
//! 2 MiB sample) primes every frame with the project's common text, and took the large
//! benchmark tree's stored text from 34.7 to 32.0 MB.
//!
//! Layout: a format byte (1: plain frames; 2: frames compressed with a dictionary, whose
//! 8-byte id follows), the number of blocks, then per block its first row (0-based line),
//! length and compressed length (all LEB128 varints), then the zstd frames one after the other.

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use crate::bm25::{get_varint, put_varint};
use crate::chunk::{line_starts, lines_text};

/// Uncompressed size a block grows to before it ends (at the next line end).
const BLOCK_BYTES: usize = if cfg!(test) { 64 } else { 16 << 10 };

/// zstd level: level 3 compresses code ~4x at a few hundred MB/s per core.
const ZSTD_LEVEL: i32 = 3;

const FORMAT: u8 = 1;
const FORMAT_WITH_DICTIONARY: u8 = 2;

/// The most a trained dictionary may take: 64 KiB did as well as 112 on the benchmark tree
/// within 1%, and a small index pays for every byte of it.
pub const DICTIONARY_BYTES: usize = 64 << 10;

/// A zstd dictionary for file texts, prepared for compressing and decompressing.
pub struct Dictionary {
    /// xxh3 of the dictionary's bytes: how a blob names it.
    pub id: u64,
    pub bytes: Vec<u8>,
    encoder: zstd::dict::EncoderDictionary<'static>,
    decoder: zstd::dict::DecoderDictionary<'static>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Dictionary({:016x}, {} bytes)",
            self.id,
            self.bytes.len()
        )
    }
}

/// Every dictionary met by this process, by id. Blobs name theirs, and readers of a blob are
/// many (search threads, the graph, integrity checks): one registry spares threading the
/// dictionary through each of them. Entries are never removed (a process meets one per
/// index), which is what makes them `'static`.
static DICTIONARIES: LazyLock<RwLock<HashMap<u64, &'static Dictionary>>> =
    LazyLock::new(RwLock::default);

/// The id a dictionary of `bytes` has.
#[must_use]
pub fn dictionary_id(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Makes the dictionary of `bytes` known to every reader in the process (once per content).
#[must_use]
pub fn register(bytes: &[u8]) -> &'static Dictionary {
    let id = dictionary_id(bytes);
    if let Some(known) = registered(id) {
        return known;
    }
    let mut map = DICTIONARIES
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.entry(id).or_insert_with(|| {
        Box::leak(Box::new(Dictionary {
            id,
            bytes: bytes.to_vec(),
            encoder: zstd::dict::EncoderDictionary::copy(bytes, ZSTD_LEVEL),
            decoder: zstd::dict::DecoderDictionary::copy(bytes),
        }))
    })
}

/// The dictionary with this id, if this process has registered it.
#[must_use]
pub fn registered(id: u64) -> Option<&'static Dictionary> {
    DICTIONARIES
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&id)
        .copied()
}

/// The id of the dictionary `blob` was compressed with, if any (`None` for plain blobs and
/// for damage, which reading the blob reports).
#[must_use]
pub fn dictionary_of(blob: &[u8]) -> Option<u64> {
    match blob {
        [FORMAT_WITH_DICTIONARY, id @ ..] if id.len() >= 8 => {
            Some(u64::from_le_bytes(id[..8].try_into().ok()?))
        }
        _ => None,
    }
}

/// The least a trained dictionary takes: zstd learns little in fewer bytes.
const MIN_DICTIONARY_BYTES: usize = 16 << 10;

/// A dictionary for a batch of `total` bytes of text, trained on `texts` (the batch or a
/// sample of it) cut in blocks as they would be stored: about a 64th of `total`, between
/// 16 KiB and [`DICTIONARY_BYTES`]. `None` when zstd finds too little to learn from (a
/// handful of tiny texts), or when the dictionary would not pay for its own bytes: what it
/// saves on the sample, scaled to `total`, must exceed its size. A tree of a few large files
/// compresses as well without one.
#[must_use]
pub fn train(texts: &[&[u8]], total: usize) -> Option<Vec<u8>> {
    let mut samples = Vec::new();
    for text in texts {
        let mut start = 0;
        while start < text.len() {
            let end = block_end(text, start);
            samples.push(&text[start..end]);
            start = end;
        }
    }
    let size = (total / 64).clamp(MIN_DICTIONARY_BYTES, DICTIONARY_BYTES);
    let dictionary = zstd::dict::from_samples(&samples, size).ok()?;
    let mut plain = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok()?;
    let mut primed = zstd::bulk::Compressor::with_dictionary(ZSTD_LEVEL, &dictionary).ok()?;
    let (mut read, mut without, mut with) = (0usize, 0usize, 0usize);
    for sample in samples {
        read += sample.len();
        without += plain.compress(sample).ok()?.len();
        with += primed.compress(sample).ok()?.len();
    }
    #[allow(clippy::cast_precision_loss)] // byte counts far below 2^52
    let saved = without.saturating_sub(with) as f64 * total as f64 / read.max(1) as f64;
    #[allow(clippy::cast_precision_loss)]
    (saved > dictionary.len() as f64).then_some(dictionary)
}

/// Far above any file size worth indexing (the default cap is 1 MiB).
const MAX_TEXT_BYTES: usize = 1 << 30;

/// Compresses `text` into blocks, with `dictionary` if given; `None` only if zstd fails
/// (allocation failure).
#[must_use]
pub fn compress(text: &str, dictionary: Option<&'static Dictionary>) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut header = match dictionary {
        Some(d) => {
            let mut h = vec![FORMAT_WITH_DICTIONARY];
            h.extend_from_slice(&d.id.to_le_bytes());
            h
        }
        None => vec![FORMAT],
    };
    let mut frames = Vec::new();
    let mut blocks = Vec::new();
    let (mut start, mut row) = (0, 0u64);
    while start < bytes.len() {
        let end = block_end(bytes, start);
        let frame = compress_frame(&bytes[start..end], dictionary).ok()?;
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

/// Where the block starting at `start` ends: at the first line end past [`BLOCK_BYTES`].
fn block_end(bytes: &[u8], start: usize) -> usize {
    let end = (start + BLOCK_BYTES).min(bytes.len());
    if end < bytes.len() {
        memchr_after(bytes, end).unwrap_or(bytes.len())
    } else {
        end
    }
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

/// A blob's blocks and the dictionary its frames need.
fn blocks(blob: &[u8]) -> Result<(Vec<Block>, Option<&'static Dictionary>), String> {
    let (mut pos, dictionary) = match blob.first() {
        Some(&FORMAT) => (1, None),
        Some(&FORMAT_WITH_DICTIONARY) => {
            let id = dictionary_of(blob).ok_or("stored text: truncated dictionary id")?;
            let d = registered(id)
                .ok_or_else(|| format!("stored text: dictionary {id:016x} is not available"))?;
            (9, Some(d))
        }
        other => return Err(format!("stored text: unknown format {other:?}")),
    };
    let mut next = |what: &str| -> Result<usize, String> {
        get_varint(blob, &mut pos)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| format!("stored text: truncated {what}"))
    };
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
    Ok((blocks, dictionary))
}

thread_local! {
    /// A decompression context costs an allocation of its own: each thread keeps one.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    /// So does a compression context, a large one (its match tables are zeroed on creation):
    /// indexing compresses a block or two per file, so each thread keeps one.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    /// The same two for frames with a dictionary (which stays referenced by the context).
    static DICT_DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    static DICT_COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// `bytes` as one zstd frame at [`ZSTD_LEVEL`], with this thread's compression context.
///
/// # Errors
///
/// zstd's, on allocation failure.
pub(crate) fn zstd_compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    compress_frame(bytes, None)
}

/// `bytes` as one zstd frame, primed with `dictionary` if given (whose id the frame leaves
/// out: the blob names it once), with this thread's context for that kind of frame.
fn compress_frame(
    bytes: &[u8],
    dictionary: Option<&'static Dictionary>,
) -> std::io::Result<Vec<u8>> {
    let cell = if dictionary.is_some() {
        &DICT_COMPRESSOR
    } else {
        &COMPRESSOR
    };
    cell.with(|cell| {
        let mut slot = cell.borrow_mut();
        let compressor = match &mut *slot {
            Some(c) => c,
            None => {
                let mut c = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
                if dictionary.is_some() {
                    c.set_parameter(zstd::zstd_safe::CParameter::DictIdFlag(false))?;
                }
                slot.insert(c)
            }
        };
        if let Some(d) = dictionary {
            compressor.set_prepared_dictionary(&d.encoder)?;
        }
        compressor.compress(bytes)
    })
}

/// `f` with this thread's decompression context (primed with `dictionary`, if any).
fn with_decompressor<T>(
    dictionary: Option<&'static Dictionary>,
    f: impl FnOnce(&mut zstd::bulk::Decompressor<'static>) -> Result<T, String>,
) -> Result<T, String> {
    let cell = if dictionary.is_some() {
        &DICT_DECOMPRESSOR
    } else {
        &DECOMPRESSOR
    };
    cell.with(|cell| {
        let mut slot = cell.borrow_mut();
        let decompressor = match &mut *slot {
            Some(d) => d,
            None => slot.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
        };
        if let Some(d) = dictionary {
            decompressor
                .set_prepared_dictionary(&d.decoder)
                .map_err(|e| e.to_string())?;
        }
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
    with_decompressor(None, |decompressor| {
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

fn decompress_blocks(
    blob: &[u8],
    blocks: &[Block],
    dictionary: Option<&'static Dictionary>,
) -> Result<String, String> {
    let total = blocks.iter().map(|b| b.len).sum::<usize>();
    // Lengths come from the blob: a damaged one must not ask for an absurd allocation.
    if total > MAX_TEXT_BYTES {
        return Err(format!("stored text: implausible length {total}"));
    }
    let mut out = vec![0u8; total];
    with_decompressor(dictionary, |decompressor| {
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
    let (blocks, dictionary) = blocks(blob)?;
    decompress_blocks(blob, &blocks, dictionary)
}

/// 1-based lines `start_line..=end_line`, exactly as [`lines_text`] cuts them from the whole
/// text, decompressing only the blocks that hold them.
///
/// # Errors
///
/// A description of the damage if `blob` is not a valid blob.
pub fn lines(blob: &[u8], start_line: u32, end_line: u32) -> Result<String, String> {
    let (blocks, dictionary) = blocks(blob)?;
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
    let mut segment = decompress_blocks(blob, &blocks[first..last], dictionary)?;
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

    /// A batch so large that any dictionary that saves a byte on its sample pays.
    const LARGE_BATCH: usize = 1 << 30;

    fn trained() -> &'static Dictionary {
        let mut rng = StdRng::seed_from_u64(3);
        let texts: Vec<String> = (0..400).map(|_| random_text(&mut rng)).collect();
        let samples: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        register(&train(&samples, LARGE_BATCH).unwrap())
    }

    #[test]
    fn every_line_range_reads_as_from_the_whole_text() {
        let mut rng = StdRng::seed_from_u64(7);
        let dictionary = trained();
        for round in 0..80 {
            let text = random_text(&mut rng);
            let with = (round % 2 == 1).then_some(dictionary);
            let blob = compress(&text, with).unwrap();
            assert_eq!(dictionary_of(&blob), with.map(|d| d.id));
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
        let blob = compress(&text, None).unwrap();
        assert!(blocks(&blob).unwrap().0.len() > 10);
        assert_eq!(lines(&blob, 250, 251).unwrap(), "line 249\nline 250");
        assert!(super::text(&blob[..blob.len() - 3]).is_err());
        assert!(lines(&[9, 1, 0, 5], 1, 1).is_err());
        assert!(super::text(&[]).is_err());
        assert_eq!(super::text(&compress("", None).unwrap()).unwrap(), "");
    }

    #[test]
    fn a_dictionary_is_kept_only_when_it_saves_more_than_its_own_bytes() {
        // Many small files alike: a dictionary pays for itself many times over.
        let texts: Vec<String> = (0..2000)
            .map(|i| {
                format!(
                    "use std::io;\n\nfn handler_{i}(request: &Request) -> Response {{\n    \
                     let body = request.body();\n    Response::ok(body.len() * {i})\n}}\n"
                )
            })
            .collect();
        let samples: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let total = samples.iter().map(|s| s.len()).sum();
        let dictionary = train(&samples, total).expect("pays");
        assert!(dictionary.len() >= MIN_DICTIONARY_BYTES);
        // Noise: nothing to learn, so the dictionary would only add its bytes.
        let mut rng = StdRng::seed_from_u64(5);
        let noise: Vec<Vec<u8>> = (0..300)
            .map(|_| (0..4096).map(|_| rng.random::<u8>()).collect())
            .collect();
        let samples: Vec<&[u8]> = noise.iter().map(Vec::as_slice).collect();
        let total = samples.iter().map(|s| s.len()).sum();
        assert!(zstd::dict::from_samples(&samples, MIN_DICTIONARY_BYTES).is_ok());
        assert!(train(&samples, total).is_none());
    }

    #[test]
    fn a_dictionary_makes_small_texts_smaller_and_must_be_registered_to_read_them() {
        let dictionary = trained();
        assert!(std::ptr::eq(register(&dictionary.bytes), dictionary));
        let mut rng = StdRng::seed_from_u64(11);
        let texts: Vec<String> = (0..50).map(|_| random_text(&mut rng)).collect();
        let size = |with| -> usize { texts.iter().map(|t| compress(t, with).unwrap().len()).sum() };
        assert!(size(Some(dictionary)) * 2 < size(None));
        // Damaged ids and dictionaries this process never registered are errors, not panics.
        let mut blob = compress(&texts[0], Some(dictionary)).unwrap();
        blob[1] ^= 1;
        let err = super::text(&blob).unwrap_err();
        assert!(err.contains("is not available"), "{err}");
        assert!(super::text(&blob[..5]).is_err());
        assert_eq!(dictionary_of(&blob[..5]), None);
        assert!(train(&[b"x".as_slice()], LARGE_BATCH).is_none());
    }
}

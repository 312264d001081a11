//! Content addressing: every file version and chunk is keyed by the xxh3 hash of its bytes.

/// xxh3-64 of `bytes`, as the signed integer SQLite stores natively.
#[must_use]
pub fn content_hash(bytes: &[u8]) -> i64 {
    // Reinterpreting the bits keeps the full 64-bit hash in an INTEGER column.
    i64::from_ne_bytes(xxhash_rust::xxh3::xxh3_64(bytes).to_ne_bytes())
}

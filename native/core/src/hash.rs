//! Content addressing: every file version and chunk is keyed by the xxh3 hash of its bytes
//! (a file version's seeded with the chunker's version).
//! Also the hasher of the crate's integer-keyed maps.

use std::hash::{BuildHasherDefault, Hasher};

/// xxh3-64 of `bytes`, as the signed integer SQLite stores natively.
#[must_use]
pub fn content_hash(bytes: &[u8]) -> i64 {
    // Reinterpreting the bits keeps the full 64-bit hash in an INTEGER column.
    i64::from_ne_bytes(xxhash_rust::xxh3::xxh3_64(bytes).to_ne_bytes())
}

/// The key of a file version: xxh3-64 of its bytes seeded with the chunker's
/// [`crate::chunk::VERSION`], so a version chunked by other rules is never taken as known.
#[must_use]
pub fn file_hash(bytes: &[u8]) -> i64 {
    let hash = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, u64::from(crate::chunk::VERSION));
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// A fast hasher for integer keys (internal term ids, caller document keys). Keys are not
/// attacker-controlled, so a multiplicative mix is enough and much cheaper than `SipHash`.
#[derive(Debug, Clone, Copy, Default)]
pub struct IntHasher(u64);

pub type BuildIntHasher = BuildHasherDefault<IntHasher>;

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

/// A `HashMap` keyed by integers, hashed with [`IntHasher`].
pub type IntMap<K, V> = std::collections::HashMap<K, V, BuildIntHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A file version's key depends on the chunker's version; a chunk's only on its bytes,
    /// so vectors survive a new chunker wherever a chunk's text is unchanged.
    #[test]
    fn file_versions_are_keyed_by_the_chunker_version_and_chunks_are_not() {
        let text = b"def f():\n    return 1\n";
        assert_eq!(file_hash(text), file_hash(text));
        assert_ne!(file_hash(text), content_hash(text));
        assert_ne!(file_hash(text), file_hash(b"def f():\n    return 2\n"));
    }
}

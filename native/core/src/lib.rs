//! coderecall-core: the pure-Rust engine behind coderecall.
//!
//! Modules, in pipeline order:
//! - [`decode`]: a file's text from its bytes (UTF-8, else UTF-16 or a legacy encoding).
//! - [`lang`]: language registry (extensions, tree-sitter grammars, definition queries).
//! - [`chunk`]: semantic chunking and symbol extraction.
//! - [`analyzer`]: the code-aware tokenizer shared by indexing and queries.
//! - [`bm25`]: the BM25F inverted index.
//! - [`store`]: the SQLite source of truth (file versions, chunks, symbols, views).
//! - [`engine`]: indexing and search over a store, including the ranking layer.
//! - [`dot`], [`centred`]: exact vector search (memory's records).
//! - `embed` (feature `embed`): local embedding engines.

pub mod analyzer;
pub mod bm25;
pub mod centred;
pub mod chunk;
pub mod common_methods;
pub mod decode;
pub mod dot;
#[cfg(feature = "embed")]
pub mod embed;
pub mod engine;
pub mod error;
pub mod graph;
pub mod hash;
pub mod helpers;
pub mod irregular;
pub mod lang;
pub mod outline;
pub mod rank;
pub mod refs;
#[cfg(feature = "embed")]
pub mod semantic;
pub mod store;
pub mod textblob;
#[cfg(feature = "embed")]
pub mod vectors;

pub use error::{Error, Result};

//! `TextIndex`: the core's BM25F index over arbitrary short texts (memory records), in memory.

use std::collections::HashSet;
use std::sync::RwLock;

use coderecall_core::bm25::{Bm25Index, Bm25Params, DocFields, Field, analyze_doc, analyze_docs};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The other spellings of one lowercase word of prose: without its diacritics (or `None`),
/// and the runs of Chinese, Japanese or Korean characters in it, each with its overlapping
/// pairs (`coderecall_core::analyzer::word_variants`).
#[pyfunction]
pub(crate) fn word_variants(word: &str) -> (Option<String>, Vec<String>) {
    coderecall_core::analyzer::word_variants(word)
}

/// A BM25F index of texts keyed by integers: `body` is the text, `name` its labels (tags,
/// weighted like a definition's name), `kind` its type. Thread-safe; searches run in
/// parallel with each other, inserts take turns.
#[pyclass(frozen, module = "coderecall._native")]
pub(crate) struct TextIndex {
    inner: RwLock<Bm25Index>,
}

impl TextIndex {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Bm25Index> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Bm25Index> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl TextIndex {
    /// `k1` and `b` (the body's length normalisation) default to the code index's values.
    #[new]
    #[pyo3(signature = (*, k1 = None, b = None))]
    fn new(k1: Option<f32>, b: Option<f32>) -> PyResult<Self> {
        let mut params = Bm25Params::default();
        if let Some(k1) = k1 {
            params.k1 = k1;
        }
        if let Some(b) = b {
            params.b[Field::Body.index()] = b;
        }
        if !params.is_valid() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "invalid BM25 parameters: k1 = {}, b = {} (k1 >= 0, 0 <= b <= 1)",
                params.k1,
                params.b[Field::Body.index()]
            )));
        }
        Ok(TextIndex {
            inner: RwLock::new(Bm25Index::new(params)),
        })
    }

    /// Adds (or replaces) the text under `key`.
    #[pyo3(signature = (key, body, name = "", kind = ""))]
    fn insert(&self, key: u64, body: &str, name: &str, kind: &str) {
        let doc = analyze_doc(&DocFields {
            name,
            symbol_path: kind,
            path: "",
            body,
        });
        let mut index = self.write();
        index.remove(key);
        index.insert(key, doc);
    }

    /// Adds (or replaces) each `(key, body, name, kind)` as `insert` would one after the
    /// other, analysing the texts in parallel with the GIL released.
    fn insert_many(&self, py: Python<'_>, docs: Vec<(u64, String, String, String)>) {
        py.detach(|| {
            let fields: Vec<DocFields<'_>> = docs
                .iter()
                .map(|(_, body, name, kind)| DocFields {
                    name,
                    symbol_path: kind,
                    path: "",
                    body,
                })
                .collect();
            let analyzed = analyze_docs(&fields);
            let batch = docs.iter().map(|(key, ..)| *key).zip(analyzed).collect();
            self.write().extend(batch);
        });
    }

    /// Removes `key`; false if it was not there.
    fn remove(&self, key: u64) -> bool {
        self.write().remove(key)
    }

    /// The index as bytes (compressed, checksummed), with `meta` kept beside it.
    fn to_bytes<'py>(&self, py: Python<'py>, meta: &[u8]) -> Bound<'py, PyBytes> {
        let data = py.detach(|| self.read().to_snapshot(meta));
        PyBytes::new(py, &data)
    }

    /// An index and its `meta` from `to_bytes`; ValueError if `data` is not such bytes (torn,
    /// of another format version, or corrupt).
    #[staticmethod]
    fn from_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<(Self, Bound<'py, PyBytes>)> {
        let (index, meta) = py
            .detach(|| Bm25Index::from_snapshot(data))
            .map_err(|reason| {
                pyo3::exceptions::PyValueError::new_err(format!("not a text index: {reason}"))
            })?;
        let text = TextIndex {
            inner: RwLock::new(index),
        };
        Ok((text, PyBytes::new(py, &meta)))
    }

    fn __len__(&self) -> usize {
        self.read().len()
    }

    /// The best `limit` keys for `query` as `(key, score)`, score descending; with
    /// `allowed` (a `KeySet`, or any set of ints), only those keys compete (the statistics
    /// stay those of the whole index).
    #[pyo3(signature = (query, limit, allowed = None))]
    fn search(
        &self,
        py: Python<'_>,
        query: &str,
        limit: usize,
        allowed: Option<Allowed<'_>>,
    ) -> Vec<(u64, f32)> {
        let keys: Option<&HashSet<u64>> = match &allowed {
            Some(Allowed::Built(keys)) => Some(&keys.keys),
            Some(Allowed::Set(keys)) => Some(keys),
            None => None,
        };
        py.detach(|| {
            let index = self.read();
            match keys {
                Some(keys) => index.search(query, limit, Some(&|k| keys.contains(&k))),
                None => index.search(query, limit, None),
            }
        })
    }
}

/// A filter for [`TextIndex`] searches: a Python set is converted on every call (half a
/// millisecond for 10,000 keys, more than the search), a `KeySet` once.
#[derive(FromPyObject)]
enum Allowed<'py> {
    Built(PyRef<'py, KeySet>),
    Set(HashSet<u64>),
}

/// An immutable set of integer keys, built once and passed to many `TextIndex.search` calls.
#[pyclass(frozen, module = "coderecall._native")]
pub(crate) struct KeySet {
    keys: HashSet<u64>,
}

#[pymethods]
impl KeySet {
    /// The keys of any iterable of ints (a set, a dict's keys).
    #[new]
    fn new(keys: &Bound<'_, PyAny>) -> PyResult<Self> {
        let keys = keys
            .try_iter()?
            .map(|key| key?.extract::<u64>())
            .collect::<PyResult<HashSet<u64>>>()?;
        Ok(KeySet { keys })
    }

    fn __len__(&self) -> usize {
        self.keys.len()
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> bool {
        key.extract::<u64>()
            .is_ok_and(|key| self.keys.contains(&key))
    }
}

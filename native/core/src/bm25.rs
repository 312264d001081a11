//! TEMPORARY brute-force stand-in with the agreed API; replaced by the real BM25F index.
#![allow(dead_code, clippy::all)]
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum Bm25Error {
    #[error("io")]
    Io,
    #[error("corrupt: {reason}")]
    Corrupt { reason: String },
}
pub struct DocFields<'a> { pub name: &'a str, pub symbol_path: &'a str, pub path: &'a str, pub body: &'a str }
#[derive(Clone)]
pub struct AnalyzedDoc { terms: HashMap<String, f32> }
pub fn analyze_doc(d: &DocFields) -> AnalyzedDoc {
    let mut terms = HashMap::new();
    for (text, w) in [(d.name, 3.0), (d.symbol_path, 1.5), (d.path, 1.0), (d.body, 1.0)] {
        for t in crate::analyzer::analyze_to_vec(text) { *terms.entry(t).or_insert(0.0) += w; }
    }
    AnalyzedDoc { terms }
}
#[derive(Default, Clone)]
pub struct Bm25Params;
pub struct Bm25Index { docs: HashMap<u64, AnalyzedDoc> }
impl Bm25Index {
    pub fn new(_: Bm25Params) -> Self { Bm25Index { docs: HashMap::new() } }
    pub fn insert(&mut self, key: u64, doc: AnalyzedDoc) { self.docs.insert(key, doc); }
    pub fn remove(&mut self, key: u64) -> bool { self.docs.remove(&key).is_some() }
    pub fn len(&self) -> usize { self.docs.len() }
    pub fn search_terms(&self, terms: &[String], k: usize, filter: Option<&dyn Fn(u64) -> bool>) -> Vec<(u64, f32)> {
        let mut out: Vec<(u64, f32)> = self.docs.iter().filter(|(k, _)| filter.map_or(true, |f| f(**k)))
            .map(|(k, d)| (*k, terms.iter().map(|t| d.terms.get(t).copied().unwrap_or(0.0)).sum::<f32>()))
            .filter(|(_, s)| *s > 0.0).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        out
    }
    pub fn save(&self, _: &Path, _: &[u8]) -> Result<(), Bm25Error> { Ok(()) }
    pub fn load(_: &Path) -> Result<(Bm25Index, Vec<u8>), Bm25Error> { Err(Bm25Error::Io) }
}

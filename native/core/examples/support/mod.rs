//! What the measuring examples share.
#![allow(dead_code)] // each example uses some of it

use std::path::{Path, PathBuf};

use coderecall_core::lang::Language;
use rayon::prelude::*;

/// The source files under `dirs` that the index would parse, as (path, language, text):
/// regular files of at most 1 MiB, not binary, valid UTF-8, in a known language.
pub(crate) fn source_files(
    dirs: impl IntoIterator<Item = String>,
) -> Vec<(String, Language, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(&entry.path(), out);
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    let mut paths = Vec::new();
    for dir in dirs {
        walk(Path::new(&dir), &mut paths);
    }
    paths
        .par_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            if bytes.len() > 1 << 20 || bytes.iter().take(8000).any(|&b| b == 0) {
                return None;
            }
            let name = p.to_string_lossy().into_owned();
            let lang = Language::detect(&name, &bytes)?;
            Some((name, lang, String::from_utf8(bytes).ok()?))
        })
        .collect()
}

/// The vectors named by the command line's first two arguments, `VECTORS.f32 DIMS` (a file of
/// row-major little-endian f32 values, numpy's `tofile`), their width and the other arguments.
pub(crate) fn vectors_from_args() -> (Vec<Vec<f32>>, usize, std::env::Args) {
    let mut args = std::env::args();
    args.next();
    let file = args.next().expect("VECTORS.f32 DIMS");
    let dims: usize = args
        .next()
        .and_then(|d| d.parse().ok())
        .expect("VECTORS.f32 DIMS");
    let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let rows = values.chunks_exact(dims).map(<[f32]>::to_vec).collect();
    (rows, dims, args)
}

//! What the measuring examples share.

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

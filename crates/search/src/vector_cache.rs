//! Tool vectors kept on disk between runs, so a restart, or a refresh that changed a few
//! tools, embeds only the texts it has not seen: one file per model, records keyed by the
//! sha256 of (model identity, text). A record that does not check out (a torn write, another
//! version's file) is skipped, never used: a wrong vector would rank silently wrong.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::meaning::{VECTOR_BYTES, Vector};

/// What a cached vector is found by: sha256 of the model identity, a NUL and the text.
pub(super) type Key = [u8; 32];

/// Bytes of one record: key, vector, then 8 bytes of sha256 over both.
const RECORD: usize = 32 + VECTOR_BYTES + 8;

/// The first bytes of a cache file (and its format's version).
const MAGIC: &[u8; 8] = b"TGVEC\x001\n";

/// Most records a file keeps: past it, the file is rewritten with the current
/// catalogue's vectors only (200,000 records are 86 MB).
const MAX_RECORDS: usize = 200_000;

/// The key of `text` embedded by the model `model_id`.
pub(super) fn key(model_id: &str, text: &str) -> Key {
    let mut h = Sha256::new();
    h.update(model_id.as_bytes());
    h.update([0u8]);
    h.update(text.as_bytes());
    h.finalize().into()
}

/// The vector file of one model in one directory.
#[derive(Debug, Clone)]
pub(super) struct VectorCache {
    path: PathBuf,
}

impl VectorCache {
    /// The cache of model `model_id` in `dir` (created on first write).
    pub(super) fn new(dir: &Path, model_id: &str) -> VectorCache {
        let short: String = model_id.chars().filter(char::is_ascii_alphanumeric).take(16).collect();
        VectorCache {
            path: dir.join(format!("vectors-{short}.bin")),
        }
    }

    /// Where the file is.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Every record that checks out; empty when there is no file or it is not one of
    /// ours. Reading stops at [`MAX_RECORDS`].
    pub(super) fn load(&self) -> HashMap<Key, Vector> {
        let Ok(file) = File::open(&self.path) else {
            return HashMap::new();
        };
        let mut bytes = Vec::new();
        let cap = (MAGIC.len() + MAX_RECORDS * RECORD) as u64;
        if file.take(cap).read_to_end(&mut bytes).is_err() {
            return HashMap::new();
        }
        records(&bytes)
    }

    /// Adds `new` records. A file that would pass [`MAX_RECORDS`] (`held` records already)
    /// is replaced by `keep` and `new` alone, through a temporary file renamed over it.
    pub(super) fn store(&self, new: &[(Key, Vector)], keep: &[(Key, Vector)], held: usize) -> std::io::Result<()> {
        if new.is_empty() {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            create_private_dir(dir)?;
        }
        if held + new.len() > MAX_RECORDS {
            let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
            let mut bytes = MAGIC.to_vec();
            for (key, vector) in keep.iter().chain(new).take(MAX_RECORDS) {
                bytes.extend_from_slice(&record(key, vector));
            }
            fs::write(&tmp, &bytes)?;
            return fs::rename(&tmp, &self.path);
        }
        let mut file = OpenOptions::new().create(true).append(true).open(&self.path)?;
        let mut bytes = Vec::with_capacity(new.len() * RECORD + MAGIC.len());
        if file.metadata()?.len() == 0 {
            bytes.extend_from_slice(MAGIC);
        }
        for (key, vector) in new {
            bytes.extend_from_slice(&record(key, vector));
        }
        // One write of whole records: another process appending at the same time cannot
        // tear a record it does not also tear its own, and a torn one fails its check.
        file.write_all(&bytes)
    }
}

/// The vectors of the embedded catalogue's texts, compiled in
/// (`catalogue-vectors.bin`, a cache file written by
/// `scripts/catalogue-vectors`): a first start, or one with no cache, then ranks the
/// embedded catalogue by meaning at once instead of after about a second of embedding
/// on both cores. Keyed like any cache, by model and text, so a text edited since, or
/// another model, just misses and is embedded as usual.
pub(super) fn compiled_in() -> HashMap<Key, Vector> {
    records(include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/catalogue-vectors.bin"
    )))
}

/// Every record of a cache file's `bytes` that checks out; none when it is not one.
fn records(bytes: &[u8]) -> HashMap<Key, Vector> {
    let mut out = HashMap::new();
    let Some(body) = bytes.strip_prefix(MAGIC) else {
        return out;
    };
    for record in body.chunks_exact(RECORD) {
        let (body, check) = record.split_at(32 + VECTOR_BYTES);
        if Sha256::digest(body)[..8] != *check {
            continue;
        }
        let (key, vector) = body.split_at(32);
        if let (Ok(key), Some(vector)) = (Key::try_from(key), Vector::from_bytes(vector)) {
            out.insert(key, vector);
        }
    }
    out
}

fn record(key: &Key, vector: &Vector) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    out[..32].copy_from_slice(key);
    out[32..32 + VECTOR_BYTES].copy_from_slice(&vector.to_bytes());
    let check = Sha256::digest(&out[..32 + VECTOR_BYTES]);
    out[32 + VECTOR_BYTES..].copy_from_slice(&check[..8]);
    out
}

/// Creates `dir` (and its parents), readable by its owner only where that means something.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meaning::DIM;

    fn vector(seed: u8) -> Vector {
        let mut v = [0f32; DIM];
        v[seed as usize % DIM] = 1.0;
        v[(seed as usize + 1) % DIM] = -0.5;
        Vector::quantise(&v)
    }

    #[test]
    fn every_compiled_in_record_checks_out() {
        let bytes = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/catalogue-vectors.bin"));
        assert!(bytes.starts_with(MAGIC), "not a vector cache file");
        assert_eq!((bytes.len() - MAGIC.len()) % RECORD, 0, "a torn record");
        let whole = (bytes.len() - MAGIC.len()) / RECORD;
        assert!(whole > 0);
        assert_eq!(
            compiled_in().len(),
            whole,
            "a record failed its check, or a key repeats"
        );
    }

    #[test]
    fn records_survive_a_restart_and_torn_or_foreign_bytes_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = VectorCache::new(&dir.path().join("nested"), "abc123-model");
        assert!(cache.load().is_empty());
        let (a, b) = ((key("m", "alpha"), vector(1)), (key("m", "beta"), vector(2)));
        cache.store(std::slice::from_ref(&a), &[], 0).unwrap();
        cache.store(std::slice::from_ref(&b), &[], 1).unwrap();
        let loaded = cache.load();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[&a.0], a.1);
        assert_eq!(loaded[&b.0], b.1);
        // A torn last record and a flipped byte in the first: both skipped.
        let mut bytes = fs::read(cache.path()).unwrap();
        bytes[MAGIC.len() + 40] ^= 1;
        bytes.extend_from_slice(&record(&key("m", "gamma"), &vector(3))[..100]);
        fs::write(cache.path(), &bytes).unwrap();
        let loaded = cache.load();
        assert_eq!(loaded.keys().collect::<Vec<_>>(), vec![&b.0]);
        // Not our file at all.
        fs::write(cache.path(), b"something else entirely").unwrap();
        assert!(cache.load().is_empty());
    }

    #[test]
    fn a_full_file_is_replaced_by_what_the_catalogue_uses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = VectorCache::new(dir.path(), "m");
        let old = (key("m", "old"), vector(4));
        let kept = (key("m", "kept"), vector(5));
        let new = (key("m", "new"), vector(6));
        cache.store(&[old.clone(), kept.clone()], &[], 0).unwrap();
        cache
            .store(std::slice::from_ref(&new), std::slice::from_ref(&kept), MAX_RECORDS)
            .unwrap();
        let loaded = cache.load();
        assert_eq!(loaded.len(), 2);
        assert!(loaded.contains_key(&kept.0) && loaded.contains_key(&new.0));
    }

    #[test]
    fn keys_depend_on_the_model_and_the_exact_text() {
        assert_ne!(key("m1", "text"), key("m2", "text"));
        assert_ne!(key("m", "text"), key("m", "text "));
        assert_ne!(key("ab", "c"), key("a", "bc"));
    }
}

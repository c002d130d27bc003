//! One compile cache for every kind of compiled code (host shared libraries, PTX, OpenCL program
//! binaries): a memory layer (process-wide or per owner) over a disk layer of self-checking files
//! written atomically into a private directory, with counters per kind. A damaged or unloadable
//! file is built again; the generated source is kept beside what was built from it.

use op2_core::{Op2Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A kind of compiled code, and how its files are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtefactKind {
    /// Name of the kind, for [`cache_stats`] (`host`, `ptx`, `opencl`).
    pub name: &'static str,
    /// Subdirectory of the cache directory ("" for the directory itself).
    pub subdir: &'static str,
    /// Extension of the kept generated source (`c`, `cu`, `cl`).
    pub source_ext: &'static str,
    /// Extension of the compiled file (`so`, `ptx`, `bin`).
    pub artefact_ext: &'static str,
}

/// What a cache did in this process, per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Sources compiled.
    pub compiles: u64,
    /// Compiled files read back from disk.
    pub disk_hits: u64,
    /// Lookups answered from memory.
    pub memory_hits: u64,
    /// Damaged, truncated or unloadable files found and built again.
    pub rebuilds: u64,
}

#[derive(Default)]
struct Counters {
    compiles: AtomicU64,
    disk_hits: AtomicU64,
    memory_hits: AtomicU64,
    rebuilds: AtomicU64,
}

fn counters(kind: &'static str) -> &'static Counters {
    static ALL: OnceLock<Mutex<HashMap<&'static str, &'static Counters>>> = OnceLock::new();
    let mut all = ALL
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    all.entry(kind).or_insert_with(|| Box::leak(Box::default()))
}

/// The counters of every cache of kind `kind` in this process.
pub fn cache_stats(kind: &'static str) -> CacheStats {
    let c = counters(kind);
    CacheStats {
        compiles: c.compiles.load(Ordering::Relaxed),
        disk_hits: c.disk_hits.load(Ordering::Relaxed),
        memory_hits: c.memory_hits.load(Ordering::Relaxed),
        rebuilds: c.rebuilds.load(Ordering::Relaxed),
    }
}

/// The memory layer of a cache: loaded values by key, shareable between caches (the host and PTX
/// caches share one per process; OpenCL programs, tied to a context, have one per backend).
pub type MemoryLayer<V> = Arc<Mutex<HashMap<String, V>>>;

/// Marks the end of a cache file: magic, then the SHA-256 of everything before it. A truncated or
/// corrupt file fails the check and is built again; loaders ignore bytes after the contents (ELF)
/// or are given the contents only.
const TRAILER_MAGIC: &[u8; 8] = b"OP2CACHE";
const TRAILER_LEN: usize = 8 + 32;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A generated source to look up: the kernel it wraps (for file names and messages) and its text.
#[derive(Debug, Clone, Copy)]
pub struct CacheSource<'a> {
    /// The kernel's name.
    pub kernel: &'a str,
    /// The generated source.
    pub text: &'a str,
}

/// One kind of compiled code, cached in memory and on disk.
pub struct CompileCache<V> {
    kind: ArtefactKind,
    dir: PathBuf,
    dump: Option<PathBuf>,
    memory: MemoryLayer<V>,
}

impl<V: Clone> CompileCache<V> {
    /// A cache of `kind` under `cache_dir` (created private, mode 0700), writing every generated
    /// source into `dump` too when set (`OP2_DUMP_GENCODE`), with memory layer `memory`.
    pub fn new(
        kind: ArtefactKind,
        cache_dir: &Path,
        dump: Option<&Path>,
        memory: MemoryLayer<V>,
    ) -> Result<Self> {
        let dir = if kind.subdir.is_empty() {
            cache_dir.to_path_buf()
        } else {
            cache_dir.join(kind.subdir)
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| io("creating the cache directory", &dir, e))?;
        Ok(CompileCache {
            kind,
            dir,
            dump: dump.map(Path::to_path_buf),
            memory,
        })
    }

    /// The directory the files go in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a source compiled by a compiler described by `identity` (its version, options,
    /// target): a SHA-256 of all of them.
    pub fn key(&self, identity: &[&str], source: &str) -> String {
        let mut h = Sha256::new();
        h.update(format!("op2-rs {} v2", self.kind.name).as_bytes());
        h.update([0]);
        for part in identity {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(source.as_bytes());
        hex(&h.finalize())
    }

    /// Where the generated source of `key` is kept.
    pub fn source_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{}", self.kind.source_ext))
    }

    /// Writes the generated source of `key` (what a user reads when something goes wrong) and
    /// returns its path.
    pub fn keep_source(&self, key: &str, source: &CacheSource<'_>) -> Result<PathBuf> {
        let path = self.source_path(key);
        write_atomically(&path, source.text.as_bytes())?;
        Ok(path)
    }

    /// The value of `key`: from memory, else loaded from the disk file, else built. `build` gets
    /// the kept source's path and returns the compiled bytes, and the value itself when building
    /// made it anyway (an OpenCL program built from source); `load` turns a file (its path, and
    /// its contents without the checksum) into the value. A file that fails its checksum or does
    /// not load is built again.
    pub fn get(
        &self,
        key: &str,
        source: &CacheSource<'_>,
        build: impl FnOnce(&Path) -> Result<(Vec<u8>, Option<V>)>,
        load: impl Fn(&Path, &[u8]) -> Result<V>,
    ) -> Result<V> {
        let stats = counters(self.kind.name);
        if let Some(v) = lock(&self.memory).get(key) {
            stats.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(v.clone());
        }
        if let Some(dir) = &self.dump {
            dump_source(dir, source.kernel, key, self.kind.source_ext, source.text)?;
        }
        let file = self.dir.join(format!("{key}.{}", self.kind.artefact_ext));
        let from_disk = match fs::read(&file) {
            Ok(bytes) => match verified(&bytes).map(|body| load(&file, body)) {
                Some(Ok(v)) => {
                    stats.disk_hits.fetch_add(1, Ordering::Relaxed);
                    Some(v)
                }
                _ => {
                    stats.rebuilds.fetch_add(1, Ordering::Relaxed);
                    None
                }
            },
            Err(_) => None,
        };
        let value = match from_disk {
            Some(v) => v,
            None => {
                let src = self.keep_source(key, source)?;
                let (mut bytes, built) = build(&src)?;
                stats.compiles.fetch_add(1, Ordering::Relaxed);
                let body_len = bytes.len();
                let digest = Sha256::digest(&bytes);
                bytes.extend_from_slice(TRAILER_MAGIC);
                bytes.extend_from_slice(&digest);
                write_atomically(&file, &bytes)?;
                match built {
                    Some(v) => v,
                    None => load(&file, &bytes[..body_len])?,
                }
            }
        };
        // Two threads may have built the same unit at once: the first one cached is the one
        // everybody uses.
        Ok(lock(&self.memory)
            .entry(key.to_string())
            .or_insert(value)
            .clone())
    }
}

/// A memory layer of its own.
pub fn private_memory<V>() -> MemoryLayer<V> {
    Arc::new(Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The contents of a cache file whose checksum matches.
fn verified(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() < TRAILER_LEN {
        return None;
    }
    let (body, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
    (trailer[..8] == TRAILER_MAGIC[..] && trailer[8..] == Sha256::digest(body)[..]).then_some(body)
}

/// Writes a generated source into the `OP2_DUMP_GENCODE` directory `dir`, as
/// `<kernel>_<first 16 characters of its cache key>.<ext>`.
pub fn dump_source(dir: &Path, kernel: &str, key: &str, ext: &str, source: &str) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| io("creating the OP2_DUMP_GENCODE directory", dir, e))?;
    let path = dir.join(format!("{kernel}_{}.{ext}", &key[..key.len().min(16)]));
    op2_atomic_write::write_file(&path, source.as_bytes())
        .map_err(|e| write_error("writing generated source", e))
}

/// Writes a cache file whole or not at all (through op2-atomic-write: a temporary file renamed
/// over it), so that readers (other threads or processes) see all of it or nothing.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    op2_atomic_write::write_file(path, bytes).map_err(|e| write_error("writing a cache file", e))
}

fn write_error(context: &'static str, e: op2_atomic_write::WriteError) -> Op2Error {
    Op2Error::Io {
        context,
        path: e.path().to_path_buf(),
        source: e.into_io_error(),
    }
}

/// A file name in `dir` no other thread or process uses, for work in progress.
pub(crate) fn temp_path(dir: &Path, ext: &str) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    dir.join(format!(".tmp-{}-{n}-{nanos}.{ext}", std::process::id()))
}

pub(crate) fn io(context: &'static str, path: &Path, source: std::io::Error) -> Op2Error {
    Op2Error::Io {
        context,
        path: path.to_path_buf(),
        source,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: ArtefactKind = ArtefactKind {
        name: "cache-test",
        subdir: "test",
        source_ext: "txt",
        artefact_ext: "out",
    };

    fn source(text: &str) -> CacheSource<'_> {
        CacheSource { kernel: "k", text }
    }

    #[test]
    fn builds_once_then_reads_memory_then_disk_and_heals_damage() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(KIND, dir.path(), None, private_memory()).unwrap();
        let key = cache.key(&["compiler 1.0"], "source");
        let built = std::cell::Cell::new(0);
        let get = |c: &CompileCache<String>| {
            c.get(
                &key,
                &source("source"),
                |src| {
                    built.set(built.get() + 1);
                    assert!(src.exists(), "the source is kept before building");
                    Ok((b"compiled".to_vec(), None))
                },
                |_, body| Ok(String::from_utf8(body.to_vec()).unwrap()),
            )
            .unwrap()
        };
        assert_eq!(get(&cache), "compiled");
        assert_eq!(get(&cache), "compiled");
        assert_eq!(built.get(), 1, "the second lookup is a memory hit");
        // A new memory layer reads the file back.
        let fresh = CompileCache::new(KIND, dir.path(), None, private_memory()).unwrap();
        assert_eq!(get(&fresh), "compiled");
        assert_eq!(built.get(), 1);
        // A damaged file is built again.
        let file = dir.path().join("test").join(format!("{key}.out"));
        let bytes = fs::read(&file).unwrap();
        fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
        let healed = CompileCache::new(KIND, dir.path(), None, private_memory()).unwrap();
        assert_eq!(get(&healed), "compiled");
        assert_eq!(built.get(), 2);
        assert!(verified(&fs::read(&file).unwrap()).is_some());
        let s = cache_stats("cache-test");
        assert!(s.compiles >= 2 && s.memory_hits >= 1 && s.disk_hits >= 1 && s.rebuilds >= 1);
    }

    #[test]
    fn the_trailer_detects_truncation() {
        let mut bytes = b"\x7fELF fake library".to_vec();
        let d = Sha256::digest(&bytes);
        bytes.extend_from_slice(TRAILER_MAGIC);
        bytes.extend_from_slice(&d);
        assert!(verified(&bytes).is_some());
        assert!(verified(&bytes[..bytes.len() - 1]).is_none());
        assert!(verified(&bytes[1..]).is_none());
        assert!(verified(b"short").is_none());
    }
}

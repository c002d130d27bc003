//! Whole-file outputs that are never half-written: every writer of op2-rs (VTK, PVTU, PNG, mesh
//! files, HDF5, checkpoints, the compile cache) writes a temporary file in the target's directory,
//! flushes and syncs it, then renames it over the target and syncs the directory. A crash at any
//! moment leaves either the previous file or the new complete one; a failure (a full disk, an
//! unwritable directory) is a [`WriteError`] naming the target, with the previous file intact and
//! the temporary file removed.
//!
//! Temporary files are named `.<target name>.op2-tmp.<host>.<pid>.<n>[.<target extension>]`
//! (hidden, and keeping the extension for libraries that choose a format by it). One left behind
//! by a process that was killed is removed by the next write of the same target on the same host
//! once that process is gone.

#![warn(missing_docs)]

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a file could not be written. The target keeps its previous contents in every case.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// An operating-system call failed (`step` says which: creating the temporary file, writing,
    /// syncing, renaming).
    #[error("could not write {}: {step}: {source} (the previous file, if any, is unchanged)", path.display())]
    Io {
        /// The file that was to be written.
        path: PathBuf,
        /// What was being done.
        step: &'static str,
        /// The operating system's error (`StorageFull` for a full disk, `FileTooLarge` past a
        /// size limit, `PermissionDenied`, ...).
        #[source]
        source: io::Error,
    },
    /// The target names a directory, or has no file name.
    #[error("could not write {}: not a file name", path.display())]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
}

impl WriteError {
    /// The file that was to be written.
    pub fn path(&self) -> &Path {
        match self {
            WriteError::Io { path, .. } | WriteError::NotAFile { path } => path,
        }
    }

    /// This error as an [`io::Error`] of the same kind whose message leaves the path out, for
    /// error types that name the path themselves (`{ path, source: io::Error }`).
    pub fn into_io_error(self) -> io::Error {
        match self {
            WriteError::Io { step, source, .. } => io::Error::new(
                source.kind(),
                format!("{step}: {source} (the previous file, if any, is unchanged)"),
            ),
            WriteError::NotAFile { .. } => {
                io::Error::new(io::ErrorKind::IsADirectory, "not a file name")
            }
        }
    }

    /// The operating system's error, if one caused this.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            WriteError::Io { source, .. } => Some(source),
            WriteError::NotAFile { .. } => None,
        }
    }
}

/// Writes `bytes` as the whole of `target`, atomically.
pub fn write_file(target: impl AsRef<Path>, bytes: &[u8]) -> Result<(), WriteError> {
    write_with(target, |w| w.write_all(bytes))
}

/// Writes `target` through `fill`, which writes the whole contents into a buffered writer;
/// atomically: `target` changes only once `fill` succeeded and the data is on disk. An error of
/// `fill` is reported as a write error naming `target`.
pub fn write_with(
    target: impl AsRef<Path>,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteError> {
    let target = target.as_ref();
    let temp = TempFile::new(target)?;
    let file =
        File::create(&temp.path).map_err(|e| io_error(target, "creating a temporary file", e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    fill(&mut w).map_err(|e| io_error(target, "writing", e))?;
    let file = w
        .into_inner()
        .map_err(|e| io_error(target, "writing", e.into_error()))?;
    temp.commit(file)
}

/// Writes `target` through `fill`, which is given a temporary path in the same directory to
/// create and write whole (for libraries that open files themselves: HDF5, image encoders);
/// atomically: once `fill` returns `Ok` the temporary file is synced and renamed over `target`.
/// When `fill` fails its error is returned, `target` is unchanged and the temporary file removed.
pub fn replace_with<T, E: From<WriteError>>(
    target: impl AsRef<Path>,
    fill: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T, E> {
    let target = target.as_ref();
    let temp = TempFile::new(target)?;
    let value = fill(&temp.path)?;
    let file =
        File::open(&temp.path).map_err(|e| io_error(target, "reopening the temporary file", e))?;
    temp.commit(file)?;
    Ok(value)
}

/// A file being written through a temporary path, for writers that keep a file open across
/// calls (op2-hdf5's `H5File`): [`PendingFile::commit`] syncs and renames it over the target;
/// dropping it uncommitted removes the temporary file and leaves the target unchanged.
#[derive(Debug)]
pub struct PendingFile {
    temp: TempFile,
}

impl PendingFile {
    /// Reserves a temporary path beside `target` (nothing is created yet).
    pub fn new(target: impl AsRef<Path>) -> Result<PendingFile, WriteError> {
        Ok(PendingFile {
            temp: TempFile::new(target.as_ref())?,
        })
    }

    /// The temporary path to create and write.
    pub fn temp_path(&self) -> &Path {
        &self.temp.path
    }

    /// The file it will replace.
    pub fn target(&self) -> &Path {
        &self.temp.target
    }

    /// Syncs the temporary file and renames it over the target.
    pub fn commit(self) -> Result<(), WriteError> {
        let target = self.temp.target.clone();
        let file = File::open(&self.temp.path)
            .map_err(|e| io_error(&target, "reopening the temporary file", e))?;
        self.temp.commit(file)
    }
}

fn io_error(path: &Path, step: &'static str, source: io::Error) -> WriteError {
    WriteError::Io {
        path: path.to_path_buf(),
        step,
        source,
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary path beside a target, removed on drop unless committed.
#[derive(Debug)]
struct TempFile {
    target: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl TempFile {
    fn new(target: &Path) -> Result<TempFile, WriteError> {
        let not_a_file = || WriteError::NotAFile {
            path: target.to_path_buf(),
        };
        let name = target.file_name().ok_or_else(not_a_file)?;
        if target.is_dir() {
            return Err(not_a_file());
        }
        let dir = directory_of(target);
        let prefix = temp_prefix(name);
        remove_stale(&dir, &prefix);
        let mut temp = OsString::from(&prefix);
        temp.push(format!(
            "{}.{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        if let Some(ext) = target.extension() {
            temp.push(".");
            temp.push(ext);
        }
        Ok(TempFile {
            target: target.to_path_buf(),
            path: dir.join(temp),
            committed: false,
        })
    }

    /// Syncs `file` (the temporary file, open), renames it over the target and syncs the
    /// directory, so that the rename itself survives a power cut.
    fn commit(mut self, file: File) -> Result<(), WriteError> {
        file.sync_all()
            .map_err(|e| io_error(&self.target, "syncing", e))?;
        drop(file);
        fs::rename(&self.path, &self.target)
            .map_err(|e| io_error(&self.target, "renaming the temporary file over it", e))?;
        self.committed = true;
        // Not every file system can sync a directory; the rename is done either way.
        if let Ok(d) = File::open(directory_of(&self.target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn directory_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `.<name>.op2-tmp.<host>.`: what every temporary file for `name` written on this host starts
/// with (the pid and a counter follow).
fn temp_prefix(name: &std::ffi::OsStr) -> OsString {
    let mut p = OsString::from(".");
    p.push(name);
    p.push(format!(".op2-tmp.{}.", host_name()));
    p
}

fn host_name() -> String {
    let name = fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() { "host".into() } else { name }
}

/// Removes temporary files of this target left by processes of this host that no longer exist
/// (killed while writing). Files of live processes, and of other hosts sharing the directory,
/// are left alone. Only where `/proc` tells which processes exist.
fn remove_stale(dir: &Path, prefix: &OsString) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let prefix = prefix.to_string_lossy();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix(prefix.as_ref()) else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// The temporary files of `target` present now (for tests: a clean run leaves none).
pub fn leftover_temporaries(target: impl AsRef<Path>) -> Vec<PathBuf> {
    let target = target.as_ref();
    let Some(name) = target.file_name() else {
        return Vec::new();
    };
    let mut p = OsString::from(".");
    p.push(name);
    p.push(".op2-tmp.");
    let p = p.to_string_lossy().into_owned();
    let Ok(entries) = fs::read_dir(directory_of(target)) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&p))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests;

//! The checkpoint file: what a checkpoint holds (the backup point, the fingerprint of the
//! program's declarations and loops, the Globals' history, the Consts, the saved Dats) and its
//! native format, checked on reading (magic, version, length, CRC-32) so that a truncated,
//! corrupted or foreign file is a typed error, never wrong values.
//!
//! Layout, little-endian: `OP2CKPT\0`, format version (u32), body length (u64), the body, the
//! body's CRC-32 (u32), `END\0`. The header keeps this layout in every version, so a newer
//! file is told from a damaged one. The body is a sequence of fields written by [`Image::write`]
//! in the order [`Image::read`] reads them: integers fixed-width, strings and byte arrays as a
//! u64 length and their bytes.

use crate::model::error::{Op2Error, Result};
use std::io::{self, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"OP2CKPT\0";
const TRAILER: &[u8; 4] = b"END\0";
/// The format this build writes, and the newest it reads.
pub(crate) const VERSION: u32 = 1;

/// One declared object, as the restarted program must declare it too: the same whatever the
/// number of ranks (sizes count every rank's owned rows, hashes are over rows in global
/// numbering).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Decl {
    /// `set`, `map`, `dat`, `global` or `const`.
    pub(crate) kind: String,
    pub(crate) name: String,
    /// Which of the objects of this kind and name (usually 0).
    pub(crate) occurrence: u32,
    /// Sizes that identify it (a set's rows; a map's rows and arity; a Dat's rows, dim and
    /// type; a Global's or Const's dim and type).
    pub(crate) sizes: Vec<u64>,
    /// A hash of its initial values (map values, a Dat's, Global's or Const's data).
    pub(crate) hash: u64,
}

impl Decl {
    /// A description for mismatch messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} `{}` (sizes {:?})", self.kind, self.name, self.sizes)
    }

    /// What identifies it between runs.
    pub(crate) fn key(&self) -> (&str, &str, u32) {
        (&self.kind, &self.name, self.occurrence)
    }
}

/// A Global's value after a loop before the backup point, replayed on restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GlobalValue {
    /// The loop (counted from 0 over the runtime's `par_loop` calls).
    pub(crate) at: u64,
    /// The arg's position in that loop.
    pub(crate) arg: u32,
    pub(crate) bytes: Vec<u8>,
}

/// A Dat's values at the backup point, every row in global numbering (on one process without
/// a numbering, its rows in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SavedDat {
    pub(crate) name: String,
    /// Which of the Dats of this name.
    pub(crate) occurrence: u32,
    /// Bytes per row.
    pub(crate) row_bytes: u64,
    pub(crate) bytes: Vec<u8>,
}

/// Everything in a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Image {
    /// The loop before which it was taken: loops `0..backup` are replayed, not run.
    pub(crate) backup: u64,
    /// A hash of the kernel names of loops `0..backup`, in order.
    pub(crate) loops_hash: u64,
    pub(crate) decls: Vec<Decl>,
    /// Sorted by loop, then arg.
    pub(crate) history: Vec<GlobalValue>,
    /// Every Const's values at the backup point, by name.
    pub(crate) consts: Vec<(String, Vec<u8>)>,
    pub(crate) dats: Vec<SavedDat>,
    /// Bytes of every Dat declared at the backup point (what saving them all would take).
    pub(crate) all_dat_bytes: u64,
}

/// FxHash-style mixing: fast, enough to tell one program's data from another's.
pub(crate) fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("chunks of 8"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    h
}

/// A writer that keeps the CRC-32 of what passes through.
struct Crc<'a> {
    out: &'a mut dyn Write,
    crc: crc32fast::Hasher,
    len: u64,
}

impl Crc<'_> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc.update(bytes);
        self.len += bytes.len() as u64;
        self.out.write_all(bytes)
    }
    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.u64(b.len() as u64)?;
        self.put(b)
    }
}

impl Image {
    /// The body's length in bytes, as [`Image::write`] writes it.
    fn body_len(&self) -> u64 {
        let b = |n: usize| 8 + n as u64;
        let mut n = 8 + 8 + 8 + 8 + 8 + 8 + 8;
        for d in &self.decls {
            n += b(d.kind.len()) + b(d.name.len()) + 4 + 8 + 8 * d.sizes.len() as u64 + 8;
        }
        for g in &self.history {
            n += 8 + 4 + b(g.bytes.len());
        }
        for (name, v) in &self.consts {
            n += b(name.len()) + b(v.len());
        }
        for d in &self.dats {
            n += b(d.name.len()) + 4 + 8 + b(d.bytes.len());
        }
        n
    }

    /// Writes the whole file into `out` (a buffered temporary file: see op2-atomic-write).
    pub(crate) fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&self.body_len().to_le_bytes())?;
        let mut w = Crc {
            out,
            crc: crc32fast::Hasher::new(),
            len: 0,
        };
        w.u64(self.backup)?;
        w.u64(self.loops_hash)?;
        w.u64(self.all_dat_bytes)?;
        w.u64(self.decls.len() as u64)?;
        for d in &self.decls {
            w.bytes(d.kind.as_bytes())?;
            w.bytes(d.name.as_bytes())?;
            w.u32(d.occurrence)?;
            w.u64(d.sizes.len() as u64)?;
            for &s in &d.sizes {
                w.u64(s)?;
            }
            w.u64(d.hash)?;
        }
        w.u64(self.history.len() as u64)?;
        for g in &self.history {
            w.u64(g.at)?;
            w.u32(g.arg)?;
            w.bytes(&g.bytes)?;
        }
        w.u64(self.consts.len() as u64)?;
        for (name, v) in &self.consts {
            w.bytes(name.as_bytes())?;
            w.bytes(v)?;
        }
        w.u64(self.dats.len() as u64)?;
        for d in &self.dats {
            w.bytes(d.name.as_bytes())?;
            w.u32(d.occurrence)?;
            w.u64(d.row_bytes)?;
            w.bytes(&d.bytes)?;
        }
        debug_assert_eq!(w.len, self.body_len());
        let crc = w.crc.finalize();
        out.write_all(&crc.to_le_bytes())?;
        out.write_all(TRAILER)
    }

    /// Reads and checks a checkpoint file; with a hash of its bytes (ranks compare theirs).
    pub(crate) fn read(path: &Path) -> Result<(Image, u64)> {
        let bytes = std::fs::read(path).map_err(|e| Op2Error::CheckpointCorrupt {
            path: path.to_path_buf(),
            reason: format!("cannot read it: {e}"),
        })?;
        Ok((Image::parse(path, &bytes)?, hash_bytes(1, &bytes)))
    }

    /// Checks and decodes a checkpoint's bytes (`path` names it in errors).
    pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Image> {
        let corrupt = |reason: &str| Op2Error::CheckpointCorrupt {
            path: path.to_path_buf(),
            reason: reason.into(),
        };
        if bytes.len() < 20 || &bytes[..8] != MAGIC {
            return Err(corrupt("not an op2-rs checkpoint (no OP2CKPT header)"));
        }
        let body_len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
        let expected = body_len.checked_add(20 + 8);
        if expected != Some(bytes.len() as u64) {
            return Err(corrupt(&format!(
                "{} bytes, its header announces {} (truncated or extended)",
                bytes.len(),
                expected.map_or_else(|| "more than exist".into(), |n| n.to_string())
            )));
        }
        // The header (magic, version, length) keeps its layout in every version: a file whose
        // length is right but whose version is newer was written by a newer op2-rs.
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version > VERSION {
            return Err(Op2Error::CheckpointVersion {
                path: path.to_path_buf(),
                found: version,
                supported: VERSION,
            });
        }
        if version == 0 {
            return Err(corrupt("format version 0"));
        }
        let body = &bytes[20..20 + body_len as usize];
        let tail = &bytes[20 + body_len as usize..];
        if &tail[4..] != TRAILER {
            return Err(corrupt("no END marker"));
        }
        let crc = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes"));
        if crc32fast::hash(body) != crc {
            return Err(corrupt("checksum mismatch (the file was damaged)"));
        }
        let mut r = Reader { body, at: 0 };
        let short = || corrupt("its contents end early");
        let mut image = Image {
            backup: r.u64().ok_or_else(short)?,
            loops_hash: r.u64().ok_or_else(short)?,
            all_dat_bytes: r.u64().ok_or_else(short)?,
            ..Image::default()
        };
        for _ in 0..r.count().ok_or_else(short)? {
            let kind = r.string().ok_or_else(short)?;
            let name = r.string().ok_or_else(short)?;
            let occurrence = r.u32().ok_or_else(short)?;
            let sizes = (0..r.count().ok_or_else(short)?)
                .map(|_| r.u64())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(short)?;
            let hash = r.u64().ok_or_else(short)?;
            image.decls.push(Decl {
                kind,
                name,
                occurrence,
                sizes,
                hash,
            });
        }
        for _ in 0..r.count().ok_or_else(short)? {
            image.history.push(GlobalValue {
                at: r.u64().ok_or_else(short)?,
                arg: r.u32().ok_or_else(short)?,
                bytes: r.bytes().ok_or_else(short)?.to_vec(),
            });
        }
        for _ in 0..r.count().ok_or_else(short)? {
            let name = r.string().ok_or_else(short)?;
            let v = r.bytes().ok_or_else(short)?.to_vec();
            image.consts.push((name, v));
        }
        for _ in 0..r.count().ok_or_else(short)? {
            image.dats.push(SavedDat {
                name: r.string().ok_or_else(short)?,
                occurrence: r.u32().ok_or_else(short)?,
                row_bytes: r.u64().ok_or_else(short)?,
                bytes: r.bytes().ok_or_else(short)?.to_vec(),
            });
        }
        if r.at != body.len() {
            return Err(corrupt("bytes left over after its contents"));
        }
        Ok(image)
    }
}

/// Reads fields from a checked body; `None` past its end.
struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.body.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A count of items that follow, each at least one byte: larger than what is left is
    /// corruption, not a reason to allocate.
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.body.len() - self.at).then_some(n)
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Image {
        Image {
            backup: 42,
            loops_hash: 7,
            decls: vec![Decl {
                kind: "dat".into(),
                name: "q".into(),
                occurrence: 0,
                sizes: vec![3, 4, 0],
                hash: 99,
            }],
            history: vec![GlobalValue {
                at: 3,
                arg: 1,
                bytes: vec![1, 2, 3, 4, 5, 6, 7, 8],
            }],
            consts: vec![("gam".into(), 1.4f64.to_le_bytes().to_vec())],
            dats: vec![SavedDat {
                name: "q".into(),
                occurrence: 0,
                row_bytes: 32,
                bytes: (0..96).collect(),
            }],
            all_dat_bytes: 200,
        }
    }

    fn encoded(i: &Image) -> Vec<u8> {
        let mut v = Vec::new();
        i.write(&mut v).unwrap();
        v
    }

    #[test]
    fn round_trips() {
        let i = sample();
        let p = Path::new("x");
        assert_eq!(Image::parse(p, &encoded(&i)).unwrap(), i);
        assert_eq!(
            Image::parse(p, &encoded(&Image::default())).unwrap(),
            Image::default()
        );
    }

    #[test]
    fn every_damage_is_a_typed_error() {
        let good = encoded(&sample());
        let p = Path::new("run.ckpt");
        // Every truncation.
        for n in 0..good.len() {
            let e = Image::parse(p, &good[..n]).unwrap_err();
            assert!(matches!(e, Op2Error::CheckpointCorrupt { .. }), "{n}: {e}");
        }
        // Every single flipped bit in the body and trailer, and a sample in the header.
        for i in (0..good.len()).filter(|&i| i >= 8) {
            for bit in [0, 3, 7] {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                let e = Image::parse(p, &bad).unwrap_err();
                assert!(
                    matches!(
                        e,
                        Op2Error::CheckpointCorrupt { .. } | Op2Error::CheckpointVersion { .. }
                    ),
                    "byte {i} bit {bit}: {e}"
                );
            }
        }
        let mut newer = good.clone();
        newer[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        match Image::parse(p, &newer).unwrap_err() {
            Op2Error::CheckpointVersion {
                found, supported, ..
            } => assert_eq!((found, supported), (VERSION + 1, VERSION)),
            e => panic!("{e}"),
        }
        let e = Image::parse(p, b"<VTKFile ...> not a checkpoint at all").unwrap_err();
        assert!(e.to_string().contains("run.ckpt"), "{e}");
    }

    #[test]
    fn hashes_tell_data_apart() {
        let a = hash_bytes(0, &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_ne!(a, hash_bytes(0, &[1, 2, 3, 4, 5, 6, 7, 8, 8]));
        assert_ne!(a, hash_bytes(0, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 0]));
        assert_ne!(a, hash_bytes(1, &[1, 2, 3, 4, 5, 6, 7, 8, 9]));
        assert_eq!(a, hash_bytes(0, &[1, 2, 3, 4, 5, 6, 7, 8, 9]));
    }
}

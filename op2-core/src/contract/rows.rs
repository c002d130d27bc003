//! Rows of a carrier's bytes: sizes, bounds checks and gathers that halo packing needs, shared by
//! the default [`Backend`](crate::Backend) methods and the device backends' data tables.

use crate::model::carrier::{Carrier, CarrierKind};
use crate::model::error::{Op2Error, Result};

/// Bytes of one row of a carrier: its dim times its element size.
pub fn row_bytes(carrier: &Carrier) -> usize {
    carrier.dim() * carrier.dtype().size()
}

/// Bytes of a carrier's host data.
pub fn carrier_bytes(c: &Carrier) -> usize {
    let rows = match c.kind() {
        CarrierKind::Dat(set) => set.total_size(),
        CarrierKind::Global | CarrierKind::Const => 1,
    };
    rows * row_bytes(c)
}

/// Checks that rows `rows` exist in `c` and that `out_len` bytes hold them (halo packing).
pub fn check_rows(c: &Carrier, rows: &[u32], out_len: usize) -> Result<()> {
    let row = row_bytes(c);
    let total = carrier_bytes(c) / row.max(1);
    let bad = |reason: String| {
        Err(Op2Error::Execution {
            backend: "runtime".into(),
            kernel: format!("halo rows of `{}`", c.name()),
            reason,
        })
    };
    if let Some(&r) = rows.iter().find(|&&r| r as usize >= total) {
        return bad(format!("row {r} of {total}"));
    }
    if out_len != rows.len() * row {
        return bad(format!(
            "{} rows of {row} bytes into {out_len} bytes",
            rows.len()
        ));
    }
    Ok(())
}

/// Checks that bytes `offset..offset + len` lie within `c`'s data.
pub fn check_range(c: &Carrier, offset: usize, len: usize) -> Result<()> {
    let size = carrier_bytes(c);
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(Op2Error::Execution {
            backend: "runtime".into(),
            kernel: format!("halo rows of `{}`", c.name()),
            reason: format!("bytes {offset}..{} of {size}", offset.saturating_add(len)),
        });
    }
    Ok(())
}

/// Copies rows `rows` (`row` bytes each) of `from` into `out`, one after another.
pub fn gather_rows(from: &[u8], row: usize, rows: &[u32], out: &mut [u8]) {
    for (k, &r) in rows.iter().enumerate() {
        let r = r as usize;
        out[k * row..(k + 1) * row].copy_from_slice(&from[r * row..(r + 1) * row]);
    }
}

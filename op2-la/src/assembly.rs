//! Assembly loops: a `par_loop` whose args may include matrices. Each Mat arg becomes a per-element
//! staging Dat that the backend's kernel fills (on any backend, device ones included: every element
//! writes only its own block, so no colouring is needed there); the blocks are then added into the
//! matrix by an owner-computes pass over the matrix entries, each entry summing its contributions in
//! element order. So no two threads ever write one entry, and every backend builds bit-for-bit the
//! matrix its element blocks give, whatever its thread count.

use crate::error::{LaError, Result};
use crate::mat::{BoundaryDrop, Mat, MatArg, Staging};
use crate::plan::{AssemblyPlan, Share};
use crate::sparsity::assembled_elements;
use op2_core::num_complex::Complex64;
use op2_core::{Access, Arg, Kernel, Map, Runtime, Set};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One argument of [`par_loop`]: an ordinary op2 arg or a matrix.
#[derive(Debug, Clone)]
pub enum LoopArg {
    /// A Dat, Global or Const arg, passed to op2 unchanged.
    Op2(Arg),
    /// A matrix: the kernel gets the element's dense block.
    Mat(MatArg),
}

impl From<Arg> for LoopArg {
    fn from(a: Arg) -> Self {
        LoopArg::Op2(a)
    }
}

impl From<MatArg> for LoopArg {
    fn from(a: MatArg) -> Self {
        LoopArg::Mat(a)
    }
}

/// For each element of the extruded set `map` goes from (in the order a loop runs them),
/// whether it is the bottom and whether it is the top cell of its column.
fn column_ends(map: &Map) -> Vec<(bool, bool)> {
    let Some(ex) = map.from().extrusion() else {
        return Vec::new();
    };
    let mut ends = Vec::with_capacity(map.from().exec_size());
    for b in 0..ex.base().exec_size() {
        let n = ex.column_len(b);
        ends.extend((0..n).map(|k| (k == 0, k + 1 == n)));
    }
    ends
}

/// The row and column map entries `drop` leaves out of an element at `(bottom, top)`.
fn dropped_entries(drop: &BoundaryDrop, (bottom, top): (bool, bool)) -> (Vec<usize>, Vec<usize>) {
    let mut out = (Vec::new(), Vec::new());
    for (end, at) in [(&drop.bottom, bottom), (&drop.top, top)] {
        if let (Some((rows, cols)), true) = (end, at) {
            out.0.extend_from_slice(rows);
            out.1.extend_from_slice(cols);
        }
    }
    out
}

impl AssemblyPlan {
    /// The plan of `arg` over `elements` elements, or (`chosen`, a subset's elements) over
    /// those of them only: the others' blocks are never added.
    fn build(arg: &MatArg, elements: usize, chosen: Option<&[i32]>) -> Result<AssemblyPlan> {
        let mat = &arg.mat;
        let sp = mat.sparsity();
        let (br, bc) = sp.dims();
        let (ra, ca) = (arg.row_map.arity(), arg.col_map.arity());
        let (rows_per, cols_per) = (ra * br, ca * bc);
        let block = rows_per * cols_per;
        let total = elements as u128 * block as u128;
        // Positions are 32-bit: the matrix's entries (and u32::MAX, "not owned") must fit.
        if sp.nnz() as u128 >= u32::MAX as u128 {
            return Err(LaError::TooLarge {
                what: "matrix",
                name: mat.name().into(),
                count: sp.nnz() as u128,
                limit: u32::MAX as u128 - 1,
            });
        }
        if total >= u32::MAX as u128 {
            return Err(LaError::TooLarge {
                what: "assembly",
                name: mat.name().into(),
                count: total,
                limit: u32::MAX as u128,
            });
        }
        // One row per executed element, values inside the target sets: checked at declaration.
        // Maps from an extruded set: their rows at every layer.
        let (rv, cv) = (arg.row_map.layered_values(), arg.col_map.layered_values());
        let owned_rows = sp.rows();
        // The matrix position of every block entry (u32::MAX: a row another rank owns).
        let mut slot = vec![u32::MAX; total as usize];
        let run: Box<dyn Iterator<Item = usize>> = match chosen {
            Some(c) => Box::new(c.iter().map(|&e| e as usize)),
            None => Box::new(0..elements),
        };
        // Block entry (row node i component a, column node j component b).
        let local = |i: usize, a: usize, j: usize, b: usize| {
            if arg.component_major {
                (a * ra + i) * cols_per + b * ca + j
            } else {
                (i * br + a) * cols_per + j * bc + b
            }
        };
        // With boundary drops: each element's place in its column (bottom, top), and the
        // block entries left out (their staging is zeroed by hand after a consuming pass).
        let ends = arg.boundary.as_ref().map(|_| column_ends(&arg.row_map));
        let mut dropped = Vec::new();
        for e in run {
            let (drop_rows, drop_cols) = match (&arg.boundary, &ends) {
                (Some(d), Some(ends)) => dropped_entries(d, ends[e]),
                _ => (Vec::new(), Vec::new()),
            };
            for i in 0..ra {
                // A gap of a map with gaps ("no element"): its entries go nowhere, and are
                // zeroed like dropped ones.
                if rv[e * ra + i] < 0 {
                    for a in 0..br {
                        for j in 0..ca {
                            for b in 0..bc {
                                dropped.push(e * block + local(i, a, j, b));
                            }
                        }
                    }
                    continue;
                }
                let rn = rv[e * ra + i] as usize;
                for a in 0..br {
                    let row = rn * br + a;
                    if row >= owned_rows {
                        continue;
                    }
                    if drop_rows.contains(&i) {
                        for j in 0..ca {
                            for b in 0..bc {
                                dropped.push(e * block + local(i, a, j, b));
                            }
                        }
                        continue;
                    }
                    let lo = sp.row_offsets()[row];
                    let cols = sp.row(row);
                    for j in 0..ca {
                        if cv[e * ca + j] < 0 {
                            for b in 0..bc {
                                dropped.push(e * block + local(i, a, j, b));
                            }
                            continue;
                        }
                        let cn = cv[e * ca + j] as usize;
                        for b in 0..bc {
                            if drop_cols.contains(&j) {
                                dropped.push(e * block + local(i, a, j, b));
                                continue;
                            }
                            let col = (cn * bc + b) as u32;
                            // The sparsity was built from these maps, so the entry is there.
                            let p =
                                cols.binary_search(&col)
                                    .map_err(|_| LaError::NotInPattern {
                                        mat: mat.name().into(),
                                        row,
                                        col: col as usize,
                                    })?;
                            slot[e * block + local(i, a, j, b)] = (lo + p) as u32;
                        }
                    }
                }
            }
        }
        Ok(AssemblyPlan {
            slot,
            dropped,
            nnz: sp.nnz(),
            shares: Mutex::new(HashMap::new()),
        })
    }

    /// The plan of a complex matrix, whose staging and values read as f64 two per value: each
    /// block entry becomes two (real part, then imaginary), each going to its value's two.
    fn widened(self, mat: &str) -> Result<AssemblyPlan> {
        if self.nnz as u128 * 2 >= u32::MAX as u128
            || self.slot.len() as u128 * 2 >= u32::MAX as u128
        {
            return Err(LaError::TooLarge {
                what: "complex matrix",
                name: mat.into(),
                count: self.nnz as u128 * 2,
                limit: u32::MAX as u128 - 1,
            });
        }
        let slot = self
            .slot
            .iter()
            .flat_map(|&s| {
                if s == u32::MAX {
                    [u32::MAX; 2]
                } else {
                    [2 * s, 2 * s + 1]
                }
            })
            .collect();
        let dropped = self
            .dropped
            .iter()
            .flat_map(|&k| [2 * k, 2 * k + 1])
            .collect();
        Ok(AssemblyPlan {
            slot,
            dropped,
            nnz: 2 * self.nnz,
            shares: Mutex::new(HashMap::new()),
        })
    }

    /// Block entries it places: the executed elements' (owned and exec halo), a prefix of the
    /// staging, which also has rows for the set's non-exec halo.
    fn len(&self) -> usize {
        self.slot.len()
    }

    /// Splits the matrix entries into `threads` equal ranges; each thread scans only the block
    /// entries between the first and the last that land in its range. On a mesh numbered for
    /// locality those spans barely overlap; on any numbering the result is the same.
    fn shares(&self, threads: usize) -> Arc<Vec<Share>> {
        let mut cache = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(threads)
            .or_insert_with(|| {
                let bounds: Vec<usize> = (0..=threads).map(|t| t * self.nnz / threads).collect();
                let mut first = vec![usize::MAX; threads];
                let mut last = vec![0usize; threads];
                for (k, &s) in self.slot.iter().enumerate() {
                    if s == u32::MAX {
                        continue;
                    }
                    // The owner of entry s: the last bound at or below it.
                    let t = bounds.partition_point(|&b| b <= s as usize) - 1;
                    first[t] = first[t].min(k);
                    last[t] = k + 1;
                }
                Arc::new(
                    (0..threads)
                        .map(|t| Share {
                            entries: bounds[t]..bounds[t + 1],
                            blocks: if first[t] == usize::MAX {
                                0..0
                            } else {
                                first[t]..last[t]
                            },
                        })
                        .collect(),
                )
            })
            .clone()
    }

    /// Adds each block entry into its matrix entry (or, `insert`, stores it: the last element's
    /// value stays), in element order, so every thread count gives the same sums. With
    /// `Blocks::Consume` each block entry used is zeroed as it is read, leaving the staging ready
    /// for the next loop without a pass of its own.
    fn apply(
        &self,
        blocks: Blocks<'_>,
        values: &mut [f64],
        insert: bool,
        threads: usize,
        on_openmp: bool,
    ) {
        let _ = on_openmp; // used with feature `openmp`
        let (ptr, len, consume) = match blocks {
            Blocks::Read(b) => (b.as_ptr() as *mut f64, b.len(), false),
            Blocks::Consume(b) => (b.as_mut_ptr(), b.len(), true),
        };
        assert_eq!(len, self.slot.len(), "staging and plan disagree");
        assert_eq!(values.len(), self.nnz, "matrix and plan disagree");
        let blocks = SharedBlocks(ptr);
        let run = |share: &Share, values: &mut [f64]| {
            let lo = share.entries.start;
            let span = share.entries.len();
            let first = share.blocks.start;
            for (j, &s) in self.slot[share.blocks.clone()].iter().enumerate() {
                // Entries of other threads (and rows of other ranks, u32::MAX) wrap past `span`.
                let i = (s as usize).wrapping_sub(lo);
                if i < span {
                    // SAFETY: `first + j < len` (the share's block range lies in the plan, whose
                    // length is the staging's); block entry k goes to exactly one matrix entry, so
                    // only the one thread owning that entry reads or writes it.
                    let v = unsafe { blocks.take(first + j, consume) };
                    if insert {
                        values[i] = v;
                    } else {
                        values[i] += v;
                    }
                }
            }
        };
        if threads <= 1 {
            let all = Share {
                entries: 0..self.nnz,
                blocks: 0..self.slot.len(),
            };
            run(&all, values);
            return;
        }
        let shares = self.shares(threads);
        #[cfg(feature = "openmp")]
        if on_openmp {
            let flat: Vec<u64> = shares
                .iter()
                .flat_map(|s| {
                    [s.entries.start, s.entries.end, s.blocks.start, s.blocks.end].map(|v| v as u64)
                })
                .collect();
            // SAFETY: the shares' ranges lie within `slot`/staging (same length, asserted above)
            // and `values` (the plan's entries); each block entry and matrix entry belongs to one
            // share; the C pass reads and writes nothing else.
            unsafe {
                op2la_apply_shares(
                    self.slot.as_ptr(),
                    ptr,
                    values.as_mut_ptr(),
                    flat.as_ptr(),
                    shares.len() as std::ffi::c_int,
                    insert as std::ffi::c_int,
                    consume as std::ffi::c_int,
                );
            }
            return;
        }
        let mut parts: Vec<(&Share, &mut [f64])> = Vec::with_capacity(threads);
        let mut rest = values;
        for sh in shares.iter() {
            let (mine, tail) = rest.split_at_mut(sh.entries.len());
            parts.push((sh, mine));
            rest = tail;
        }
        // One scoped thread per share (the caller takes the first): every share starts at once,
        // where a work-stealing pool may leave a share queued behind another on a busy machine.
        std::thread::scope(|scope| {
            let mut parts = parts.into_iter();
            let (sh0, mine0) = parts.next().expect("at least one share");
            for (sh, mine) in parts {
                scope.spawn(move || run(sh, mine));
            }
            run(sh0, mine0);
        });
    }
}

#[cfg(feature = "openmp")]
unsafe extern "C" {
    fn op2la_apply_shares(
        slot: *const u32,
        blocks: *mut f64,
        values: *mut f64,
        shares: *const u64,
        nshares: std::ffi::c_int,
        insert: std::ffi::c_int,
        consume: std::ffi::c_int,
    );
}

/// The staging an assembly reads: shared (a device backend's downloaded copy, or across ranks), or
/// the only copy, zeroed as it is read.
enum Blocks<'a> {
    Read(&'a [f64]),
    Consume(&'a mut [f64]),
}

/// The staging's base pointer, shared by the threads of one `apply`, which touch disjoint entries.
#[derive(Clone, Copy)]
struct SharedBlocks(*mut f64);

// SAFETY: threads reach disjoint entries through it (see `AssemblyPlan::apply`).
unsafe impl Send for SharedBlocks {}
unsafe impl Sync for SharedBlocks {}

impl SharedBlocks {
    /// Entry `k`, zeroed after reading when `consume` (never when the staging was only lent).
    ///
    /// # Safety
    /// `k` is within the staging, and no other thread reads or writes entry `k` meanwhile.
    unsafe fn take(self, k: usize, consume: bool) -> f64 {
        // SAFETY: the caller's contract.
        unsafe {
            let p = self.0.add(k);
            let v = *p;
            if consume {
                *p = 0.0;
            }
            v
        }
    }
}

/// Threads the runtime's backend works with on the host (one for the sequential reference): the
/// backend says, so a third-party backend gets the threaded pass too.
pub fn host_threads(rt: &Runtime) -> usize {
    rt.host_threads()
}

fn zero_kernel(len: usize, complex: bool) -> Result<Kernel> {
    let (name, ty) = if complex {
        (format!("op2la_zero_complex_{len}"), "double _Complex")
    } else {
        (format!("op2la_zero_{len}"), "double")
    };
    let source = format!("void {name}({ty} *a) {{ for (int i = 0; i < {len}; i++) a[i] = 0; }}");
    Ok(Kernel::new(&name, &source)?)
}

/// Runs `kernel` over `set` with `args`, where Mat args ([`Mat::arg`]) receive the element's dense
/// block and the library adds (`INC`) or inserts (`WRITE`) it into the matrix. Ordinary args behave
/// as in [`Runtime::par_loop`]. The loop runs before this returns (the matrix is host data), and
/// the matrix is left unassembled: call [`Mat::assemble`] before using it.
///
/// Errors: a Mat arg whose maps are not a pair of its sparsity or do not start from `set`, an access
/// other than INC or WRITE, mixing INC and WRITE on one matrix before assembling, and everything
/// `par_loop` itself checks (a kernel parameter whose declared size disagrees with the block is
/// reported there).
pub fn par_loop(
    rt: &Runtime,
    kernel: &Kernel,
    set: &Set,
    args: impl IntoIterator<Item = LoopArg>,
) -> Result<()> {
    let args: Vec<LoopArg> = args.into_iter().collect();
    // Check every Mat arg before anything runs.
    for (i, a) in args.iter().enumerate() {
        if let LoopArg::Mat(m) = a {
            check_mat_arg(kernel, set, i, m)?;
            // One matrix twice in a loop: both args must add, or both insert.
            let earlier = args[..i].iter().find_map(|b| match b {
                LoopArg::Mat(e) if Arc::ptr_eq(&e.mat.0, &m.mat.0) && e.access != m.access => {
                    Some(e)
                }
                _ => None,
            });
            if let Some(e) = earlier {
                return Err(LaError::MixedModes {
                    mat: m.mat.name().into(),
                    now: mode_name(m.access),
                    before: mode_name(e.access),
                });
            }
        }
    }
    let mut lowered = Vec::with_capacity(args.len());
    let mut staged: Vec<(usize, MatArg, Staging)> = Vec::new();
    for (i, a) in args.into_iter().enumerate() {
        match a {
            LoopArg::Op2(a) => lowered.push(a),
            LoopArg::Mat(m) => {
                let (r, c) = m.block_shape();
                // Over a subset the blocks are the whole set's (a Dat lives on whole sets); the
                // loop writes, and the plan adds, only the subset's.
                let whole = whole_set(set).0;
                let block = staging(rt, &m.mat, whole, i, r * c)?;
                // Left zero by the last assembly's pass (host backends, one process), or zeroed now.
                let clean = m.mat.lock().clean.remove(&(whole.id(), i));
                if r * c > 0 && !clean {
                    rt.par_loop(
                        &zero_kernel(r * c, m.mat.is_complex())?,
                        set,
                        [block.arg(Access::Write).with_exec_halo()],
                    )?;
                }
                // Exec-halo elements run too: their blocks reach owned rows (seed 001's
                // redundant assembly, so nothing is ever sent to another rank's rows).
                let arg = block.arg(Access::Rw).with_exec_halo();
                lowered.push(if m.per_entry {
                    let (ra, ca) = (m.row_map.arity(), m.col_map.arity());
                    let dims = m.mat.sparsity().dims();
                    if m.component_major {
                        // One call per scalar entry of the component-major element matrix.
                        arg.per_entry_block(ra * dims.0, ca * dims.1, (1, 1))
                    } else {
                        arg.per_entry_block(ra, ca, dims)
                    }
                } else {
                    arg
                });
                staged.push((i, m, block));
            }
        }
    }
    rt.par_loop(kernel, set, lowered)?;
    let threads = host_threads(rt);
    // On a host backend in one process the staging is the only copy: the adding pass zeroes it
    // for the next loop. A device's copy, or a Dat with halos to keep current, gets the zero loop.
    let consume = rt.runs_on_host_memory() && rt.communicator().size() == 1;
    // Under a backend whose threads are OpenMP's the pass runs on them (see csrc/apply_omp.c).
    let on_openmp = rt.uses_openmp_threads();
    for (position, m, block) in staged {
        let (whole, chosen) = whole_set(set);
        let elements = assembled_elements(whole);
        let key = (
            set.id(),
            m.row_map.id(),
            m.col_map.id(),
            m.component_major,
            m.boundary.clone(),
        );
        let cached = m.mat.lock().plans.get(&key).cloned();
        let plan = match cached {
            Some(p) => p,
            None => {
                let mut p = AssemblyPlan::build(&m, elements, chosen)?;
                if m.mat.is_complex() {
                    // The staging and the values read as f64: two per complex value.
                    p = p.widened(m.mat.name())?;
                }
                let p = Arc::new(p);
                m.mat.lock().plans.insert(key, p.clone());
                p
            }
        };
        let insert = m.access == Access::Write;
        let mut guard = if consume {
            StagingData::write(&block)?
        } else {
            StagingData::read(&block)?
        };
        let mut st = m.mat.lock();
        m.mat.begin(&mut st, !insert)?;
        match guard.as_f64() {
            F64View::Mut(blocks) => {
                plan.apply(
                    Blocks::Consume(&mut blocks[..plan.len()]),
                    &mut st.values,
                    insert,
                    threads,
                    on_openmp,
                );
                // Dropped entries were not read: zero them so the staging is clean.
                for &k in &plan.dropped {
                    blocks[k] = 0.0;
                }
                st.clean.insert((whole.id(), position));
            }
            F64View::Ref(blocks) => plan.apply(
                Blocks::Read(&blocks[..plan.len()]),
                &mut st.values,
                insert,
                threads,
                on_openmp,
            ),
        }
    }
    Ok(())
}

fn mode_name(access: Access) -> &'static str {
    if access == Access::Write {
        "inserting values"
    } else {
        "adding values"
    }
}

fn check_mat_arg(kernel: &Kernel, set: &Set, arg: usize, m: &MatArg) -> Result<()> {
    let mat = &m.mat;
    if !matches!(m.access, Access::Inc | Access::Write) {
        return Err(LaError::MatAccess {
            kernel: kernel.name().into(),
            arg,
            mat: mat.name().into(),
            access: m.access,
        });
    }
    let pairs = mat.sparsity().pairs();
    if !pairs
        .iter()
        .any(|(r, c)| *r == m.row_map && *c == m.col_map)
    {
        return Err(LaError::MapsNotInSparsity {
            kernel: kernel.name().into(),
            arg,
            mat: mat.name().into(),
            row_map: m.row_map.name().into(),
            col_map: m.col_map.name().into(),
            pairs: pairs
                .iter()
                .map(|(r, c)| format!("({}, {})", r.name(), c.name()))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let whole = whole_set(set).0;
    if m.row_map.from() != whole {
        return Err(LaError::MatSet {
            kernel: kernel.name().into(),
            set: set.name().into(),
            arg,
            mat: mat.name().into(),
            from: m.row_map.from().name().into(),
        });
    }
    // The staging (one block per executed element) and the plan's positions are indexed with
    // 32 bits: refuse before allocating gigabytes for a loop that could not be added in.
    let (r, c) = m.block_shape();
    let entries = assembled_elements(whole) as u128 * (r * c) as u128;
    if entries >= u32::MAX as u128 {
        return Err(LaError::TooLarge {
            what: "assembly",
            name: mat.name().into(),
            count: entries,
            limit: u32::MAX as u128 - 1,
        });
    }
    mat.check_mode(m.access == Access::Inc)
}

/// The set whose elements a loop over `set` runs (its superset, for a subset), and the subset's
/// elements of it (`None` for a whole set).
fn whole_set(set: &Set) -> (&Set, Option<&[i32]>) {
    match set.superset() {
        Some(whole) => (whole, set.subset_indices()),
        None => (set, None),
    }
}

/// The staging Dat of arg `position` over `set` (kept with the matrix for the next assembly),
/// of the matrix's scalar type.
fn staging(rt: &Runtime, mat: &Mat, set: &Set, position: usize, len: usize) -> Result<Staging> {
    let key = (set.id(), position);
    if let Some(d) = mat.lock().blocks.get(&key) {
        if d.dim() == len.max(1) {
            return Ok(d.clone());
        }
    }
    let (dim, name) = (len.max(1), "op2la_element_blocks");
    let d = if mat.is_complex() {
        Staging::Complex(rt.decl_dat_zeros::<Complex64>(set, dim, name)?)
    } else {
        Staging::Real(rt.decl_dat_zeros::<f64>(set, dim, name)?)
    };
    mat.lock().blocks.insert(key, d.clone());
    Ok(d)
}

/// A staging's host values, held for the adding pass: written (`write`, the pass zeroes what it
/// reads) or read.
enum StagingData<'a> {
    Real(op2_core::HostWrite<'a, f64>),
    Complex(op2_core::HostWrite<'a, Complex64>),
    RealRead(op2_core::HostRead<'a, f64>),
    ComplexRead(op2_core::HostRead<'a, Complex64>),
}

impl<'a> StagingData<'a> {
    fn write(s: &'a Staging) -> Result<Self> {
        Ok(match s {
            Staging::Real(d) => StagingData::Real(d.data()?),
            Staging::Complex(d) => StagingData::Complex(d.data()?),
        })
    }

    fn read(s: &'a Staging) -> Result<Self> {
        Ok(match s {
            Staging::Real(d) => StagingData::RealRead(d.data_ro()?),
            Staging::Complex(d) => StagingData::ComplexRead(d.data_ro()?),
        })
    }

    /// The values as f64 (a complex value's real part, then its imaginary part). Read-only
    /// stagings give a copy the pass may zero without effect.
    fn as_f64(&mut self) -> F64View<'_> {
        match self {
            StagingData::Real(w) => F64View::Mut(&mut w[..]),
            StagingData::Complex(w) => F64View::Mut(bytemuck::cast_slice_mut(&mut w[..])),
            StagingData::RealRead(r) => F64View::Ref(&r[..]),
            StagingData::ComplexRead(r) => F64View::Ref(bytemuck::cast_slice(&r[..])),
        }
    }
}

/// A staging's values as f64, writable or not.
enum F64View<'a> {
    Mut(&'a mut [f64]),
    Ref(&'a [f64]),
}

/// [`par_loop`] with args written inline, each converted with `Into<LoopArg>` (op2 args and Mat
/// args mix freely): `op2_la::par_loop!(rt, kernel, set, mat.arg(INC, &m, &m), x.arg_row(&m, READ))`.
#[macro_export]
macro_rules! par_loop {
    ($rt:expr, $kernel:expr, $set:expr $(, $arg:expr)* $(,)?) => {
        $crate::par_loop(&$rt, &$kernel, &$set, [$($crate::LoopArg::from($arg)),*])
    };
}

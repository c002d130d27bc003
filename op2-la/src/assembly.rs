//! Assembly loops: a `par_loop` whose args may include matrices. Each Mat arg becomes a per-element
//! staging Dat that the backend's kernel fills (on any backend, device ones included: every element
//! writes only its own block, so no colouring is needed there); the blocks are then added into the
//! matrix by an owner-computes pass over the matrix entries, each entry summing its contributions in
//! element order. So no two threads ever write one entry, and every backend builds bit-for-bit the
//! matrix its element blocks give, whatever its thread count.

use crate::error::{LaError, Result};
use crate::mat::{Mat, MatArg};
use crate::sparsity::{assembled_elements, checked_values};
use op2_core::{Access, Arg, Dat, Kernel, Runtime, Set};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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

/// Where each entry of each element block goes: for matrix entry `s`, the block entries
/// `contrib[start[s]..start[s+1]]` (indices into the loop's staging, `element * block + local`),
/// in element order.
pub(crate) struct AssemblyPlan {
    start: Vec<usize>,
    contrib: Vec<u32>,
}

impl AssemblyPlan {
    fn build(arg: &MatArg, elements: usize) -> Result<AssemblyPlan> {
        let mat = &arg.mat;
        let sp = mat.sparsity();
        let (br, bc) = sp.dims();
        let (ra, ca) = (arg.row_map.arity(), arg.col_map.arity());
        let (rows_per, cols_per) = (ra * br, ca * bc);
        let block = rows_per * cols_per;
        let total = elements as u128 * block as u128;
        if total >= u32::MAX as u128 {
            return Err(LaError::TooLarge {
                what: "assembly",
                name: mat.name().into(),
                count: total,
                limit: u32::MAX as u128,
            });
        }
        let rv = checked_values(&arg.row_map, elements)?;
        let cv = checked_values(&arg.col_map, elements)?;
        let owned_rows = sp.rows();
        // The matrix position of every block entry (u32::MAX: a row another rank owns).
        let mut slot = vec![u32::MAX; total as usize];
        for e in 0..elements {
            for i in 0..ra {
                let rn = rv[e * ra + i] as usize;
                for a in 0..br {
                    let row = rn * br + a;
                    if row >= owned_rows {
                        continue;
                    }
                    let lo = sp.row_offsets()[row];
                    let cols = sp.row(row);
                    for j in 0..ca {
                        let cn = cv[e * ca + j] as usize;
                        for b in 0..bc {
                            let col = (cn * bc + b) as u32;
                            // The sparsity was built from these maps, so the entry is there.
                            let p =
                                cols.binary_search(&col)
                                    .map_err(|_| LaError::NotInPattern {
                                        mat: mat.name().into(),
                                        row,
                                        col: col as usize,
                                    })?;
                            slot[e * block + (i * br + a) * cols_per + j * bc + b] =
                                (lo + p) as u32;
                        }
                    }
                }
            }
        }
        // Transpose by counting: entries grouped by matrix position, in block-entry order.
        let nnz = sp.nnz();
        let mut start = vec![0usize; nnz + 1];
        for &s in &slot {
            if s != u32::MAX {
                start[s as usize + 1] += 1;
            }
        }
        for i in 0..nnz {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut contrib = vec![0u32; start[nnz]];
        for (k, &s) in slot.iter().enumerate() {
            if s != u32::MAX {
                contrib[fill[s as usize]] = k as u32;
                fill[s as usize] += 1;
            }
        }
        Ok(AssemblyPlan { start, contrib })
    }

    /// Adds (or, `insert`, stores the last of) each entry's contributions from `blocks`.
    fn apply(&self, blocks: &[f64], values: &mut [f64], insert: bool, threads: usize) {
        let entry = |s: usize, v: &mut f64| {
            let c = &self.contrib[self.start[s]..self.start[s + 1]];
            if insert {
                if let Some(&last) = c.last() {
                    *v = blocks[last as usize];
                }
            } else {
                let mut sum = 0.0;
                for &k in c {
                    sum += blocks[k as usize];
                }
                *v += sum;
            }
        };
        if threads <= 1 {
            for (s, v) in values.iter_mut().enumerate() {
                entry(s, v);
            }
        } else {
            const CHUNK: usize = 8192;
            pool(threads).install(|| {
                values
                    .par_chunks_mut(CHUNK)
                    .enumerate()
                    .for_each(|(ci, vs)| {
                        for (i, v) in vs.iter_mut().enumerate() {
                            entry(ci * CHUNK + i, v);
                        }
                    })
            });
        }
    }
}

/// One rayon pool per thread count, kept for the process (building one per loop would cost more
/// than small assemblies do).
pub(crate) fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap();
    pools
        .entry(threads)
        .or_insert_with(|| {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("a thread pool (the OS refused threads)"),
            )
        })
        .clone()
}

/// Threads the runtime's backend works with on the host: one for `seq` (the reference stays
/// sequential), `OMP_NUM_THREADS` (or every core) otherwise.
pub fn host_threads(rt: &Runtime) -> usize {
    if rt.backend_name() == "seq" {
        return 1;
    }
    rt.config().num_threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn zero_kernel(len: usize) -> Result<Kernel> {
    let name = format!("op2la_zero_{len}");
    let source =
        format!("void {name}(double *a) {{ for (int i = 0; i < {len}; i++) a[i] = 0.0; }}");
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
        }
    }
    let mut lowered = Vec::with_capacity(args.len());
    let mut staged: Vec<(MatArg, Dat<f64>)> = Vec::new();
    for (i, a) in args.into_iter().enumerate() {
        match a {
            LoopArg::Op2(a) => lowered.push(a),
            LoopArg::Mat(m) => {
                let (r, c) = m.block_shape();
                let block = staging(rt, &m.mat, set, i, r * c)?;
                if r * c > 0 {
                    rt.par_loop(&zero_kernel(r * c)?, set, [block.arg(Access::Write)])?;
                }
                lowered.push(block.arg(Access::Rw));
                staged.push((m, block));
            }
        }
    }
    rt.par_loop(kernel, set, lowered)?;
    let threads = host_threads(rt);
    for (m, block) in staged {
        let elements = assembled_elements(set);
        let key = (set.id(), m.row_map.id(), m.col_map.id());
        let cached = m.mat.lock().plans.get(&key).cloned();
        let plan = match cached {
            Some(p) => p,
            None => {
                let p = Arc::new(AssemblyPlan::build(&m, elements)?);
                m.mat.lock().plans.insert(key, p.clone());
                p
            }
        };
        let blocks = block.data_ro()?;
        let mut st = m.mat.lock();
        m.mat.begin(&mut st, m.access == Access::Inc)?;
        plan.apply(&blocks, &mut st.values, m.access == Access::Write, threads);
    }
    Ok(())
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
    if m.row_map.from() != set {
        return Err(LaError::MatSet {
            kernel: kernel.name().into(),
            set: set.name().into(),
            arg,
            mat: mat.name().into(),
            from: m.row_map.from().name().into(),
        });
    }
    mat.check_mode(m.access == Access::Inc)
}

/// The staging Dat of arg `position` over `set` (kept with the matrix for the next assembly).
fn staging(rt: &Runtime, mat: &Mat, set: &Set, position: usize, len: usize) -> Result<Dat<f64>> {
    let key = (set.id(), position);
    if let Some(d) = mat.lock().blocks.get(&key) {
        if d.dim() == len.max(1) {
            return Ok(d.clone());
        }
    }
    let d = rt.decl_dat_zeros::<f64>(set, len.max(1), "op2la_element_blocks")?;
    mat.lock().blocks.insert(key, d.clone());
    Ok(d)
}

/// [`par_loop`] with args written inline, each converted with `Into<LoopArg>` (op2 args and Mat
/// args mix freely): `op2_la::par_loop!(rt, kernel, set, mat.arg(INC, &m, &m), x.arg_row(&m, READ))`.
#[macro_export]
macro_rules! par_loop {
    ($rt:expr, $kernel:expr, $set:expr $(, $arg:expr)* $(,)?) => {
        $crate::par_loop(&$rt, &$kernel, &$set, [$($crate::LoopArg::from($arg)),*])
    };
}

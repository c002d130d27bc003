//! Which host loops run as SIMD lanes, in batches of [`SIMD_BATCH`] elements, and the copy of
//! the kernel such a batch calls with its args' lanes stored component-major (see
//! [`crate::lanes`]). The emitters (`emit.rs`, `openmp.rs`) and the row transposes (`rows.rs`)
//! build on these decisions.

use op2_core::{Access, ArgKind, ArgSig, LoopSignature};

/// Elements a batched loop runs at once (see `emit_element_loop` in `emit.rs`): two vectors of
/// doubles on AVX2, one on AVX-512.
pub(crate) const SIMD_BATCH: usize = 8;

/// Most bytes of lane arrays a batched loop declares, on the stack of the thread running it (an
/// OpenMP worker's may be small): Dats of very large dim run one element at a time.
const MAX_LANE_BYTES: usize = 16 * 1024;

/// Whether a loop's elements may run as SIMD lanes with nothing written through maps (the
/// OpenCL host path vectorises such loops with `assume_safety`): every arg that writes is
/// direct and the only arg on its data (so no lane reads or writes what another lane writes),
/// nothing is written through maps or into Globals, and no arg passes whole rows (arrays of
/// pointers do not vectorise).
pub(crate) fn simd_reads_only(sig: &LoopSignature) -> bool {
    simd_batched(sig)
        && !sig
            .args
            .iter()
            .any(|a| matches!(a.kind, ArgKind::Indirect { .. }) && a.access.writes())
}

/// Whether a host loop's elements may run as SIMD lanes, in batches (`emit_element_loop` in
/// `emit.rs`): as [`simd_reads_only`] allows, and also with increments through maps (OP2's
/// vectorised CPU scheme): each lane adds into its own zeroed lane array, and the lanes'
/// increments are added to the Dat afterwards, one lane after another, so lanes that hit the
/// same element do not lose increments. An incremented Dat must appear in no arg other than
/// increments through maps (a lane must not read what another lane's increment changes). The
/// indirect data the loop reads does not change during it, so it can be gathered into lane
/// arrays ahead of the kernel; those arrays must be small ([`MAX_LANE_BYTES`]). A kernel that
/// steps the pointers it is handed (a column walk, [`op2_core::Kernel::steps_pointers`]) never
/// runs in batches: its lanes would be copies it steps off the end of.
pub(crate) fn simd_batched(sig: &LoopSignature) -> bool {
    // Complex values have no vector types to transpose rows through; such loops run element
    // by element.
    // A C++ kernel's source is not rewritten into lanes (the rewrite reads C).
    // A kernel acting outside its args runs element after element: lanes of one batch would
    // act on the same outside state at once.
    if sig.kernel.steps_pointers()
        || sig.kernel.is_cpp()
        || sig.kernel.has_host_effects()
        || sig.args.iter().any(|a| a.dtype.is_complex())
    {
        return false;
    }
    let lane_bytes: usize = sig
        .args
        .iter()
        .filter(|a| matches!(a.kind, ArgKind::Indirect { .. }))
        .map(|a| SIMD_BATCH * a.dim * a.dtype.size())
        .sum();
    let only_incs_through_maps = |i: usize| {
        sig.data.iter().zip(&sig.args).all(|(&d, b)| {
            d != sig.data[i]
                || (matches!(b.kind, ArgKind::Indirect { .. }) && b.access == Access::Inc)
        })
    };
    lane_bytes <= MAX_LANE_BYTES
        && sig.args.iter().enumerate().all(|(i, a)| match a.kind {
            ArgKind::Row { .. } => false,
            ArgKind::Global => !a.access.is_reduction(),
            ArgKind::Indirect { .. } => match a.access {
                Access::Read => true,
                Access::Inc => only_incs_through_maps(i),
                _ => false,
            },
            ArgKind::Direct => {
                !a.access.writes()
                    || sig
                        .data
                        .iter()
                        .enumerate()
                        .all(|(j, &d)| j == i || d != sig.data[i])
            }
        })
}

/// The kernel rewritten for component-major lanes (see [`crate::lanes`]), and which of its args
/// the rewrite strides.
pub(crate) struct Lanes {
    /// The rewritten kernel, from its name on.
    pub(crate) source: String,
    /// Per arg: whether it indexes its row with stride [`SIMD_BATCH`] in `source`.
    pub(crate) strided: Vec<bool>,
}

/// The kernel rewritten for component-major lanes (see [`crate::lanes`]) when the loop runs in
/// SIMD batches and the rewrite applies: every arg gathered through a map (read, or incremented
/// into a lane array) indexes its row with stride [`SIMD_BATCH`], and so does every direct arg
/// gathered as rows ([`direct_rows`]) where the kernel lets it. A direct row the
/// kernel uses in a way the rewrite does not cover (handed on, `&q[i]`) stays in place, so that
/// it does not cost the indirect args their lanes.
pub(crate) fn lanes_kernel(sig: &LoopSignature) -> Option<Lanes> {
    if !simd_batched(sig) {
        return None;
    }
    let indirect: Vec<bool> = sig
        .args
        .iter()
        .map(|a| matches!(a.kind, ArgKind::Indirect { .. }))
        .collect();
    let with_rows: Vec<bool> = sig
        .args
        .iter()
        .zip(&indirect)
        .map(|(a, &i)| i || direct_rows(a))
        .collect();
    let mut tries = vec![with_rows];
    if tries[0] != indirect {
        tries.push(indirect);
    }
    tries
        .into_iter()
        .filter(|strided| strided.contains(&true))
        .find_map(|strided| {
            let source = crate::lanes::strided_kernel(
                sig.kernel.source(),
                sig.kernel.name(),
                &lanes_symbol(sig.kernel.name()),
                &strided,
                SIMD_BATCH,
            )?;
            Some(Lanes { source, strided })
        })
}

/// The C symbol of the lane-strided copy of a kernel ([`lanes_kernel`]).
pub(crate) fn lanes_symbol(name: &str) -> String {
    format!("op2_lanes_{name}")
}

/// How a host unit inlines the kernel.
pub(crate) const HOST_INLINE: &str = "inline __attribute__((always_inline))";

/// Whether an arg's lanes move as whole rows: gathered through a map (read or incremented) with 2
/// or 4 components. Other dims would need a row vector longer than the row (3 values read as 4
/// could run past the Dat's end) or shuffles this file does not spell.
pub(crate) fn transposable(a: &ArgSig) -> bool {
    matches!(a.kind, ArgKind::Indirect { .. })
        && matches!(a.access, Access::Read | Access::Inc)
        && matches!(a.dim, 2 | 4)
}

/// Whether a direct arg's lanes are gathered as rows too: read, with 2 or 4 components. Its
/// values for 8 consecutive elements are contiguous, but the kernel reads them a component at a
/// time across lanes (a strided load); gathered into component-major lanes, each is one vector.
pub(crate) fn direct_rows(a: &ArgSig) -> bool {
    matches!(a.kind, ArgKind::Direct) && a.access == Access::Read && matches!(a.dim, 2 | 4)
}

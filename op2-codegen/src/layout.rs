//! The block layout of a planned device loop: which args share which staging area of local
//! (shared) memory, and how each area is filled and emptied. A program's key beside its
//! signature (it depends on which args name the same Dat); the dialects and the stubs read it.

use op2_core::{Access, ArgKind, DType, LoopSignature};

/// How one staging area (a unique Dat and map pair) is filled and emptied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StagingMode {
    /// Only read: staged in, never written back.
    Read,
    /// Only incremented: starts at zero, added back to global memory.
    Increment,
    /// Read and written (RW, WRITE, or mixed modes): staged in, stored back.
    ReadWrite,
    /// Not staged: the data is modified and reached by another path too (a second map, or
    /// directly), so every arg on it must see the others' writes as pointers into one array
    /// would. Its items are addressed in global memory through the plan's local-to-global
    /// table, and the kernel runs colour by colour.
    Global,
}

impl StagingMode {
    /// The mode of an area whose args have these access modes.
    pub fn of(accesses: impl IntoIterator<Item = Access>) -> Self {
        let (mut read, mut inc, mut other) = (false, false, false);
        for a in accesses {
            match a {
                Access::Read => read = true,
                Access::Inc => inc = true,
                _ => other = true,
            }
        }
        match (read, inc, other) {
            (_, false, false) => StagingMode::Read,
            (false, true, false) => StagingMode::Increment,
            _ => StagingMode::ReadWrite,
        }
    }
}

/// One staging area of a plan, as the generated code needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StagingLayout {
    /// Element type of the staged data.
    pub dtype: DType,
    /// Values per staged item.
    pub dim: usize,
    /// The map entries staged, in the plan's slot order.
    pub entries: Vec<usize>,
    /// Whether block-local indices are 32-bit (else 16-bit).
    pub wide_indices: bool,
    /// How the area is filled and emptied.
    pub mode: StagingMode,
    /// An arg on this data, whose buffer the stub stages from and to.
    pub source_arg: usize,
}

/// The block structure of a planned loop: which args share which staging area. This depends on
/// which args name the same Dat, so it is part of a program's key beside the signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockLayout {
    /// The staging areas, in the plan's order.
    pub stagings: Vec<StagingLayout>,
    /// For each arg: its staging area, if it is indirect.
    pub arg_staging: Vec<Option<usize>>,
}

impl BlockLayout {
    /// The layout a plan of this loop has: one staging area per (data, map) pair reached through
    /// a map, in the order of the args that first reach it (as the planner groups them, from
    /// [`LoopSignature::data`] and the map slots), staging the union of the map entries its args
    /// reach. `wide_indices` when a block may stage more than 65,536 items, so block-local
    /// indices need 32 bits: blocks of at most `block_bound` elements.
    pub fn of_signature(sig: &LoopSignature, block_bound: usize) -> Self {
        let mut keys: Vec<(usize, usize)> = Vec::new();
        let mut entries: Vec<Vec<usize>> = Vec::new();
        let arg_staging: Vec<Option<usize>> = sig
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let (map, reached): (usize, Vec<usize>) = match a.kind {
                    ArgKind::Indirect { map, index, .. } => (map, vec![index]),
                    ArgKind::Row { map, arity } => (map, (0..arity).collect()),
                    ArgKind::Direct | ArgKind::Global => return None,
                };
                let key = (sig.data.get(i).copied().unwrap_or(i), map);
                let k = keys.iter().position(|&x| x == key).unwrap_or_else(|| {
                    keys.push(key);
                    entries.push(Vec::new());
                    keys.len() - 1
                });
                entries[k].extend(reached);
                Some(k)
            })
            .collect();
        let areas = entries.into_iter().map(|mut e| {
            e.sort_unstable();
            e.dedup();
            let wide = block_bound.saturating_mul(e.len()) > 1 << 16;
            (e, wide)
        });
        let areas: Vec<(usize, Vec<usize>, bool)> = areas
            .enumerate()
            .map(|(k, (e, wide))| {
                let first = arg_staging
                    .iter()
                    .position(|s| *s == Some(k))
                    .expect("every area has an arg");
                (sig.args[first].dim, e, wide)
            })
            .collect();
        Self::of_plan(sig, &arg_staging, areas)
    }

    /// The layout of a plan: `arg_staging` assigns args to staging areas as the plan does, and
    /// `areas` gives each area's dim, staged map entries and whether its block-local indices need
    /// 32 bits. Each area's mode follows the access modes of the args that share it, except that
    /// data some arg modifies and that is reached by more than one path (two maps, or a map and
    /// directly) stays in global memory ([`StagingMode::Global`]): separate copies of it could
    /// not see each other's writes, and adding two copies back at once would race.
    pub fn of_plan(
        sig: &LoopSignature,
        arg_staging: &[Option<usize>],
        areas: impl IntoIterator<Item = (usize, Vec<usize>, bool)>,
    ) -> Self {
        let class = |i: usize| sig.data.get(i).copied().unwrap_or(i);
        let areas: Vec<(usize, Vec<usize>, bool)> = areas.into_iter().collect();
        let sources: Vec<usize> = (0..areas.len())
            .map(|k| {
                (0..sig.args.len())
                    .find(|&i| arg_staging.get(i).copied().flatten() == Some(k))
                    .expect("every staging area has an arg")
            })
            .collect();
        let unstaged = |c: usize| {
            let maps = sources.iter().filter(|&&src| class(src) == c).count();
            let direct =
                (0..sig.args.len()).any(|i| class(i) == c && sig.args[i].kind == ArgKind::Direct);
            let modified =
                (0..sig.args.len()).any(|i| class(i) == c && sig.args[i].access.writes());
            modified && maps + usize::from(direct) > 1
        };
        let stagings = areas
            .into_iter()
            .enumerate()
            .map(|(k, (dim, entries, wide_indices))| {
                let args: Vec<usize> = (0..sig.args.len())
                    .filter(|&i| arg_staging[i] == Some(k))
                    .collect();
                let mode = if unstaged(class(args[0])) {
                    StagingMode::Global
                } else {
                    StagingMode::of(args.iter().map(|&i| sig.args[i].access))
                };
                StagingLayout {
                    dtype: sig.args[args[0]].dtype,
                    dim,
                    entries,
                    wide_indices,
                    mode,
                    source_arg: args[0],
                }
            })
            .collect();
        BlockLayout {
            stagings,
            arg_staging: arg_staging.to_vec(),
        }
    }

    /// Whether the kernel itself must run colour by colour inside a block: some arg modifies staged
    /// data that is also read or written otherwise (RW, WRITE), so two elements of a block that
    /// touch one item must not run at the same time. Pure increments are instead accumulated in
    /// registers and only their addition is coloured (the OP2 scheme).
    pub fn kernel_by_colour(&self, sig: &LoopSignature) -> bool {
        sig.args.iter().zip(&self.arg_staging).any(|(a, s)| {
            s.is_some_and(|s| {
                a.access.writes()
                    && matches!(
                        self.stagings[s].mode,
                        StagingMode::ReadWrite | StagingMode::Global
                    )
            })
        })
    }

    /// Whether indirect arg `i` reaches its data in global memory ([`StagingMode::Global`]).
    pub fn in_global_memory(&self, i: usize) -> bool {
        self.arg_staging
            .get(i)
            .copied()
            .flatten()
            .is_some_and(|s| self.stagings[s].mode == StagingMode::Global)
    }

    /// Whether indirect arg `i` increments a private copy (applied colour by colour afterwards).
    pub(crate) fn private_increment(&self, sig: &LoopSignature, i: usize) -> bool {
        match self.arg_staging[i] {
            Some(s) => {
                self.stagings[s].mode == StagingMode::Increment && !self.kernel_by_colour(sig)
            }
            None => false,
        }
    }
}

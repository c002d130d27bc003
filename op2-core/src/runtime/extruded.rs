//! A loop over an extruded set lowered to an ordinary loop: over the base set with a column walk
//! written here, or over the extruded set with map rows at every layer.

use crate::model::access::Access;
use crate::model::arg::{Arg, ArgTarget, Via};
use crate::model::carrier::{Carrier, CarrierKind, Dat};
use crate::model::dtype::HostBuffer;
use crate::model::error::{Op2Error, Result};
use crate::model::kernel::Kernel;
use crate::model::map::Map;
use crate::model::set::{Layers, Set};
use crate::runtime::Runtime;
use crate::runtime::extrusion::{
    BASE_AT_LAYERS, BOTTOM_ROWS, COLUMN_STARTS, COLUMNS_OF, FACET_ROWS, ROWS_AT_EVERY_LAYER, Region,
};
use crate::runtime::sync::{lock, next_id};
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

impl Runtime {
    /// Declares the extruded set over `base` with `layers` node layers per column, named
    /// `name` (PyOP2's `ExtrudedSet(base, layers)`): its elements are the `layers - 1` cells of
    /// each column, numbered column by column (cell `k` of column `b` is element
    /// `column_start(b) + k`). `layers` is one count for every column or one per element of
    /// the base set (halos included), as later PyOP2 allows. Its sections and halo follow the
    /// base set's column by column, so across ranks columns are never split.
    pub fn decl_extruded_set(
        &self,
        base: &Set,
        layers: impl Into<Layers>,
        name: &str,
    ) -> Result<Set> {
        self.decl_columns(base, layers.into(), true, name)
    }

    /// Declares the nodes of the columns over `base`: `layers` elements per column (the node
    /// layers of [`Runtime::decl_extruded_set`]'s cells), for Dats on vertices, vertical edges or
    /// anything else with one entry per node layer.
    pub fn decl_extruded_nodes(
        &self,
        base: &Set,
        layers: impl Into<Layers>,
        name: &str,
    ) -> Result<Set> {
        self.decl_columns(base, layers.into(), false, name)
    }

    fn decl_columns(&self, base: &Set, layers: Layers, cells: bool, name: &str) -> Result<Set> {
        crate::model::names::check_user_name("set", name)?;
        self.own("set", base.name(), base.runtime_id())?;
        let per_column = matches!(layers, Layers::PerColumn(_));
        let set = Set::extruded(next_id(), self.shared.id, name, base, layers, cells)?;
        if per_column {
            self.check_column_heights(&set)?;
        }
        self.note_set(&set)?;
        // Checkpoints across ranks save rows by global number: columns of one height take
        // theirs from the base's (element k of global column g is g * n + k). Columns of
        // different heights need the program's own (`number_globally`).
        let uniform = set.extrusion().and_then(|e| e.uniform_len());
        if let (Some(n), Some(gids)) = (uniform, self.shared.checkpoints().checkpoint_gids(base)) {
            let n = n as u64;
            let ids = gids
                .iter()
                .flat_map(|&g| (0..n).map(move |k| g * n + k))
                .collect();
            self.shared.checkpoints().checkpoint_number(&set, ids)?;
        }
        Ok(set)
    }

    /// Across ranks, checks that every halo column is as tall as its owner says: the halo
    /// lists grow column by column, so heights that differ would pair the wrong rows. Each rank
    /// sends the heights of the columns it sends and compares those it receives (a rank whose
    /// halo disagrees reports it). Earlier pending work runs first, so that this exchange
    /// keeps its place in every pair of ranks' message order.
    fn check_column_heights(&self, set: &Set) -> Result<()> {
        let ex = set.extrusion().expect("extruded");
        let Some(halo) = ex.base().halo() else {
            return Ok(());
        };
        self.flush()?;
        let sends = halo
            .neighbours
            .iter()
            .map(|n| {
                let bytes = n
                    .send
                    .iter()
                    .flat_map(|&b| (ex.column_len(b as usize) as u32).to_le_bytes())
                    .collect();
                (n.rank, bytes)
            })
            .collect();
        let receives = halo
            .neighbours
            .iter()
            .map(|n| (n.rank, 4 * n.receive.len()))
            .collect();
        let got = self.shared.comm.begin_exchange(sends, receives)?.wait()?;
        for (n, bytes) in halo.neighbours.iter().zip(got) {
            for (&b, h) in n.receive.iter().zip(bytes.chunks_exact(4)) {
                let theirs = u32::from_le_bytes(h.try_into().expect("4 bytes")) as usize;
                let mine = ex.column_len(b as usize);
                if theirs != mine {
                    return Err(Op2Error::BadExtrusion {
                        set: set.name().into(),
                        base: ex.base().name().into(),
                        reason: format!(
                            "halo column {b} holds {mine} elements here but {theirs} on rank {}, \
                             which owns it: every rank must give a column the same layers",
                            n.rank
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Declares a map from the extruded set `from` to `to`: `values` holds the bottom cell's row
    /// of each column (one row of `arity` per element of the base set a loop runs: owned and
    /// exec halo), and in layer `k` entry `j` reaches `values[b * arity + j] + k * offsets[j]`
    /// (PyOP2's `Map(..., offset=)`). Every layer's value is checked against `to`.
    pub fn decl_extruded_map(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: impl Into<Vec<i32>>,
        offsets: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Map> {
        self.own("set", from.name(), from.runtime_id())?;
        self.own("set", to.name(), to.runtime_id())?;
        self.whole_set(to, "maps")?;
        let map = Map::extruded(
            next_id(),
            from,
            to,
            arity,
            values.into(),
            offsets.into(),
            name,
        )?;
        lock(&self.shared.declared).map(&map.0);
        self.shared.checkpoints().checkpoint_declare(
            "map",
            name,
            crate::runtime::checkpoint::DeclaredAs::Map(&map),
        )?;
        Ok(map)
    }

    /// A loop over `region` of the extruded set `set`, as an ordinary loop: over the base set
    /// with a column-walking kernel, or over the extruded set (or its bottom or top subset)
    /// with every map at every layer.
    pub(crate) fn lower_extruded(
        &self,
        kernel: &Kernel,
        set: &Set,
        region: Region,
        args: Vec<Arg>,
    ) -> Result<(Option<Kernel>, Set, Vec<Arg>)> {
        let set = set.clone();
        let ex = set.extrusion().expect("extruded");
        let base = ex.base().clone();
        self.check_user_view(kernel, &set, &base, &args)?;
        if self.walks_columns(&set, &base, &args) {
            let (k, set, args) = self.column_loop(kernel, &set, region, args)?;
            Ok((Some(k), set, args))
        } else {
            let (set, args) = self.layered_loop(&set, region, args)?;
            Ok((None, set, args))
        }
    }

    /// Checks the args as the user's kernel sees them: maps from the extruded set (or its
    /// base, whose rows stay the same in every layer), Dats direct on either.
    pub(crate) fn check_user_view(
        &self,
        kernel: &Kernel,
        set: &Set,
        base: &Set,
        args: &[Arg],
    ) -> Result<()> {
        let mut sigs = Vec::with_capacity(args.len());
        let mut carriers = Vec::with_capacity(args.len());
        let (mut maps, mut base_maps) = (Vec::new(), Vec::new());
        for (i, a) in args.iter().enumerate() {
            let on_base = match &a.target {
                ArgTarget::Dat {
                    via: Via::Entry(m, _) | Via::Row(m),
                    ..
                } => m.from() == base,
                ArgTarget::Dat {
                    carrier,
                    via: Via::Direct,
                } => matches!(carrier.kind(), CarrierKind::Dat(s) if s == base),
                _ => false,
            };
            let (sig, carrier) = if on_base {
                crate::runtime::validate::check_arg(
                    self.shared.id,
                    kernel,
                    base,
                    i,
                    a,
                    &mut base_maps,
                )?
            } else {
                crate::runtime::validate::check_arg(self.shared.id, kernel, set, i, a, &mut maps)?
            };
            carrier.check_not_released(&format!("loop `{}`", kernel.name()))?;
            sigs.push(sig);
            carriers.push(carrier);
        }
        crate::runtime::validate::check_kernel_params(kernel, &sigs, &carriers)
    }

    /// Whether a loop over `set` with `args` can walk columns: the backend can, every map is
    /// an extruded map from `set` or a map from its base, and each Dat written through a map is
    /// written through one extruded map only (not also directly or read through another), one
    /// whose bottom rows colour the columns safely ([`Map::columns_exact`]).
    fn walks_columns(&self, set: &Set, base: &Set, args: &[Arg]) -> bool {
        if !self.shared.caps.walks_columns || set.total_size() == 0 {
            return false;
        }
        // Bottom rows into an empty set cannot be declared (only empty columns point there).
        if args.iter().any(|a| {
            matches!(&a.target, ArgTarget::Dat { via: Via::Entry(m, _) | Via::Row(m), .. }
                if m.to().total_size() == 0)
        }) {
            return false;
        }
        // Per Dat written: through which map (0: directly) and which entries.
        let mut written: HashMap<u64, (u64, Option<Map>, Vec<usize>)> = HashMap::new();
        for a in args {
            let ArgTarget::Dat { carrier, via } = &a.target else {
                continue;
            };
            let (map, entries): (Option<&Map>, Vec<usize>) = match via {
                Via::Entry(m, j) => (Some(m), vec![*j as usize]),
                Via::Row(m) => (Some(m), (0..m.arity()).collect()),
                Via::Direct => (None, Vec::new()),
            };
            if let Some(m) = map
                && m.from() != base
                && !(m.from() == set && m.offsets().is_some())
            {
                return false;
            }
            if a.access.writes() {
                let through = map.map_or(0, Map::id);
                let entry = written
                    .entry(carrier.id)
                    .or_insert_with(|| (through, map.cloned(), Vec::new()));
                if entry.0 != through {
                    return false;
                }
                entry.2.extend(entries);
            }
        }
        for (_, map, entries) in written.values_mut() {
            entries.sort_unstable();
            entries.dedup();
            // A map from the base reaches the same rows in every layer: its own rows colour.
            if let Some(m) = map
                && m.from() == set
                && !m.columns_exact(entries)
            {
                return false;
            }
        }
        // A Dat also read through another map while written through one: leave the order of
        // layers and columns exactly as a loop over every cell would have it.
        args.iter().all(|a| match &a.target {
            ArgTarget::Dat {
                carrier,
                via: Via::Entry(m, _) | Via::Row(m),
            } => written
                .get(&carrier.id)
                .is_none_or(|(through, ..)| *through == m.id()),
            _ => true,
        })
    }

    /// The loop over the base set whose kernel walks each column.
    fn column_loop(
        &self,
        kernel: &Kernel,
        set: &Set,
        region: Region,
        args: Vec<Arg>,
    ) -> Result<(Kernel, Set, Vec<Arg>)> {
        let ex = set.extrusion().expect("extruded");
        let base = ex.base().clone();
        let mut params = Vec::new();
        let mut call = Vec::new();
        let mut setup = String::new();
        let mut lowered = Vec::with_capacity(args.len() + 1);
        // Whether some arg is reached by stepping its pointer from layer to layer.
        let mut steps = false;
        // Whether some arg increments through an extruded map (so layers touch shared values).
        let increments = args.iter().any(|a| {
            a.access == Access::Inc
                && matches!(&a.target, ArgTarget::Dat { via: Via::Entry(m, _) | Via::Row(m), .. }
                    if m.from() == set)
        });
        for (i, mut a) in args.into_iter().enumerate() {
            let p = format!("op2_a{i}");
            match &mut a.target {
                ArgTarget::Dat { carrier, via } => {
                    let (ctype, dim) = (carrier.dtype().c_name(), carrier.dim);
                    let on_set = matches!(carrier.kind(), CarrierKind::Dat(s) if s == set);
                    match via.clone() {
                        Via::Direct if on_set => {
                            steps = true;
                            *via = Via::Entry(self.column_starts(set)?, 0);
                            params.push(format!("{ctype} *{p}"));
                            call.push(format!("OP2_PASS({p} + (long long)op2_k * {dim})"));
                        }
                        Via::Direct => {
                            params.push(format!("{ctype} *{p}"));
                            call.push(format!("OP2_PASS({p})"));
                        }
                        Via::Entry(m, j) if m.from() == set => {
                            steps = true;
                            let step =
                                m.offsets().expect("extruded")[j as usize] as i64 * dim as i64;
                            *via = Via::Entry(self.bottom_rows(&m)?, j);
                            params.push(format!("{ctype} *{p}"));
                            call.push(format!("OP2_PASS({p} + (long long)op2_k * {step})"));
                        }
                        Via::Row(m) if m.from() == set => {
                            steps = true;
                            let offsets = m.offsets().expect("extruded");
                            *via = Via::Row(self.bottom_rows(&m)?);
                            params.push(format!("{ctype} **{p}"));
                            let _ = writeln!(setup, "    {ctype} *{p}_k[{}];", m.arity());
                            for (j, o) in offsets.iter().enumerate() {
                                let _ = writeln!(
                                    setup,
                                    "    {p}_k[{j}] = {p}[{j}] + (long long)op2_k * {};",
                                    *o as i64 * dim as i64
                                );
                            }
                            call.push(format!("OP2_PASS({p}_k)"));
                        }
                        Via::Row(_) => {
                            params.push(format!("{ctype} **{p}"));
                            call.push(format!("OP2_PASS({p})"));
                        }
                        Via::Entry(..) => {
                            params.push(format!("{ctype} *{p}"));
                            call.push(format!("OP2_PASS({p})"));
                        }
                    }
                }
                ArgTarget::Global(c) | ArgTarget::Const(c) => {
                    params.push(format!("{} *{p}", c.dtype().c_name()));
                    call.push(format!("OP2_PASS({p})"));
                }
            }
            lowered.push(a);
        }
        let count = match ex.uniform_len() {
            Some(n) => n.to_string(),
            None => {
                let lengths = self.column_lengths(set)?;
                lowered.push(Dat::<i32>::from_carrier(lengths).arg(Access::Read));
                params.push("const int *op2_len".into());
                "op2_len[0]".into()
            }
        };
        let (from, to) = match region {
            Region::Bottom => ("0", "(op2_n > 0 ? 1 : 0)"),
            Region::Top => ("(op2_n > 0 ? op2_n - 1 : 0)", "op2_n"),
            Region::All | Region::InteriorFacets => ("0", "op2_n"),
        };
        let name = format!("op2_col_{}", kernel.name());
        let mut src = String::from(crate::runtime::per_entry::PASS_MACRO);
        // Host backends only: GNU C's attribute makes sure.
        src.push_str(&crate::runtime::per_entry::inlined_source(
            kernel,
            "__attribute__((always_inline)) ",
        ));
        let _ = writeln!(src, "\nvoid {name}({}) {{", params.join(", "));
        let _ = writeln!(src, "  const int op2_n = {count};");
        if increments && region == Region::All {
            // Adjacent layers share nodes, so increments from one layer wait on the last
            // layer's stores to the same values. Even layers first, then odd ones: each call's
            // stores are then independent of the one before, and the layers still run in
            // order within each pass (sums may round differently from strict layer order).
            let _ = writeln!(
                src,
                "  for (int op2_p = 0; op2_p < 2; ++op2_p)\n  for (int op2_k = {from} + op2_p; op2_k < {to}; op2_k += 2) {{"
            );
        } else {
            let _ = writeln!(src, "  for (int op2_k = {from}; op2_k < {to}; ++op2_k) {{");
        }
        src.push_str(&setup);
        let _ = writeln!(src, "    {}({});", kernel.name(), call.join(", "));
        src.push_str("  }\n}\n");
        src.push_str(&crate::runtime::per_entry::end_part(kernel));
        let k = self.shared.written.get(src, Some(kernel), |src| {
            if steps {
                Kernel::column_walk(&name, src)
            } else {
                Kernel::internal(&name, src)
            }
        });
        Ok((k, base, lowered))
    }

    /// The loop over the extruded set (or its bottom or top subset) with every map at every
    /// layer.
    pub(crate) fn layered_loop(
        &self,
        set: &Set,
        region: Region,
        args: Vec<Arg>,
    ) -> Result<(Set, Vec<Arg>)> {
        let base = set.extrusion().expect("extruded").base().clone();
        let mut lowered = Vec::with_capacity(args.len());
        for mut a in args {
            if let ArgTarget::Dat { carrier, via } = &mut a.target {
                let on_base = matches!(carrier.kind(), CarrierKind::Dat(s) if s == &base);
                *via = match via.clone() {
                    Via::Direct if on_base => Via::Entry(self.columns_of(set)?, 0),
                    Via::Entry(m, j) if m.from() == set => Via::Entry(self.every_layer(&m)?, j),
                    Via::Row(m) if m.from() == set => Via::Row(self.every_layer(&m)?),
                    Via::Entry(m, j) if m.from() == &base => {
                        Via::Entry(self.base_at_layers(set, &m)?, j)
                    }
                    Via::Row(m) if m.from() == &base => Via::Row(self.base_at_layers(set, &m)?),
                    other => other,
                };
            }
            lowered.push(a);
        }
        let kernel_set = match region {
            Region::Bottom | Region::Top => self.end_subset(set, region)?,
            Region::All | Region::InteriorFacets => set.clone(),
        };
        Ok((kernel_set, lowered))
    }

    /// A derived map, made once.
    pub(crate) fn derived(
        &self,
        key: (u8, u64, u64),
        make: impl FnOnce() -> Result<Map>,
    ) -> Result<Map> {
        if let Some(m) = lock(&self.shared.state).extruded.maps.get(&key) {
            return Ok(m.clone());
        }
        let m = make()?;
        lock(&self.shared.state)
            .extruded
            .maps
            .insert(key, m.clone());
        Ok(m)
    }

    /// `map`'s bottom rows as a map from the base set.
    fn bottom_rows(&self, map: &Map) -> Result<Map> {
        self.derived((BOTTOM_ROWS, map.id(), 0), || {
            let ex = map.from().extrusion().expect("extruded");
            let a = map.arity();
            // A column with no elements is never walked, and its row was never checked.
            let values = map
                .values()
                .chunks(a)
                .enumerate()
                .flat_map(|(b, row)| {
                    let walked = ex.column_len(b) > 0;
                    row.iter().map(move |&v| if walked { v } else { 0 })
                })
                .collect();
            Map::new(
                next_id(),
                ex.base(),
                map.to(),
                a,
                values,
                &format!("{}@bottom", map.name()),
            )
        })
    }

    /// `map`'s rows at every layer, as a map from its extruded set.
    fn every_layer(&self, map: &Map) -> Result<Map> {
        self.derived((ROWS_AT_EVERY_LAYER, map.id(), 0), || {
            Map::new_with(
                next_id(),
                map.from(),
                map.to(),
                map.arity(),
                map.layered_values().into_owned(),
                &format!("{}@layers", map.name()),
                map.has_gaps(),
            )
        })
    }

    /// The map from the base set to each column's first element of `set`.
    fn column_starts(&self, set: &Set) -> Result<Map> {
        self.derived((COLUMN_STARTS, set.id(), 0), || {
            let ex = set.extrusion().expect("extruded");
            let last = set.total_size().saturating_sub(1);
            let values = (0..ex.base().exec_size())
                .map(|b| ex.column_start(b).min(last) as i32)
                .collect();
            Map::new(
                next_id(),
                ex.base(),
                set,
                1,
                values,
                &format!("{}@columns", set.name()),
            )
        })
    }

    /// The map from each element of `set` to its column (its base element).
    fn columns_of(&self, set: &Set) -> Result<Map> {
        self.derived((COLUMNS_OF, set.id(), 0), || {
            let ex = set.extrusion().expect("extruded");
            let values = (0..ex.base().exec_size())
                .flat_map(|b| std::iter::repeat_n(b as i32, ex.column_len(b)))
                .collect();
            Map::new(
                next_id(),
                set,
                ex.base(),
                1,
                values,
                &format!("{}@base", set.name()),
            )
        })
    }

    /// `map` (from the base of `set`) at every element of `set`: each column's row repeated.
    fn base_at_layers(&self, set: &Set, map: &Map) -> Result<Map> {
        let key = (BASE_AT_LAYERS, map.id(), set.id());
        self.derived(key, || {
            let ex = set.extrusion().expect("extruded");
            let a = map.arity();
            let rows = map.values();
            let values = (0..ex.base().exec_size())
                .flat_map(|b| {
                    std::iter::repeat_n(&rows[b * a..(b + 1) * a], ex.column_len(b))
                        .flatten()
                        .copied()
                })
                .collect();
            Map::new_with(
                next_id(),
                set,
                map.to(),
                a,
                values,
                &format!("{}@{}", map.name(), set.name()),
                map.has_gaps(),
            )
        })
    }

    /// The subset of `set` made of each column's bottom or top element.
    fn end_subset(&self, set: &Set, region: Region) -> Result<Set> {
        if let Some(s) = lock(&self.shared.state)
            .extruded
            .ends
            .get(&(set.id(), region))
        {
            return Ok(s.clone());
        }
        let ex = set.extrusion().expect("extruded");
        let indices: Vec<i32> = (0..ex.base().exec_size())
            .filter(|&b| ex.column_len(b) > 0)
            .map(|b| match region {
                Region::Top => (ex.column_start(b) + ex.column_len(b) - 1) as i32,
                _ => ex.column_start(b) as i32,
            })
            .collect();
        let name = format!("{}@{region:?}", set.name());
        let s = Set::subset_of(next_id(), self.shared.id, &name, set, indices)?;
        lock(&self.shared.state)
            .extruded
            .ends
            .insert((set.id(), region), s.clone());
        Ok(s)
    }

    /// The elements per column of `set`, as a Dat of the runtime's own on the base set.
    fn column_lengths(&self, set: &Set) -> Result<Arc<Carrier>> {
        if let Some(c) = lock(&self.shared.state).extruded.lengths.get(&set.id()) {
            return Ok(c.clone());
        }
        let ex = set.extrusion().expect("extruded");
        let lengths: Vec<i32> = (0..ex.base().total_size())
            .map(|b| ex.column_len(b) as i32)
            .collect();
        let c = self.carrier(
            CarrierKind::Dat(ex.base().clone()),
            &format!("{}@lengths", set.name()),
            1,
            HostBuffer::from_slice(&lengths),
        );
        lock(&self.shared.state)
            .extruded
            .lengths
            .insert(set.id(), c.clone());
        Ok(c)
    }

    /// Each element's layer in its column of the extruded `set` (0 at the bottom), as a Dat of
    /// the runtime's own on `set`, made once.
    pub(crate) fn layer_dat(&self, set: &Set) -> Result<Arc<Carrier>> {
        if let Some(c) = lock(&self.shared.state).extruded.layers.get(&set.id()) {
            return Ok(c.clone());
        }
        let ex = set.extrusion().expect("extruded");
        // Elements are numbered column by column, each column bottom to top.
        let layers: Vec<i32> = (0..ex.base().total_size())
            .flat_map(|b| 0..ex.column_len(b) as i32)
            .collect();
        debug_assert_eq!(layers.len(), set.total_size());
        let c = self.carrier(
            CarrierKind::Dat(set.clone()),
            &format!("{}@layer", set.name()),
            1,
            HostBuffer::from_slice(&layers),
        );
        lock(&self.shared.state)
            .extruded
            .layers
            .insert(set.id(), c.clone());
        Ok(c)
    }

    /// The set of interior horizontal facets of the extruded cells `set`: one fewer per column.
    pub(crate) fn facet_set(&self, set: &Set) -> Result<Set> {
        if let Some(s) = lock(&self.shared.state).extruded.facets.get(&set.id()) {
            return Ok(s.clone());
        }
        let ex = set.extrusion().expect("extruded");
        if !ex.is_cells() {
            return Err(Op2Error::NotExtruded {
                what: format!("a loop over the interior facets of `{}`", set.name()),
                reason: "interior facets lie between cells; this set holds the columns' nodes"
                    .into(),
            });
        }
        // One fewer node layer than the cells: a column of one cell has no interior facet
        // (per column, since a uniform count must leave at least one cell).
        let layers = match ex.layers() {
            Layers::Uniform(l) if *l >= 3 => Layers::Uniform(*l - 1),
            Layers::Uniform(l) => Layers::PerColumn(vec![(*l - 1).max(1); ex.base().total_size()]),
            Layers::PerColumn(v) => Layers::PerColumn(v.iter().map(|&l| (l - 1).max(1)).collect()),
        };
        let name = format!("{}@facets", set.name());
        let s = Set::extruded(next_id(), self.shared.id, &name, ex.base(), layers, true)?;
        lock(&self.shared.state)
            .extruded
            .facets
            .insert(set.id(), s.clone());
        Ok(s)
    }

    /// The interior facets of `facets` (those of the extruded cells `cells`) whose lower and
    /// upper cells both belong to `subset` (a subset of `cells`): over a subset of columns,
    /// every facet of those columns. Made once per subset.
    pub(crate) fn facet_subset(&self, cells: &Set, facets: &Set, subset: &Set) -> Result<Set> {
        if let Some(s) = lock(&self.shared.state)
            .extruded
            .facet_subsets
            .get(&subset.id())
        {
            return Ok(s.clone());
        }
        let (cx, fx) = (
            cells.extrusion().expect("extruded"),
            facets.extrusion().expect("extruded"),
        );
        let mut chosen = vec![false; cells.total_size()];
        for &c in subset.subset_indices().expect("a subset") {
            chosen[c as usize] = true;
        }
        let mut indices = Vec::new();
        for b in 0..fx.base().exec_size() {
            let (first_cell, first_facet) = (cx.column_start(b), fx.column_start(b));
            // A column of one cell has no facet, though its facet column has one (unwalked)
            // layer: only pairs of cells inside the column count.
            let cells_here = cx.column_len(b);
            for k in 0..fx.column_len(b).min(cells_here.saturating_sub(1)) {
                if chosen[first_cell + k] && chosen[first_cell + k + 1] {
                    indices.push((first_facet + k) as i32);
                }
            }
        }
        let s = Set::subset_of(
            next_id(),
            self.shared.id,
            &format!("{}@facets", subset.name()),
            facets,
            indices,
        )?;
        lock(&self.shared.state)
            .extruded
            .facet_subsets
            .insert(subset.id(), s.clone());
        Ok(s)
    }

    /// An arg of a loop over the interior facets of `cells`, over `facets`: a map from the
    /// cells, with offsets or plain, becomes the facet's map (the lower cell's row, then the
    /// upper cell's).
    pub(crate) fn facet_arg(
        &self,
        kernel: &Kernel,
        cells: &Set,
        facets: &Set,
        mut a: Arg,
    ) -> Result<Arg> {
        if let ArgTarget::Dat { carrier, via } = &mut a.target {
            let on_cells = matches!(carrier.kind(), CarrierKind::Dat(s) if s == cells);
            match via.clone() {
                Via::Direct if on_cells => {
                    return Err(Op2Error::NotExtruded {
                        what: format!(
                            "loop `{}` over the interior facets of `{}`",
                            kernel.name(),
                            cells.name()
                        ),
                        reason: format!(
                            "Dat `{}` lives on the cells: reach it through a map from the cells \
                             (each facet sees the cells below and above it)",
                            carrier.name
                        ),
                    });
                }
                Via::Entry(m, j) if m.from() == cells => {
                    *via = Via::Entry(self.facet_map(cells, facets, &m)?, j);
                }
                Via::Row(m) if m.from() == cells => {
                    *via = Via::Row(self.facet_map(cells, facets, &m)?);
                }
                _ => {}
            }
        }
        Ok(a)
    }

    /// `map` (from the extruded cells `cells`) as a map from their interior facets: twice the
    /// arity, the lower cell's row then the upper cell's. A map with offsets stays one (its
    /// bottom rows doubled, the upper half one layer up); a plain map, with a row for every
    /// cell, gets a row for every facet.
    fn facet_map(&self, cells: &Set, facets: &Set, map: &Map) -> Result<Map> {
        self.derived((FACET_ROWS, map.id(), facets.id()), || {
            let a = map.arity();
            let name = format!("{}@facets", map.name());
            let Some(offsets) = map.offsets() else {
                let (cx, fx) = (
                    cells.extrusion().expect("extruded"),
                    facets.extrusion().expect("extruded"),
                );
                let rows = map.values();
                let values: Vec<i32> = (0..fx.base().exec_size())
                    .flat_map(|b| (0..fx.column_len(b)).map(move |k| cx.column_start(b) + k))
                    .flat_map(|lower| rows[lower * a..(lower + 2) * a].iter().copied())
                    .collect();
                return Map::new_with(
                    next_id(),
                    facets,
                    map.to(),
                    2 * a,
                    values,
                    &name,
                    map.has_gaps(),
                );
            };
            let values: Vec<i32> = map
                .values()
                .chunks(a)
                .flat_map(|row| {
                    // Unchecked values (columns with no facet) may be anything: no overflow panic.
                    let upper: Vec<i32> = row
                        .iter()
                        .zip(offsets)
                        .map(|(v, o)| v.wrapping_add(*o))
                        .collect();
                    row.iter().copied().chain(upper).collect::<Vec<_>>()
                })
                .collect();
            Map::extruded(
                next_id(),
                facets,
                map.to(),
                2 * a,
                values,
                offsets.iter().chain(offsets).copied().collect(),
                &name,
            )
        })
    }
}

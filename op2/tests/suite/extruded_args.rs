//! Every way an arg reaches data in a loop over an extruded set, against a plain loop over every
//! cell written here: direct on the cells or on the base, through an extruded map (one entry,
//! the whole row, per entry), through a map from the base, through a plain map from the cells;
//! each with every access mode, over columns of one height and of different heights (empty ones
//! too), in every region and on subsets. One test per arg form (each covers every mode, layout
//! and region), a property test drawing loops of several args at once, and the program that
//! found the class (a direct INC over extruded cells: SIMD lanes handed to a column walk).
//!
//! Values are small integers in `f64`, so every backend's sums are exact in any order.

use op2::{Access, Arg, INC, Kernel, Layers, Map, READ, RW, Region, Runtime, Set, WRITE};
use op2_test_support::{builder, kernel};
use proptest::prelude::*;
use std::fmt::Write as _;

/// How an arg reaches its data.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    /// Direct on the extruded cells (`dat.arg`).
    DirectCells,
    /// Direct on the base set: the same row in every layer of a column.
    DirectBase,
    /// Entry `j` of the extruded map (offsets per layer).
    ExtrudedEntry(usize),
    /// The extruded map's whole row.
    ExtrudedRow,
    /// The extruded map per entry (a local iteration space).
    ExtrudedEntries,
    /// Entry `j` of a map from the base set.
    BaseEntry(usize),
    /// A map from the base set, whole row.
    BaseRow,
    /// A map from the base set, per entry.
    BaseEntries,
    /// Entry `j` of a plain map from the cells (a row declared for every cell).
    CellEntry(usize),
    /// A plain map from the cells, whole row.
    CellRow,
}

impl Form {
    fn per_entry(self) -> bool {
        matches!(self, Form::ExtrudedEntries | Form::BaseEntries)
    }
    fn is_row(self) -> bool {
        matches!(self, Form::ExtrudedRow | Form::BaseRow | Form::CellRow)
    }
}

/// Where a loop runs.
#[derive(Clone, Debug)]
enum Over {
    Region(Region),
    /// A subset of the cells: each cell in it when the bit of the seed's stream says so.
    Subset(u64),
}

/// One arg of a loop: its form, access and the Dat's dim.
#[derive(Clone, Copy, Debug)]
struct ArgSpec {
    form: Form,
    access: Access,
    dim: usize,
}

/// Arity of the extruded map (offsets 1 each): a column's bottom node, the node above it, and
/// the bottom node of the column to its right where that is as tall.
const EXTRUDED_ARITY: usize = 3;
/// Arity of the map from the base set into a plain set.
const BASE_ARITY: usize = 2;
/// Arity of the plain map from the cells into the nodes.
const CELL_ARITY: usize = 2;

/// The mesh, described independently of op2: node layers per column.
#[derive(Debug, Clone)]
struct Columns {
    layers: Vec<usize>,
    uniform: bool,
}

impl Columns {
    fn nb(&self) -> usize {
        self.layers.len()
    }
    fn cell_start(&self, b: usize) -> usize {
        self.layers[..b].iter().map(|l| l - 1).sum()
    }
    fn node_start(&self, b: usize) -> usize {
        self.layers[..b].iter().sum()
    }
    fn cells(&self) -> usize {
        self.layers.iter().map(|l| l - 1).sum()
    }
    fn nodes(&self) -> usize {
        self.layers.iter().sum()
    }
    /// The column and layer of each cell.
    fn cell_at(&self) -> Vec<(usize, usize)> {
        (0..self.nb())
            .flat_map(|b| (0..self.layers[b] - 1).map(move |k| (b, k)))
            .collect()
    }
    fn right(&self, b: usize) -> usize {
        if b + 1 < self.nb() && self.layers[b + 1] >= self.layers[b] {
            b + 1
        } else {
            b
        }
    }
    /// The extruded map's bottom rows.
    fn bottom(&self) -> Vec<i32> {
        (0..self.nb())
            .flat_map(|b| {
                let n = self.node_start(b) as i32;
                [n, n + 1, self.node_start(self.right(b)) as i32]
            })
            .collect()
    }
    fn plain_size(&self) -> usize {
        self.nb() + 2
    }
    /// The map from the base into the plain set.
    fn base_map(&self) -> Vec<i32> {
        let n = self.plain_size();
        (0..self.nb())
            .flat_map(|b| [b as i32, ((3 * b + 1) % n) as i32])
            .collect()
    }
    /// The plain map from the cells into the nodes: the cell's top-left node and one elsewhere.
    fn cell_map(&self) -> Vec<i32> {
        let nn = self.nodes();
        self.cell_at()
            .iter()
            .enumerate()
            .flat_map(|(c, &(b, k))| {
                [
                    (self.node_start(b) + k + 1) as i32,
                    ((5 * c + 2) % nn) as i32,
                ]
            })
            .collect()
    }
    /// The elements a loop runs, in order: (cell, whether it is the lower cell of a facet).
    fn elements(&self, over: &Over) -> Vec<usize> {
        let cols = 0..self.nb();
        match over {
            Over::Region(Region::All) => (0..self.cells()).collect(),
            Over::Region(Region::Bottom) => cols
                .filter(|&b| self.layers[b] > 1)
                .map(|b| self.cell_start(b))
                .collect(),
            Over::Region(Region::Top) => cols
                .filter(|&b| self.layers[b] > 1)
                .map(|b| self.cell_start(b) + self.layers[b] - 2)
                .collect(),
            Over::Region(Region::InteriorFacets) => cols
                .flat_map(|b| {
                    let s = self.cell_start(b);
                    (0..self.layers[b].saturating_sub(2)).map(move |k| s + k)
                })
                .collect(),
            Over::Subset(seed) => subset(*seed, self.cells()),
        }
    }
}

/// The cells of a subset drawn from `seed` (about half of them, in order).
fn subset(seed: u64, n: usize) -> Vec<usize> {
    let mut x = seed | 1;
    (0..n)
        .filter(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x & 2 != 0
        })
        .collect()
}

/// The maps' values, as [`Columns`] makes them.
struct Rows {
    cell_at: Vec<(usize, usize)>,
    bottom: Vec<i32>,
    base: Vec<i32>,
    cells: Vec<i32>,
}

impl Rows {
    fn new(cols: &Columns) -> Rows {
        Rows {
            cell_at: cols.cell_at(),
            bottom: cols.bottom(),
            base: cols.base_map(),
            cells: cols.cell_map(),
        }
    }

    fn extruded(&self, c: usize) -> Vec<usize> {
        let (b, k) = self.cell_at[c];
        (0..EXTRUDED_ARITY)
            .map(|j| self.bottom[b * EXTRUDED_ARITY + j] as usize + k)
            .collect()
    }

    fn plain(&self, c: usize) -> Vec<usize> {
        (0..CELL_ARITY)
            .map(|j| self.cells[c * CELL_ARITY + j] as usize)
            .collect()
    }

    /// The rows (element indices into the arg's Dat) one arg sees at `cell`, or at the facet
    /// above it.
    fn of(&self, form: Form, cell: usize, facet: bool) -> Vec<usize> {
        let b = self.cell_at[cell].0;
        // Across a facet, maps from the cells give the lower cell's row, then the upper cell's.
        let from_cells = |f: &dyn Fn(usize) -> Vec<usize>| {
            let mut r = f(cell);
            if facet {
                r.extend(f(cell + 1));
            }
            r
        };
        let base_row = || -> Vec<usize> {
            (0..BASE_ARITY)
                .map(|j| self.base[b * BASE_ARITY + j] as usize)
                .collect()
        };
        match form {
            Form::DirectCells => vec![cell],
            Form::DirectBase => vec![b],
            Form::ExtrudedEntry(j) => vec![from_cells(&|c| self.extruded(c))[j]],
            Form::ExtrudedRow | Form::ExtrudedEntries => from_cells(&|c| self.extruded(c)),
            Form::BaseEntry(j) => vec![base_row()[j]],
            Form::BaseRow | Form::BaseEntries => base_row(),
            Form::CellEntry(j) => vec![from_cells(&|c| self.plain(c))[j]],
            Form::CellRow => from_cells(&|c| self.plain(c)),
        }
    }
}

/// Elements of the set each form's Dat lives on.
fn target_size(cols: &Columns, form: Form) -> usize {
    match form {
        Form::DirectCells => cols.cells(),
        Form::DirectBase => cols.nb(),
        Form::ExtrudedEntry(_) | Form::ExtrudedRow | Form::ExtrudedEntries => cols.nodes(),
        Form::BaseEntry(_) | Form::BaseRow | Form::BaseEntries => cols.plain_size(),
        Form::CellEntry(_) | Form::CellRow => cols.nodes(),
    }
}

/// Whether each element writes its own rows only (so a write may depend on what it read).
fn owned(form: Form) -> bool {
    form == Form::DirectCells
}

/// The row length of a form's arg at a loop over `over` (maps from the cells double at facets).
fn arity(form: Form, facets: bool) -> usize {
    let twice = if facets { 2 } else { 1 };
    match form {
        Form::DirectCells | Form::DirectBase => 1,
        Form::ExtrudedEntry(_) | Form::BaseEntry(_) | Form::CellEntry(_) => 1,
        Form::ExtrudedRow | Form::ExtrudedEntries => EXTRUDED_ARITY * twice,
        Form::BaseRow | Form::BaseEntries => BASE_ARITY,
        Form::CellRow => CELL_ARITY * twice,
    }
}

/// The kernel: reads add into `s` (weighted by entry and component), then each written arg
/// changes by its access mode (see [`apply`], which is the same in Rust).
fn kernel_source(args: &[ArgSpec], facets: bool) -> String {
    let mut params = Vec::new();
    let mut body = String::from("  double s = 0.0;\n");
    let per_entry = args.iter().any(|a| a.form.per_entry());
    for (n, a) in args.iter().enumerate() {
        let c = if a.access == READ { "const " } else { "" };
        let r = arity(a.form, facets);
        if a.form.is_row() {
            params.push(format!("{c}double *a{n}[{r}]"));
        } else {
            params.push(format!("{c}double *a{n}"));
        }
        if a.access == READ {
            let _ = writeln!(body, "  for (int c = 0; c < {d}; c++) {{", d = a.dim);
            if a.form.is_row() {
                let _ = writeln!(
                    body,
                    "    for (int j = 0; j < {r}; j++) s += (j + 1) * (c + 1) * a{n}[j][c];"
                );
            } else if a.form.per_entry() {
                let _ = writeln!(body, "    s += (i + 1) * (c + 1) * a{n}[c];");
            } else {
                let _ = writeln!(body, "    s += (c + 1) * a{n}[c];");
            }
            body.push_str("  }\n");
        }
    }
    for (n, a) in args.iter().enumerate() {
        if a.access == READ {
            continue;
        }
        let own = owned(a.form);
        let expr = |x: &str, j: &str| match (a.access, own) {
            (WRITE, true) => format!("{x} = s + 7 + c;"),
            (WRITE, false) => format!("{x} = 7 + c;"),
            (RW, true) => format!("{x} = 3 * {x} + s + c;"),
            (RW, false) => format!("{x} = {x} + 1 + c + {j};"),
            _ => format!("{x} += s + 1 + c + {j};"),
        };
        let _ = writeln!(body, "  for (int c = 0; c < {}; c++) {{", a.dim);
        if a.form.is_row() {
            let r = arity(a.form, facets);
            let _ = writeln!(
                body,
                "    for (int j = 0; j < {r}; j++) {{ {} }}",
                expr(&format!("a{n}[j][c]"), "j")
            );
        } else {
            let _ = writeln!(body, "    {}", expr(&format!("a{n}[c]"), "0"));
        }
        body.push_str("  }\n");
    }
    if per_entry {
        params.push("int i".into());
    }
    format!("void probe({}) {{\n{body}}}\n", params.join(", "))
}

/// What the kernel does to one written value `x` (component `c`, row position `j`). A value
/// other elements also write is written the same by each (whichever writes last), and changed
/// only by additions (whatever their order), so that every backend's result is one answer.
fn apply(access: Access, own: bool, x: f64, s: f64, c: usize, j: usize) -> f64 {
    let (c, j) = (c as f64, j as f64);
    match (access, own) {
        (WRITE, true) => s + 7.0 + c,
        (WRITE, false) => 7.0 + c,
        (RW, true) => 3.0 * x + s + c,
        (RW, false) => x + 1.0 + c + j,
        _ => x + s + 1.0 + c + j,
    }
}

/// Initial values of arg `n`'s Dat: small integers.
fn initial(n: usize, len: usize) -> Vec<f64> {
    (0..len).map(|i| ((i * 37 + n * 11) % 13) as f64).collect()
}

/// The plain loop over every element: each arg's Dat afterwards.
fn expected(cols: &Columns, over: &Over, args: &[ArgSpec]) -> Vec<Vec<f64>> {
    let facets = matches!(over, Over::Region(Region::InteriorFacets));
    let maps = Rows::new(cols);
    let mut data: Vec<Vec<f64>> = args
        .iter()
        .enumerate()
        .map(|(n, a)| initial(n, target_size(cols, a.form) * a.dim))
        .collect();
    for cell in cols.elements(over) {
        let rows: Vec<Vec<usize>> = args.iter().map(|a| maps.of(a.form, cell, facets)).collect();
        // A local iteration space calls the kernel once per entry of its row.
        let calls = args
            .iter()
            .zip(&rows)
            .find(|(a, _)| a.form.per_entry())
            .map_or(1, |(_, r)| r.len());
        for i in 0..calls {
            // The rows each arg hands this call: a per-entry arg its entry `i`.
            let seen: Vec<Vec<usize>> = args
                .iter()
                .zip(&rows)
                .map(|(a, r)| {
                    if a.form.per_entry() {
                        vec![r[i]]
                    } else {
                        r.clone()
                    }
                })
                .collect();
            let mut s = 0.0;
            for (n, a) in args.iter().enumerate() {
                if a.access != READ {
                    continue;
                }
                for c in 0..a.dim {
                    for (j, &e) in seen[n].iter().enumerate() {
                        let w = if a.form.is_row() {
                            j + 1
                        } else if a.form.per_entry() {
                            i + 1
                        } else {
                            1
                        };
                        s += (w * (c + 1)) as f64 * data[n][e * a.dim + c];
                    }
                }
            }
            for (n, a) in args.iter().enumerate() {
                if a.access == READ {
                    continue;
                }
                for c in 0..a.dim {
                    for (j, &e) in seen[n].iter().enumerate() {
                        let x = &mut data[n][e * a.dim + c];
                        *x = apply(a.access, owned(a.form), *x, s, c, j);
                    }
                }
            }
        }
    }
    data
}

/// The mesh declared on a runtime.
struct Declared {
    cells: Set,
    nodes: Set,
    base: Set,
    plain: Set,
    c2n: Map,
    b2p: Map,
    cell2n: Map,
}

fn declare(rt: &Runtime, cols: &Columns) -> Declared {
    let base = rt.decl_set(cols.nb(), "base").unwrap();
    let layers: Layers = if cols.uniform {
        cols.layers[0].into()
    } else {
        cols.layers.clone().into()
    };
    let cells = rt
        .decl_extruded_set(&base, layers.clone(), "cells")
        .unwrap();
    let nodes = rt.decl_extruded_nodes(&base, layers, "nodes").unwrap();
    let plain = rt.decl_set(cols.plain_size(), "plain").unwrap();
    let c2n = rt
        .decl_extruded_map(
            &cells,
            &nodes,
            EXTRUDED_ARITY,
            cols.bottom(),
            [1, 1, 1],
            "c2n",
        )
        .unwrap();
    let b2p = rt
        .decl_map(&base, &plain, BASE_ARITY, cols.base_map(), "b2p")
        .unwrap();
    let cell2n = rt
        .decl_map(&cells, &nodes, CELL_ARITY, cols.cell_map(), "cell2n")
        .unwrap();
    Declared {
        cells,
        nodes,
        base,
        plain,
        c2n,
        b2p,
        cell2n,
    }
}

/// Runs the loop on the suite's backend and compares every Dat with [`expected`].
fn check(cols: &Columns, over: &Over, args: &[ArgSpec]) -> Result<(), String> {
    let rt = builder().build().unwrap();
    let m = declare(&rt, cols);
    let facets = matches!(over, Over::Region(Region::InteriorFacets));
    let dats: Vec<op2::Dat<f64>> = args
        .iter()
        .enumerate()
        .map(|(n, a)| {
            let set = match a.form {
                Form::DirectCells => &m.cells,
                Form::DirectBase => &m.base,
                Form::BaseEntry(_) | Form::BaseRow | Form::BaseEntries => &m.plain,
                _ => &m.nodes,
            };
            let len = target_size(cols, a.form) * a.dim;
            rt.decl_dat(set, a.dim, initial(n, len), &format!("d{n}"))
                .unwrap()
        })
        .collect();
    let op2_args: Vec<Arg> = args
        .iter()
        .zip(&dats)
        .map(|(a, d)| match a.form {
            Form::DirectCells | Form::DirectBase => d.arg(a.access),
            Form::ExtrudedEntry(j) => d.arg_via(&m.c2n, j, a.access),
            Form::ExtrudedRow => d.arg_row(&m.c2n, a.access),
            Form::ExtrudedEntries => d.arg_entries(&m.c2n, a.access),
            Form::BaseEntry(j) => d.arg_via(&m.b2p, j, a.access),
            Form::BaseRow => d.arg_row(&m.b2p, a.access),
            Form::BaseEntries => d.arg_entries(&m.b2p, a.access),
            Form::CellEntry(j) => d.arg_via(&m.cell2n, j, a.access),
            Form::CellRow => d.arg_row(&m.cell2n, a.access),
        })
        .collect();
    let k: Kernel = kernel("probe", &kernel_source(args, facets));
    let what = format!("{args:?} over {over:?}, layers {:?}", cols.layers);
    let ran = match over {
        Over::Region(r) => rt.par_loop_region(&k, &m.cells, *r, op2_args),
        Over::Subset(seed) => {
            let idx: Vec<i32> = subset(*seed, cols.cells())
                .into_iter()
                .map(|c| c as i32)
                .collect();
            let sub = rt.decl_subset(&m.cells, idx, "sub").unwrap();
            rt.par_loop(&k, &sub, op2_args)
        }
    };
    ran.map_err(|e| format!("{what}: refused: {e}"))?;
    let want = expected(cols, over, args);
    for (n, (d, w)) in dats.iter().zip(&want).enumerate() {
        let got = d.to_vec().map_err(|e| format!("{what}: {e}"))?;
        if &got != w {
            let wrong = got.iter().zip(w).filter(|(a, b)| a != b).count();
            return Err(format!(
                "{what}: arg {n} ({:?}): {wrong} of {} values wrong\n got  {got:?}\n want {w:?}",
                args[n],
                w.len()
            ));
        }
    }
    Ok(())
}

/// The layouts every member is checked on: 23 columns (whole SIMD batches and a remainder) of
/// one height, and of heights from 1 (no cells) to 6.
fn layouts() -> Vec<Columns> {
    vec![
        Columns {
            layers: vec![5; 23],
            uniform: true,
        },
        Columns {
            layers: (0..23).map(|b| 1 + (b * 7) % 6).collect(),
            uniform: false,
        },
    ]
}

fn places() -> Vec<Over> {
    vec![
        Over::Region(Region::All),
        Over::Region(Region::Bottom),
        Over::Region(Region::Top),
        Over::Region(Region::InteriorFacets),
        Over::Subset(0x9e37_79b9),
    ]
}

/// Checks `form` with every access mode and dims 1 and 4, alone (a READ with a counter
/// incremented directly on the base, so that what it read shows) and beside a READ of the
/// same form, on every layout and place.
fn check_form(form: Form) {
    let mut failures = Vec::new();
    for cols in layouts() {
        for over in places() {
            let facets = matches!(over, Over::Region(Region::InteriorFacets));
            if facets && form == Form::DirectCells {
                continue; // refused: see `a_dat_on_the_cells_in_a_facet_loop_is_refused`
            }
            for access in [READ, WRITE, RW, INC] {
                for dim in [1, 4] {
                    let arg = ArgSpec { form, access, dim };
                    let sink = ArgSpec {
                        form: Form::DirectBase,
                        access: INC,
                        dim: 1,
                    };
                    let reader = ArgSpec {
                        form,
                        access: READ,
                        dim: 2,
                    };
                    let loops: Vec<Vec<ArgSpec>> = if access == READ {
                        vec![vec![arg, sink]]
                    } else if form.per_entry() {
                        vec![vec![arg]]
                    } else {
                        vec![vec![arg], vec![reader, arg]]
                    };
                    for args in loops {
                        if let Err(e) = check(&cols, &over, &args) {
                            failures.push(e);
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} loops wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn direct_on_the_cells() {
    check_form(Form::DirectCells);
}

#[test]
fn direct_on_the_base() {
    check_form(Form::DirectBase);
}

#[test]
fn one_entry_of_an_extruded_map() {
    check_form(Form::ExtrudedEntry(1));
}

#[test]
fn whole_rows_of_an_extruded_map() {
    check_form(Form::ExtrudedRow);
}

#[test]
fn per_entry_through_an_extruded_map() {
    check_form(Form::ExtrudedEntries);
}

#[test]
fn one_entry_of_a_map_from_the_base() {
    check_form(Form::BaseEntry(1));
}

#[test]
fn whole_rows_of_a_map_from_the_base() {
    check_form(Form::BaseRow);
}

#[test]
fn per_entry_through_a_map_from_the_base() {
    check_form(Form::BaseEntries);
}

#[test]
fn one_entry_of_a_plain_map_from_the_cells() {
    check_form(Form::CellEntry(1));
}

#[test]
fn whole_rows_of_a_plain_map_from_the_cells() {
    check_form(Form::CellRow);
}

/// The program that found the class: a direct INC over 280 extruded cells gave the first cell
/// of a column several increments and the others none (SIMD lanes handed to the column walk,
/// which stepped off their end); with dim 4, or 222 columns, the process crashed.
#[test]
fn a_direct_increment_over_extruded_cells_reaches_every_cell() {
    for (columns, layers, dim) in [(70, 5, 1), (70, 5, 4), (222, 5, 1), (3, 5, 1), (1000, 2, 2)] {
        let rt = builder().build().unwrap();
        let base = rt.decl_set(columns, "b").unwrap();
        let e = rt.decl_extruded_set(&base, layers, "e").unwrap();
        let n = columns * (layers - 1);
        let f = rt.decl_dat(&e, dim, vec![0.5f64; n * dim], "f").unwrap();
        let src = format!("void k(double *a) {{ for (int c = 0; c < {dim}; c++) a[c] += 1.0; }}");
        rt.par_loop(&kernel("k", &src), &e, [f.arg(INC)]).unwrap();
        let got = f.to_vec().unwrap();
        let wrong = got.iter().filter(|&&v| v != 1.5).count();
        assert_eq!(wrong, 0, "{columns} columns, dim {dim}: {got:?}");
    }
}

#[test]
fn a_dat_on_the_cells_in_a_facet_loop_is_refused() {
    let rt = builder().build().unwrap();
    let cols = &layouts()[0];
    let m = declare(&rt, cols);
    let d = rt.decl_dat_zeros::<f64>(&m.cells, 1, "d").unwrap();
    let err = rt
        .par_loop_region(
            &kernel("k", "void k(double *a) { a[0] = 1.0; }"),
            &m.cells,
            Region::InteriorFacets,
            [d.arg(WRITE)],
        )
        .unwrap_err();
    assert!(matches!(err, op2::Op2Error::NotExtruded { .. }), "{err}");
}

fn arg_spec() -> impl Strategy<Value = ArgSpec> {
    let form = prop_oneof![
        Just(Form::DirectCells),
        Just(Form::DirectBase),
        (0..EXTRUDED_ARITY).prop_map(Form::ExtrudedEntry),
        Just(Form::ExtrudedRow),
        Just(Form::ExtrudedEntries),
        (0..BASE_ARITY).prop_map(Form::BaseEntry),
        Just(Form::BaseRow),
        Just(Form::BaseEntries),
        (0..CELL_ARITY).prop_map(Form::CellEntry),
        Just(Form::CellRow),
    ];
    let access = prop_oneof![Just(READ), Just(WRITE), Just(RW), Just(INC)];
    (form, access, 1usize..5).prop_map(|(form, access, dim)| ArgSpec { form, access, dim })
}

fn columns() -> impl Strategy<Value = Columns> {
    prop_oneof![
        (1usize..40, 2usize..7).prop_map(|(nb, l)| Columns {
            layers: vec![l; nb],
            uniform: true
        }),
        prop::collection::vec(1usize..7, 1..40).prop_map(|layers| Columns {
            layers,
            uniform: false
        }),
    ]
}

fn over() -> impl Strategy<Value = Over> {
    prop_oneof![
        Just(Over::Region(Region::All)),
        Just(Over::Region(Region::Bottom)),
        Just(Over::Region(Region::Top)),
        Just(Over::Region(Region::InteriorFacets)),
        any::<u64>().prop_map(Over::Subset),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Loops of one to four args of any forms and modes (at most one per entry; none direct on
    /// the cells at facets), on random columns and places.
    #[test]
    fn loops_of_any_args_over_extruded_sets_equal_a_plain_loop(
        cols in columns(),
        over in over(),
        mut args in prop::collection::vec(arg_spec(), 1..5),
    ) {
        let facets = matches!(over, Over::Region(Region::InteriorFacets));
        let mut seen_entries = false;
        for a in &mut args {
            if facets && a.form == Form::DirectCells {
                a.form = Form::ExtrudedRow;
            }
            if a.form.per_entry() {
                if seen_entries {
                    a.form = Form::BaseRow;
                }
                seen_entries = true;
            }
        }
        let result = check(&cols, &over, &args);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

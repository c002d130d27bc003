//! Maps with gaps (`Runtime::decl_map_with_gaps`, PyOP2's negative map values): matrices leave
//! the "no element" entries out of their patterns and assembly, on every backend, against the
//! dense matrix computed here; loops refuse such maps for data with a typed error.

use op2::la::{self, LoopArg, Mat, Sparsity};
use op2::{INC, Op2Error, READ, RW, Runtime};
use op2_test_support::{builder, kernel};

const ELEMENT: &str = "void blk(double A[2][2], const double *w) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) A[i][j] += *w * (1 + i + 10 * j);
}";

/// The matrix's values as dense rows.
fn dense(sp: &Sparsity, a: &Mat) -> Vec<Vec<f64>> {
    let values = a.values();
    (0..sp.rows())
        .map(|r| {
            let mut row = vec![0.0; sp.cols()];
            for (q, &c) in sp.row(r).iter().enumerate() {
                row[c as usize] = values[sp.row_offsets()[r] + q];
            }
            row
        })
        .collect()
}

/// Adds each element's block at its rows and columns, leaving out gaps (negative values).
fn add_blocks(want: &mut [Vec<f64>], rows: &[i32], cols: &[i32], weights: &[f64]) {
    for (e, &w) in weights.iter().enumerate() {
        for i in 0..2 {
            for j in 0..2 {
                let (r, c) = (rows[2 * e + i], cols[2 * e + j]);
                if r >= 0 && c >= 0 {
                    want[r as usize][c as usize] += w * (1 + i + 10 * j) as f64;
                }
            }
        }
    }
}

fn setup(rt: &Runtime) -> (op2::Set, op2::Set, op2::Map, op2::Map, op2::Dat<f64>) {
    let cells = rt.decl_set(4, "cells").unwrap();
    let nodes = rt.decl_set(5, "nodes").unwrap();
    let plain = rt
        .decl_map(&cells, &nodes, 2, vec![0, 1, 1, 2, 2, 3, 3, 4], "plain")
        .unwrap();
    // Cell 0 has no first node, cell 2 none at all.
    let gappy = rt
        .decl_map_with_gaps(&cells, &nodes, 2, vec![-1, 1, 2, 0, -7, -1, 4, 3], "gappy")
        .unwrap();
    let w = rt
        .decl_dat(&cells, 1, vec![1.0, 2.0, 3.0, 4.0], "w")
        .unwrap();
    (cells, nodes, plain, gappy, w)
}

#[test]
fn matrices_leave_the_gaps_of_a_map_out() {
    let rt = builder().build().unwrap();
    let (cells, _, plain, gappy, w) = setup(&rt);
    assert!(gappy.has_gaps() && !plain.has_gaps());
    // Any negative value is a gap, kept as -1.
    assert_eq!(gappy.values(), &[-1, 1, 2, 0, -1, -1, 4, 3]);
    let sp = Sparsity::new(&[(&gappy, &plain), (&plain, &plain)], (1, 1), "sp").unwrap();
    let a = Mat::new(&sp, "A");
    let k = kernel("blk", ELEMENT);
    // Twice each, in turn: the staging left by a loop with gaps must not reach the next loop
    // over the same set through other maps.
    for _ in 0..2 {
        for (r, c) in [(&gappy, &plain), (&plain, &plain)] {
            la::par_loop(
                &rt,
                &k,
                &cells,
                [LoopArg::Mat(a.arg(INC, r, c)), LoopArg::Op2(w.arg(READ))],
            )
            .unwrap();
        }
    }
    a.assemble();
    let mut want = vec![vec![0.0; 5]; 5];
    let weights = [1.0, 2.0, 3.0, 4.0];
    for _ in 0..2 {
        add_blocks(&mut want, gappy.values(), plain.values(), &weights);
        add_blocks(&mut want, plain.values(), plain.values(), &weights);
    }
    assert_eq!(dense(&sp, &a), want);
    // The pattern holds the pairs' entries (and the diagonal), not the gaps'.
    let only_gaps = Sparsity::new(&[(&gappy, &gappy)], (1, 1), "gaps").unwrap();
    let rows: Vec<Vec<u32>> = (0..5).map(|r| only_gaps.row(r).to_vec()).collect();
    assert_eq!(
        rows,
        vec![vec![0, 2], vec![1], vec![0, 2], vec![3, 4], vec![3, 4]]
    );
}

#[test]
fn loops_refuse_a_map_with_gaps_for_data() {
    let rt = builder().build().unwrap();
    let (cells, nodes, plain, gappy, _) = setup(&rt);
    let x = rt.decl_dat_zeros::<f64>(&nodes, 1, "x").unwrap();
    let inc = kernel("inc", "void inc(double *x) { x[0] += 1.0; }");
    let gaps = |e: Op2Error| assert!(matches!(e, Op2Error::MapWithGaps { .. }), "{e}");
    gaps(
        rt.par_loop(&inc, &cells, [x.arg_via(&gappy, 0, INC)])
            .unwrap_err(),
    );
    let row = kernel("row", "void row(double *x[2]) { x[0][0] += 1.0; }");
    gaps(
        rt.par_loop(&row, &cells, [x.arg_row(&gappy, RW)])
            .unwrap_err(),
    );
    // Over a subset too (the loop's map is made from the subset's rows).
    let some = rt.decl_subset(&cells, vec![1, 3], "some").unwrap();
    gaps(
        rt.par_loop(&inc, &some, [x.arg_via(&gappy, 0, INC)])
            .unwrap_err(),
    );
    // A mixed map with such a component assembles matrices, but reaches no data.
    let ms = rt.decl_mixed_set(&[&nodes, &nodes], "ms").unwrap();
    let mm = rt.decl_mixed_map(&ms, &[&plain, &gappy], "mm").unwrap();
    assert!(mm.flat().has_gaps());
    let u = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "u").unwrap();
    let four = kernel("four", "void four(double *u[4]) { u[0][0] += 1.0; }");
    gaps(
        rt.par_loop(&four, &cells, [u.arg_row(&mm, INC)])
            .unwrap_err(),
    );
    // Nothing ran: the runtime is still usable and x untouched.
    rt.par_loop(&inc, &cells, [x.arg_via(&plain, 0, INC)])
        .unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![1.0, 1.0, 1.0, 1.0, 0.0]);
    // Values past the target set stay errors, gaps or not.
    let e = rt
        .decl_map_with_gaps(&cells, &nodes, 1, vec![0, 5, -1, 1], "past")
        .unwrap_err();
    assert!(matches!(e, Op2Error::MapValueOutOfRange { .. }), "{e}");
}

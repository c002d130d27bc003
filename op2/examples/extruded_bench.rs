//! Extruded against unstructured: the same indirect loops over a triangle mesh extruded into
//! prisms (the base map plus an offset per layer, walked column by column) and over that mesh
//! declared fully unstructured in 3-D (every prism's six nodes in an explicit map), in one run,
//! on one core (`seq`) and on all cores (`openmp`). Alternating repetitions; medians.
//!
//! `cargo run --release -p op2 --features openmp --example extruded-bench [-- --base 100000
//! --layers 64 --repeats 7]` (`cargo xtask bench` runs it).

use op2::{INC, Kernel, READ, Runtime, WRITE};
use std::time::Instant;

/// Each node's share of its prisms' volumes: reads six coordinates, adds into six nodes.
const LUMPED: &str = "void lumped(const double *x[6], double *m[6]) {
  double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
  double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
  double area = 0.5 * (ax * by - ay * bx);
  double h = (x[3][2] - x[0][2] + x[4][2] - x[1][2] + x[5][2] - x[2][2]) / 3.0;
  for (int i = 0; i < 6; i++) m[i][0] += area * h / 6.0;
}";

/// Each prism's volume: reads six coordinates, writes the prism's own value.
const VOLUME: &str = "void volume(const double *x[6], double *v) {
  double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
  double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
  double h = (x[3][2] - x[0][2] + x[4][2] - x[1][2] + x[5][2] - x[2][2]) / 3.0;
  *v = 0.5 * (ax * by - ay * bx) * h;
}";

struct Options {
    base: usize,
    layers: usize,
    repeats: usize,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        base: 100_000,
        layers: 64,
        repeats: 7,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || -> Result<usize, String> {
            args.next()
                .ok_or(format!("{a} needs a value"))?
                .parse()
                .map_err(|e| format!("{a}: {e}"))
        };
        match a.as_str() {
            "--base" => o.base = value()?.max(2),
            "--layers" => o.layers = value()?.max(1),
            "--repeats" => o.repeats = value()?.max(1),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(o)
}

/// The two declarations of one prism mesh, and a Dat on each set for the loops to write.
struct Meshes {
    ext: (op2::Set, op2::Set, op2::Map, op2::Dat<f64>),
    flat: (op2::Set, op2::Set, op2::Map, op2::Dat<f64>),
}

fn meshes(rt: &Runtime, base: usize, cells: usize) -> op2::Result<Meshes> {
    // A square grid of n x n squares cut in two: about `base` triangles.
    let n = ((base / 2) as f64).sqrt().round().max(1.0) as usize;
    let node = |i: usize, j: usize| (j * (n + 1) + i) as i32;
    let mut t2n = Vec::with_capacity(6 * n * n);
    for j in 0..n {
        for i in 0..n {
            t2n.extend([node(i, j), node(i + 1, j), node(i + 1, j + 1)]);
            t2n.extend([node(i, j), node(i + 1, j + 1), node(i, j + 1)]);
        }
    }
    let (nt, nn, layers) = (2 * n * n, (n + 1) * (n + 1), cells + 1);
    let tris = rt.decl_set(nt, "tris")?;
    let verts = rt.decl_set(nn, "verts")?;
    let prisms = rt.decl_extruded_set(&tris, layers, "prisms")?;
    let nodes = rt.decl_extruded_nodes(&verts, layers, "nodes")?;
    let bottom: Vec<i32> = t2n
        .chunks(3)
        .flat_map(|t| {
            let b: Vec<i32> = t.iter().map(|v| v * layers as i32).collect();
            [b[0], b[1], b[2], b[0] + 1, b[1] + 1, b[2] + 1]
        })
        .collect();
    let mut xyz = Vec::with_capacity(3 * nn * layers);
    for j in 0..=n {
        for i in 0..=n {
            for l in 0..layers {
                xyz.extend([
                    i as f64 / n as f64,
                    j as f64 / n as f64,
                    l as f64 / cells as f64,
                ]);
            }
        }
    }
    let flat_map: Vec<i32> = bottom
        .chunks(6)
        .flat_map(|row| (0..cells as i32).flat_map(move |k| row.iter().map(move |v| v + k)))
        .collect();
    let c2n = rt.decl_extruded_map(&prisms, &nodes, 6, bottom, [1; 6], "c2n")?;
    let x = rt.decl_dat(&nodes, 3, xyz.clone(), "x")?;
    let flat_prisms = rt.decl_set(nt * cells, "flat_prisms")?;
    let flat_nodes = rt.decl_set(nn * layers, "flat_nodes")?;
    let flat_c2n = rt.decl_map(&flat_prisms, &flat_nodes, 6, flat_map, "flat_c2n")?;
    let flat_x = rt.decl_dat(&flat_nodes, 3, xyz, "flat_x")?;
    Ok(Meshes {
        ext: (prisms, nodes, c2n, x),
        flat: (flat_prisms, flat_nodes, flat_c2n, flat_x),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds per run of the two loops, (extruded, unstructured), alternating.
fn time(
    rt: &Runtime,
    m: &Meshes,
    kernel: &Kernel,
    increments: bool,
    repeats: usize,
) -> op2::Result<(f64, f64, f64)> {
    // The output Dats are made (and their pages touched) before any timing.
    let outputs = |(cells, nodes, ..): &(op2::Set, op2::Set, op2::Map, op2::Dat<f64>)| {
        let on = if increments { nodes } else { cells };
        rt.decl_dat_zeros::<f64>(on, 1, "out")
    };
    let (out_e, out_f) = (outputs(&m.ext)?, outputs(&m.flat)?);
    let run = |(cells, _, map, x): &(op2::Set, op2::Set, op2::Map, op2::Dat<f64>),
               out: &op2::Dat<f64>|
     -> op2::Result<(f64, f64)> {
        let arg = if increments {
            out.arg_row(map, INC)
        } else {
            out.arg(WRITE)
        };
        let t = Instant::now();
        rt.par_loop(kernel, cells, [x.arg_row(map, READ), arg])?;
        rt.flush()?;
        let secs = t.elapsed().as_secs_f64();
        let sum: f64 = out.data_ro()?.iter().sum();
        Ok((secs, sum))
    };
    // Once each to compile and touch the data.
    let (_, se) = run(&m.ext, &out_e)?;
    let (_, sf) = run(&m.flat, &out_f)?;
    let (mut te, mut tf) = (Vec::new(), Vec::new());
    for _ in 0..repeats {
        te.push(run(&m.ext, &out_e)?.0);
        tf.push(run(&m.flat, &out_f)?.0);
    }
    Ok((
        median(te),
        median(tf),
        (se - sf).abs() / sf.abs().max(1e-300),
    ))
}

fn main() -> Result<(), String> {
    let o = parse()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "extruded vs unstructured: ~{} base triangles x {} layers, medians of {} alternating runs",
        o.base, o.layers, o.repeats
    );
    println!(
        "{:<8} {:>8} {:<8} {:>14} {:>16} {:>9} {:>10}",
        "backend", "threads", "loop", "extruded (ms)", "unstructured (ms)", "speed-up", "rel. diff"
    );
    for (backend, t) in [("seq", 1), ("openmp", threads)] {
        let rt = op2::builder()
            .backend(backend)
            .num_threads(t)
            .build()
            .map_err(|e| e.to_string())?;
        let m = meshes(&rt, o.base, o.layers).map_err(|e| e.to_string())?;
        for (name, src, inc) in [("lumped", LUMPED, true), ("volume", VOLUME, false)] {
            let k = Kernel::new(name, src).map_err(|e| e.to_string())?;
            let (e, f, diff) = time(&rt, &m, &k, inc, o.repeats).map_err(|e| e.to_string())?;
            println!(
                "{backend:<8} {t:>8} {name:<8} {:>14.2} {:>16.2} {:>8.2}x {diff:>10.1e}",
                e * 1e3,
                f * 1e3,
                f / e
            );
        }
    }
    Ok(())
}

//! The main job: Airfoil on the standard mesh (generated, no input files), 1000 iterations on the
//! OpenMP backend where it is built in (every core), the residual every 100 printed as OP2 prints
//! it, OP2's per-loop timing table, and whether the residuals match OP2-Common's.
//!
//! `cargo run --release --example airfoil -- [--iterations N] [--backend NAME] [--mesh FILE]
//! [--ij I J] [--write-mesh FILE] [--vtk FILE] [--png FILE] [--no-progress] [--renumber]
//! [--save-q FILE] [--checkpoint FILE [--checkpoint-every N]]`
//!
//! `--save-q FILE` writes the final flow raw (little-endian f64, global cell order), to compare
//! runs. `--checkpoint FILE` checkpoints every N iterations (100 by default); started again with the
//! file present, the same command goes on from the last checkpoint (docs/11-checkpoints.md).
//!
//! `--mesh` reads `new_grid.dat` or, built with `--features hdf5`, OP2's `new_grid.h5` (and its
//! constants); `--write-mesh x.h5` writes OP2's HDF5 layout, any other name the text format.
//! `--vtk` writes density, velocity and pressure for ParaView at the end, `--png` a picture of the
//! pressure. `--renumber` numbers the mesh for locality first (reverse Cuthill-McKee from the
//! cells, as OP2's `op_renumber`; across ranks each rank's part). A progress bar runs on stderr when it is a terminal, plain lines when it is not.
//!
//! Across MPI ranks (built with `--features mpi`): `mpirun -np N target/release/examples/airfoil
//! [--partitioner metis|geometric|blocks|ptscotch] [--renumber]`. Every rank builds the mesh, it is
//! partitioned collectively (from an HDF5 file each rank reads only its rows), rank 0 prints; the timing table then has the halo exchanges, bytes
//! and time waiting per loop (summed, or the slowest rank's), and a table per Dat.

use airfoil::{
    Airfoil, Constants, LOOPS, Mesh, MeshError, REFERENCE_RESIDUALS, STANDARD_IJ, format_residual,
};
use std::borrow::Cow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Options {
    iterations: usize,
    backend: Option<String>,
    mesh: Option<PathBuf>,
    ij: (usize, usize),
    write_mesh: Option<PathBuf>,
    /// Across ranks: the partitioner's name (METIS by default under mpirun).
    partitioner: Option<String>,
    renumber: bool,
    /// Number the mesh in a pseudo-random order first (as an unordered mesh generator would).
    shuffle: Option<u64>,
    vtk: Option<PathBuf>,
    png: Option<PathBuf>,
    /// The final flow, raw: `q` in global cell order as little-endian f64 (for comparing runs).
    save_q: Option<PathBuf>,
    progress: bool,
    /// Checkpoint file: written every `checkpoint_every` iterations, restarted from if present.
    checkpoint: Option<PathBuf>,
    checkpoint_every: usize,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        iterations: 1000,
        backend: None,
        mesh: None,
        ij: STANDARD_IJ,
        write_mesh: None,
        partitioner: None,
        renumber: false,
        shuffle: None,
        vtk: None,
        png: None,
        save_q: None,
        progress: true,
        checkpoint: None,
        checkpoint_every: 100,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    let num = |v: Option<&String>, what: &str| -> Result<usize, String> {
        v.ok_or(format!("{what} needs a value"))?
            .parse()
            .map_err(|_| format!("{what} needs a positive integer"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--iterations" => o.iterations = num(it.next(), "--iterations")?,
            "--backend" => o.backend = Some(it.next().ok_or("--backend needs a name")?.clone()),
            "--mesh" => o.mesh = Some(it.next().ok_or("--mesh needs a file")?.into()),
            "--write-mesh" => {
                o.write_mesh = Some(it.next().ok_or("--write-mesh needs a file")?.into())
            }
            "--ij" => o.ij = (num(it.next(), "--ij")?, num(it.next(), "--ij")?),
            "--partitioner" => {
                o.partitioner = Some(it.next().ok_or("--partitioner needs a name")?.clone())
            }
            "--renumber" => o.renumber = true,
            "--shuffle" => {
                o.shuffle = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .ok_or("--shuffle needs a seed (a number)")?,
                )
            }
            "--vtk" => o.vtk = Some(it.next().ok_or("--vtk needs a file")?.into()),
            "--png" => o.png = Some(it.next().ok_or("--png needs a file")?.into()),
            "--save-q" => o.save_q = Some(it.next().ok_or("--save-q needs a file")?.into()),
            "--no-progress" => o.progress = false,
            "--checkpoint" => {
                o.checkpoint = Some(it.next().ok_or("--checkpoint needs a file")?.into())
            }
            "--checkpoint-every" => {
                o.checkpoint_every = num(it.next(), "--checkpoint-every")?;
                if o.checkpoint_every == 0 {
                    return Err("--checkpoint-every needs a positive integer".into());
                }
            }
            "--help" | "-h" => {
                return Err("usage: airfoil [--iterations N] [--backend NAME] [--mesh FILE] [--ij I J] [--write-mesh FILE] [--vtk FILE] [--png FILE] [--save-q FILE] [--no-progress] [--shuffle SEED] [--renumber] [--partitioner metis|geometric|blocks|ptscotch] [--checkpoint FILE [--checkpoint-every N]]".into());
            }
            other => return Err(format!("unknown option `{other}` (try --help)")),
        }
    }
    if cfg!(not(feature = "png")) && o.png.is_some() {
        return Err("--png needs the `png` feature (on by default)".into());
    }
    // Outputs are checked now, not after the run.
    for (flag, path) in [
        ("--vtk", &o.vtk),
        ("--png", &o.png),
        ("--write-mesh", &o.write_mesh),
        ("--checkpoint", &o.checkpoint),
        ("--save-q", &o.save_q),
    ] {
        if let Some(p) = path {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            if p.is_dir() || dir.is_some_and(|d| !d.is_dir()) {
                return Err(format!(
                    "{flag} {}: not a file in an existing directory",
                    p.display()
                ));
            }
        }
    }
    if o.ij.0 < 2 || o.ij.1 < 2 {
        return Err("--ij needs I >= 2 and J >= 2".into());
    }
    // Checked here, before any rank starts a collective step, so every rank stops alike.
    if let Some(p) = &o.partitioner {
        if !["metis", "geometric", "blocks", "ptscotch"].contains(&p.as_str()) {
            return Err(format!(
                "unknown partitioner `{p}` (one of metis, geometric, blocks, ptscotch)"
            ));
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("airfoil: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the job; `Ok(false)` when the residuals should match the reference and do not.
fn run() -> Result<bool, String> {
    let o = parse()?;
    #[cfg(feature = "mpi")]
    let launched = op2::mpi::launched_by_mpirun();
    #[cfg(not(feature = "mpi"))]
    let launched = false;
    let distributed = o.partitioner.is_some() || launched;
    // MPI first (finalized last, after the runtime is gone).
    #[cfg(feature = "mpi")]
    let mpi = if distributed {
        Some(op2::mpi::Mpi::init().map_err(|e| e.to_string())?)
    } else {
        None
    };
    #[cfg(not(feature = "mpi"))]
    if distributed {
        return Err(
            "across ranks needs the `mpi` feature: cargo build --release -p airfoil --features mpi --example airfoil"
                .into(),
        );
    }
    let s = |e: MeshError| e.to_string();

    // Across ranks an HDF5 mesh is read in slices, one per rank; otherwise every process holds
    // the whole mesh.
    let sliced = distributed && o.mesh.as_deref().is_some_and(airfoil::mesh::is_hdf5);
    let t = Instant::now();
    let (mesh, mut standard) = match &o.mesh {
        Some(_) if sliced => (None, false),
        Some(path) => {
            let m = Mesh::load(path).map_err(s)?;
            // A file holding the standard mesh gets the reference check too.
            let standard = [m.nnode(), m.ncell()] == [721_801, 720_000]
                && m == Mesh::generate(STANDARD_IJ.0, STANDARD_IJ.1);
            (Some(m), standard)
        }
        None => (Some(Mesh::generate(o.ij.0, o.ij.1)), o.ij == STANDARD_IJ),
    };
    // `--shuffle` numbers the mesh badly; in one process `--renumber` then renumbers the whole
    // mesh (across ranks each rank's part is).
    let mesh = mesh.map(|m| match o.shuffle {
        Some(seed) => airfoil::mesh::shuffled(&m, seed),
        None => m,
    });
    let mut mesh = match mesh {
        Some(m) if o.renumber && !distributed => Some(m.into_renumbered().map_err(s)?),
        other => other,
    };
    let c = constants(o.mesh.as_deref()).map_err(s)?;
    // OP2's residuals are for its constants too.
    standard = standard && c == Constants::default();
    if let (Some(m), Some(_)) = (&mesh, &o.png) {
        if !m.bound.contains(&1) {
            return Err("--png: the mesh has no wall (boundary kind 1) to draw".into());
        }
    }
    let mesh_seconds = t.elapsed().as_secs_f64();
    let mut b = op2::builder();
    match (&o.backend, std::env::var_os("OP2_BACKEND")) {
        (Some(name), _) => b = b.backend(name),
        // The main job uses the machine's cores where the OpenMP backend is built in.
        (None, None) if op2::backends().iter().any(|f| f.name == "openmp") => {
            b = b.backend("openmp")
        }
        _ => {}
    }
    #[cfg(feature = "mpi")]
    if let Some(mpi) = &mpi {
        b = b.communicator(mpi.world());
    }
    if let Some(path) = &o.checkpoint {
        // Before the first loop of every N-th iteration: save_soln opens each iteration.
        b = b
            .checkpoint(path)
            .checkpoint_every(op2::CheckpointEvery::Kernel {
                kernel: LOOPS[0].into(),
                every: o.checkpoint_every as u64,
            });
    }
    let rt = b.build().map_err(|e| e.to_string())?;
    let comm = rt.communicator().clone();
    let (rank, ranks) = (comm.rank(), comm.size());
    let lead = rank == 0;
    macro_rules! say {
        ($($t:tt)*) => { if lead { println!($($t)*); } };
    }
    // Rank 0 writes; every rank learns whether it could, and all stop if not.
    let on_lead = |what: &str, job: &dyn Fn() -> Result<(), String>| -> Result<(), String> {
        let done = if lead { job() } else { Ok(()) };
        let failed = comm
            .first_failed_rank(done.is_err())
            .map_err(|e| e.to_string())?;
        done?;
        match failed {
            Some(_) => Err(format!("rank 0 could not write {what}")),
            None => Ok(()),
        }
    };
    if let Some(m) = &mesh {
        say!(
            "mesh: {} nodes, {} cells, {} edges, {} boundary edges{} ({mesh_seconds:.2} s)",
            m.nnode(),
            m.ncell(),
            m.nedge(),
            m.nbedge(),
            match (o.shuffle.is_some(), o.renumber && !distributed) {
                (false, false) => "",
                (true, false) => ", shuffled",
                (false, true) => ", renumbered",
                (true, true) => ", shuffled and renumbered",
            },
        );
    }
    if let Some(path) = &o.write_mesh {
        on_lead("the mesh", &|| {
            whole(mesh.as_ref(), o.mesh.as_deref())?
                .save(path, &c)
                .map_err(s)
        })?;
        say!("wrote {}", path.display());
    }
    // Backends that run their loops on OpenMP's threads say how many.
    let threads = if rt.uses_openmp_threads() {
        format!(
            " ({} threads{})",
            rt.host_threads(),
            if ranks > 1 { " per rank" } else { "" }
        )
    } else {
        String::new()
    };
    say!(
        "backend: {}{threads} (--backend NAME or OP2_BACKEND chooses another)",
        rt.backend_name()
    );

    #[cfg(feature = "mpi")]
    let (airfoil, local) = if distributed {
        let name = o.partitioner.as_deref().unwrap_or("metis");
        let choose = |h: &airfoil::distributed::AirfoilHandles| {
            let p = h.partitioner(name).expect("checked by parse()");
            op2::mpi::Options::new(p).renumber(o.renumber)
        };
        let (airfoil, local) = match (&mesh, &o.mesh) {
            (Some(m), _) => {
                airfoil::distributed::partitioned(&rt, m, &c, choose).map_err(|e| e.to_string())?
            }
            (None, Some(path)) => {
                #[cfg(feature = "hdf5")]
                {
                    let (airfoil, local, [nnode, ncell, nedge, nbedge]) =
                        airfoil::distributed::partitioned_hdf5(&rt, path, &c, choose).map_err(s)?;
                    say!(
                        "mesh: {nnode} nodes, {ncell} cells, {nedge} edges, {nbedge} boundary edges, \
                         {} read in {ranks} slices",
                        path.display()
                    );
                    // No rank holds the whole mesh to compare: the standard mesh's sizes decide.
                    standard =
                        [nnode, ncell, nedge, nbedge] == [721_801, 720_000, 1_438_600, 2_800];
                    (airfoil, local)
                }
                #[cfg(not(feature = "hdf5"))]
                return Err(s(MeshError::NeedsHdf5 {
                    path: path.display().to_string(),
                }));
            }
            (None, None) => unreachable!("a mesh is generated when no file is given"),
        };
        {
            let r = local.report();
            let cells = r.sets.iter().find(|(n, _)| n == "cells");
            say!(
                "ranks: {ranks}, partitioner {}{} ({:.2} s): edge cut {}, cells per rank {}, largest cell halo {}",
                r.partitioner,
                if o.renumber { ", renumbered" } else { "" },
                r.seconds,
                r.edge_cut,
                cells.map_or(String::new(), |(_, s)| {
                    let owned: Vec<usize> = s.iter().map(|s| s.core + s.owned).collect();
                    format!(
                        "{}..{}",
                        owned.iter().min().unwrap_or(&0),
                        owned.iter().max().unwrap_or(&0)
                    )
                }),
                r.largest_halo("cells").unwrap_or(0)
            );
        }
        (airfoil, Some(local))
    } else {
        (declare_whole(&rt, &mut mesh, &o, &c)?, None)
    };
    #[cfg(not(feature = "mpi"))]
    let airfoil = declare_whole(&rt, &mut mesh, &o, &c)?;

    let t = Instant::now();
    let mut printed = Vec::new();
    let progress = Progress::new(lead && o.progress, o.iterations);
    for iter in 1..=o.iterations {
        let rms = airfoil.step().map_err(|e| e.to_string())?;
        if iter % 100 == 0 {
            let r = format_residual(rms);
            progress.println(&format!(" {iter:5}  {r}"), lead);
            printed.push(r);
        }
        progress.tick(iter);
    }
    rt.flush().map_err(|e| e.to_string())?;
    progress.finish();
    let total = t.elapsed().as_secs_f64();
    say!(
        "{} iterations in {:.2} s: {:.2} ms per iteration",
        o.iterations,
        total,
        1e3 * total / o.iterations.max(1) as f64
    );
    print_timings(&rt, o.iterations).map_err(|e| e.to_string())?;
    if let Some(stats) = rt.checkpoint_stats() {
        rt.checkpoint_wait().map_err(|e| e.to_string())?;
        let stats = rt.checkpoint_stats().unwrap_or(stats);
        // Each iteration is 9 loops, save_soln first.
        let per_iteration = (1 + 4 * 2) as u64;
        if let Some(at) = stats.restored_from {
            say!(
                "checkpoint: restarted from {} at iteration {} (the {} loops before it replayed, not run)",
                stats.path.display(),
                at / per_iteration + 1,
                stats.replayed_loops
            );
        }
        match stats.last_backup {
            Some(b) => say!(
                "checkpoint: {} taken, the last before iteration {}: it saved {} of {} bytes of \
                 Dats (the minimal rule), {} bytes in the file",
                stats.taken,
                b / per_iteration + 1,
                stats.saved_dat_bytes,
                stats.all_dat_bytes,
                stats.file_bytes
            ),
            None => say!("checkpoint: none taken in this run"),
        }
    }

    // The flow in global order on rank 0 (`None` on the others). Collective across ranks.
    let gathered_q = || -> Result<Option<Vec<f64>>, String> {
        #[cfg(feature = "mpi")]
        if let Some(local) = &local {
            return local.gather(airfoil.q_dat()).map_err(|e| e.to_string());
        }
        airfoil.q().map(Some).map_err(|e| e.to_string())
    };
    if let Some(path) = &o.save_q {
        let q = gathered_q()?;
        on_lead("the flow", &|| {
            let q = q.as_deref().expect("rank 0 holds the gathered flow");
            let bytes: Vec<u8> = q.iter().flat_map(|v| v.to_le_bytes()).collect();
            op2::atomic_write::write_file(path, &bytes).map_err(|e| e.to_string())
        })?;
        say!(
            "wrote {} (q, raw little-endian f64 in cell order)",
            path.display()
        );
    }
    if let Some(path) = &o.vtk {
        let file = airfoil::output::write_vtk(&airfoil, &c, path).map_err(|e| e.to_string())?;
        say!(
            "wrote {} (density, velocity, pressure per cell)",
            file.display()
        );
    }
    #[cfg(feature = "png")]
    if let Some(path) = &o.png {
        let q = gathered_q()?;
        on_lead("the picture", &|| {
            let q = q.as_deref().expect("rank 0 holds the gathered flow");
            let title = format!("Airfoil: pressure after {} iterations", o.iterations);
            airfoil::picture::render_pressure(
                &*whole(mesh.as_ref(), o.mesh.as_deref())?,
                q,
                c.gm1,
                &title,
                path,
                (1200, 800),
            )
            .map_err(|e| e.to_string())
        })?;
        say!("wrote {}", path.display());
    }

    if !(standard && o.iterations >= 100) {
        say!("\n(no reference residuals for this mesh and iteration count)");
        return Ok(true);
    }
    let expected = &REFERENCE_RESIDUALS[..printed.len().min(10)];
    let matches = printed.iter().zip(expected).all(|(a, b)| a == b);
    if matches {
        say!(
            "\nresiduals match OP2-Common's reference ({} values)",
            expected.len()
        );
    } else {
        say!("\nresiduals DIFFER from OP2-Common's reference:");
        for (i, (a, b)) in printed.iter().zip(expected).enumerate() {
            say!("  {:5}  got {a}  expected {b}", 100 * (i + 1));
        }
    }
    Ok(matches)
}

/// The whole mesh on rank 0, for writing and pictures: the one held, else read now (when the
/// ranks read slices).
fn whole<'m>(
    mesh: Option<&'m Mesh>,
    file: Option<&std::path::Path>,
) -> Result<Cow<'m, Mesh>, String> {
    match (mesh, file) {
        (Some(m), _) => Ok(Cow::Borrowed(m)),
        (None, Some(path)) => Mesh::load(path).map(Cow::Owned).map_err(|e| e.to_string()),
        (None, None) => Err("the mesh was not kept".into()),
    }
}

/// Declares the whole mesh in one process. The Dats and Maps take the mesh's arrays over, so the
/// mesh is not held twice; only a run that draws the picture afterwards keeps a copy of it.
fn declare_whole(
    rt: &op2::Runtime,
    mesh: &mut Option<Mesh>,
    o: &Options,
    c: &Constants,
) -> Result<Airfoil, String> {
    let m = if o.png.is_some() {
        mesh.clone()
    } else {
        mesh.take()
    };
    let m = m.ok_or("one process holds the whole mesh")?;
    Airfoil::from_mesh(rt, m, c).map_err(|e| e.to_string())
}

/// The flow constants: those in an HDF5 mesh file when it has them, else OP2's.
fn constants(mesh: Option<&std::path::Path>) -> Result<Constants, MeshError> {
    #[cfg(feature = "hdf5")]
    if let Some(path) = mesh.filter(|p| airfoil::mesh::is_hdf5(p)) {
        return Ok(Constants::read_hdf5(path)?.unwrap_or_default());
    }
    let _ = mesh;
    Ok(Constants::default())
}

/// Progress on rank 0's stderr: a bar with iterations per second and time left on a terminal,
/// a plain line every tenth of the run otherwise (logs stay readable), nothing when switched off.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    plain: bool,
    iterations: usize,
    start: Instant,
}

impl Progress {
    fn new(on: bool, iterations: usize) -> Progress {
        use std::io::IsTerminal;
        let terminal = on && std::io::stderr().is_terminal();
        let bar = terminal.then(|| {
            let bar = indicatif::ProgressBar::new(iterations as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} iterations  {per_sec}  {eta} left",
                )
                .expect("a valid template"),
            );
            bar
        });
        Progress {
            bar,
            plain: on && !terminal,
            iterations,
            start: Instant::now(),
        }
    }

    /// Prints a line of the job's output (on rank 0) without breaking the bar.
    fn println(&self, line: &str, lead: bool) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if lead => println!("{line}"),
            None => {}
        }
    }

    fn tick(&self, iter: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(iter as u64);
        } else if self.plain && iter % (self.iterations / 10).max(1) == 0 {
            let seconds = self.start.elapsed().as_secs_f64();
            let rate = iter as f64 / seconds.max(f64::MIN_POSITIVE);
            eprintln!(
                "progress: {iter}/{} iterations, {rate:.1} per second, {:.0} s left",
                self.iterations,
                (self.iterations - iter) as f64 / rate
            );
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// OP2's per-loop table on rank 0; across ranks times are the slowest rank's and halo traffic
/// is summed over ranks, followed by the traffic per Dat.
fn print_timings(rt: &op2::Runtime, iterations: usize) -> op2::Result<()> {
    use op2::ReduceOp;
    let comm = rt.communicator().clone();
    let ranks = comm.size();
    let lead = comm.rank() == 0;
    // Every rank reduces the same rows in the same order, whether it ran a loop or not.
    let all = |mut values: Vec<f64>, op: ReduceOp| -> op2::Result<Vec<f64>> {
        comm.all_reduce_f64(&mut values, op)?;
        Ok(values)
    };
    let timings = rt.timings();
    let row = |name: &str| timings.iter().find(|t| t.kernel == name).cloned();
    let maxed = all(
        LOOPS
            .iter()
            .flat_map(|n| {
                let t = row(n);
                [
                    t.as_ref().map_or(0.0, |t| t.seconds),
                    t.as_ref().map_or(0.0, |t| t.halo.wait_seconds),
                    t.as_ref().map_or(0.0, |t| t.reduction_wait_seconds),
                ]
            })
            .collect(),
        ReduceOp::Max,
    )?;
    let summed = all(
        LOOPS
            .iter()
            .flat_map(|n| {
                let t = row(n);
                [
                    t.as_ref().map_or(0.0, |t| t.bytes as f64),
                    t.as_ref().map_or(0.0, |t| t.halo.exchanges as f64),
                    t.as_ref().map_or(0.0, |t| t.halo.bytes as f64),
                    t.as_ref().map_or(0.0, |t| t.reductions as f64),
                    t.as_ref().map_or(0.0, |t| t.calls as f64),
                ]
            })
            .collect(),
        ReduceOp::Sum,
    )?;
    if lead {
        println!(
            "\n  {:<10} {:>7} {:>10} {:>7} {:>8}{}",
            "loop",
            "calls",
            "time (s)",
            "share",
            "GB/s",
            if ranks > 1 {
                format!(
                    " {:>10} {:>10} {:>10} {:>8} {:>10}",
                    "exch/call", "halo MB", "wait (s)", "wait %", "reductions"
                )
            } else {
                String::new()
            }
        );
    }
    let total: f64 = (0..LOOPS.len()).map(|i| maxed[3 * i]).sum();
    for (i, name) in LOOPS.iter().enumerate() {
        let (seconds, wait, reduce_wait) = (maxed[3 * i], maxed[3 * i + 1], maxed[3 * i + 2]);
        let [bytes, exchanges, halo_bytes, reductions, calls] =
            std::array::from_fn(|k| summed[5 * i + k]);
        if !lead || calls == 0.0 {
            continue;
        }
        let calls_per_rank = calls / ranks as f64;
        let mut line = format!(
            "  {:<10} {:>7} {:>10.3} {:>6.1}% {:>8.2}",
            name,
            calls_per_rank,
            seconds,
            100.0 * seconds / total.max(f64::MIN_POSITIVE),
            bytes / seconds.max(f64::MIN_POSITIVE) / 1e9
        );
        if ranks > 1 {
            line += &format!(
                " {:>10.3} {:>10.1} {:>10.3} {:>7.1}% {:>10}",
                exchanges / calls,
                halo_bytes / 1e6,
                wait + reduce_wait,
                100.0 * (wait + reduce_wait) / seconds.max(f64::MIN_POSITIVE),
                reductions / ranks as f64
            );
        }
        println!("{line}");
    }
    if ranks == 1 {
        return Ok(());
    }
    // Per Dat: exchanges on each rank (the same everywhere a rank has neighbours), per iteration.
    const DATS: [&str; 6] = ["p_x", "p_q", "p_qold", "p_adt", "p_res", "p_bound"];
    let traffic = rt.halo_traffic();
    let find = |n: &str| traffic.iter().find(|t| t.name == n).map(|t| t.traffic);
    let maxed = all(
        DATS.iter()
            .flat_map(|n| {
                let t = find(n).unwrap_or_default();
                [t.exchanges as f64, t.wait_seconds]
            })
            .collect(),
        ReduceOp::Max,
    )?;
    let summed = all(
        DATS.iter()
            .map(|n| find(n).map_or(0.0, |t| t.bytes as f64))
            .collect(),
        ReduceOp::Sum,
    )?;
    if lead {
        println!(
            "\n  {:<8} {:>10} {:>14} {:>14} {:>10}",
            "dat", "exchanges", "per iteration", "MB (all ranks)", "wait (s)"
        );
        for (i, name) in DATS.iter().enumerate() {
            println!(
                "  {:<8} {:>10} {:>14.3} {:>14.1} {:>10.3}",
                name,
                maxed[2 * i],
                maxed[2 * i] / iterations.max(1) as f64,
                summed[i] / 1e6,
                maxed[2 * i + 1]
            );
        }
    }
    Ok(())
}

//! `cargo xtask bench`: Airfoil on the standard mesh for every usable backend and thread count and
//! the hand-written Rust baseline, in one process, with a STREAM-triad measurement: ms per iteration
//! and per loop, ratio to the baseline, achieved bandwidth against the triad's (against the GPU's
//! device-to-device copy rate, measured in the same run, for CUDA rows). CUDA runs both strategies;
//! its loops queue up without waiting, so its per-loop times come from a second run that waits for
//! each loop (`OP2_CUDA_SYNC`), while ms/iter is the queued run's.
//!
//! `airfoil-bench [--iterations N] [--ij I J] [--backend NAME]... [--shuffle SEED] [--renumber]`:
//! with `--backend`, only those backends' rows (beside the baseline), and a row that cannot run is
//! a failure (exit status 1). `--shuffle` numbers the mesh in a random order, `--renumber` then
//! numbers it for locality (`Mesh::renumbered`); every row, the baseline included, runs on that
//! mesh. `--checkpoint-overhead` instead times Airfoil with and without a checkpoint every 100
//! iterations, alternating (at least 300 iterations per run).
//!
//! Then a memory table: each backend's Airfoil in a process of its own (`--memory-worker`),
//! declared from a generated mesh that the runtime takes over, 10 iterations: the runtime's
//! report by owner (Dats, Maps, plans, compiled code, device copies), the heap's peak (a counting
//! allocator) and the kernel's peak resident memory, each against the declared bytes.
//!
//! Built with the `mpi` feature, it adds rows across MPI ranks (1 and 2 ranks of `seq`, 2 ranks
//! of `openmp` with one thread each): it starts itself under `mpirun` as a worker
//! (`--mpi-worker BACKEND`), whose rank 0 reports the slowest rank's times, the bytes every rank
//! moved, the halo bytes sent per iteration and the share of loop time spent waiting.

use airfoil::format_residual;
use airfoil::{Airfoil, Baseline, Constants, LOOPS, Mesh, REFERENCE_RESIDUALS, STANDARD_IJ};
use op2_test_support::memory::{self, CountingAllocator};
use std::time::Instant;

/// Counts what Rust code allocates, for the memory table.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// One configuration's figures.
struct Row {
    name: String,
    threads: usize,
    /// Bandwidth the row is compared with (the triad, or the GPU's copy rate), GB/s.
    ceiling: f64,
    ms_per_iter: f64,
    loop_ms: [f64; 5],
    bytes_per_iter: f64,
    residual: f64,
    /// Across ranks: (ranks, halo bytes sent per iteration by all ranks, share of loop time
    /// spent waiting for halos and reductions).
    ranks: Option<(usize, f64, f64)>,
}

/// Best-of-5 STREAM triad `a = b + s c` over 3 x 16M f64 (384 MB) on `threads` threads, GB/s.
fn triad(threads: usize) -> f64 {
    const N: usize = 16 << 20;
    let (mut a, b, c) = (vec![0.0f64; N], vec![1.0f64; N], vec![2.0f64; N]);
    let chunk = N.div_ceil(threads);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for ((a, b), c) in a
                .chunks_mut(chunk)
                .zip(b.chunks(chunk))
                .zip(c.chunks(chunk))
            {
                s.spawn(move || {
                    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                        *a = b + 3.0 * c;
                    }
                });
            }
        });
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&a);
    }
    3.0 * 8.0 * N as f64 / best / 1e9
}

/// One configuration to run: backend, threads, for CUDA the strategy, and whether host loops
/// run in SIMD batches and chains are tiled (`None`: the default, tiling where it pays).
struct Config {
    label: String,
    backend: &'static str,
    threads: usize,
    strategy: Option<&'static str>,
    simd: bool,
    tiling: Option<op2::TilingMode>,
}

fn run_op2(mesh: &Mesh, c: &Config, iters: usize, sync: bool) -> Result<Row, String> {
    let mut b = op2::builder()
        .backend(c.backend)
        .num_threads(c.threads)
        .simd(c.simd);
    if let Some(t) = c.tiling {
        b = b.tiling(t);
    }
    if let Some(s) = c.strategy {
        b = b
            .setting("cuda_strategy", s)
            .setting("cuda_sync", u8::from(sync));
    }
    let rt = b.build().map_err(|e| e.to_string())?;
    let a = Airfoil::new(&rt, mesh, &Constants::default()).map_err(|e| e.to_string())?;
    // Warm-up outside the timing: compiling, planning, first touch, and the timed trials by
    // which automatic tiling decides (three runs each way per chain). Then restart from
    // scratch so the residual after `iters` iterations is comparable with the reference.
    for _ in 0..8 {
        a.step().map_err(|e| e.to_string())?;
    }
    a.reset(&Constants::default()).map_err(|e| e.to_string())?;
    rt.reset_timings();
    let t = Instant::now();
    let mut residual = 0.0;
    for _ in 0..iters {
        residual = a.step().map_err(|e| e.to_string())?;
    }
    let total = t.elapsed().as_secs_f64();
    let timings = rt.timings();
    let mut loop_ms = [0.0; 5];
    for (i, name) in LOOPS.iter().enumerate() {
        if let Some(t) = timings.iter().find(|t| t.kernel == *name) {
            loop_ms[i] = 1e3 * t.seconds / iters as f64;
        }
    }
    Ok(Row {
        name: c.label.clone(),
        threads: c.threads,
        ceiling: f64::NAN,
        ms_per_iter: 1e3 * total / iters as f64,
        loop_ms,
        bytes_per_iter: timings.iter().map(|t| t.bytes as f64).sum::<f64>() / iters as f64,
        residual,
        ranks: None,
    })
}

/// The cost of checkpointing every 100 iterations: `iters` iterations on openmp (every core;
/// seq where openmp is not built in) without and with checkpoints, alternating (without, with,
/// with, without, so a drift of the machine's speed cancels), each on a fresh runtime; the
/// time includes writing the last checkpoint.
fn checkpoint_cost(mesh: &Mesh, iters: usize, cores: usize) -> Result<(), String> {
    let openmp = op2::backends().iter().any(|b| b.name == "openmp");
    let (backend, threads) = if openmp {
        ("openmp", cores)
    } else {
        ("seq", 1)
    };
    let file = std::env::temp_dir().join(format!("op2-bench-{}.ckpt", std::process::id()));
    let mut ms = [0.0f64; 2];
    let mut saved = None;
    for with in [false, true, true, false] {
        let _ = std::fs::remove_file(&file);
        let mut b = op2::builder().backend(backend).num_threads(threads);
        if with {
            b = b
                .checkpoint(&file)
                .checkpoint_every(op2::CheckpointEvery::Kernel {
                    kernel: LOOPS[0].into(),
                    every: 100,
                });
        }
        let rt = b.build().map_err(|e| e.to_string())?;
        let a = Airfoil::new(&rt, mesh, &Constants::default()).map_err(|e| e.to_string())?;
        let t = Instant::now();
        for _ in 0..iters {
            a.step().map_err(|e| e.to_string())?;
        }
        rt.flush().map_err(|e| e.to_string())?;
        rt.checkpoint_wait().map_err(|e| e.to_string())?;
        ms[usize::from(with)] += 1e3 * t.elapsed().as_secs_f64() / (2 * iters) as f64;
        if let Some(s) = rt.checkpoint_stats() {
            saved = Some((s.taken, s.saved_dat_bytes, s.all_dat_bytes, s.file_bytes));
        }
    }
    let _ = std::fs::remove_file(&file);
    let (taken, part, all, file_bytes) = saved.unwrap_or_default();
    println!(
        "checkpoint every 100 iterations ({backend}, {threads} thread(s), {iters} iterations, \
         without/with/with/without): without {:.2} ms/iter, with {:.2} ms/iter: {:+.1}%; \
         {taken} checkpoints of {:.1} MB ({:.1} MB of Dats saved of {:.1} MB by the minimal rule)",
        ms[0],
        ms[1],
        100.0 * (ms[1] / ms[0] - 1.0),
        file_bytes as f64 / 1e6,
        part as f64 / 1e6,
        all as f64 / 1e6
    );
    Ok(())
}

/// One rank of an `mpirun` worker: Airfoil on this rank's part of `mesh` (METIS), one thread;
/// rank 0 prints one `ROW` line: ms/iter, the five loops' ms, bytes, residual, halo bytes, wait
/// share.
#[cfg(feature = "mpi")]
fn mpi_worker(mesh: &Mesh, backend: &str, iters: usize) -> Result<(), String> {
    use op2::ReduceOp;
    let mpi = op2::mpi::Mpi::init().map_err(|e| e.to_string())?;
    let rt = op2::builder()
        .backend(backend)
        .num_threads(1)
        .communicator(mpi.world())
        .build()
        .map_err(|e| e.to_string())?;
    let (a, _local) = airfoil::distributed::partitioned(&rt, mesh, &Constants::default(), |h| {
        op2::mpi::Options::new(op2::mpi::Partitioner::Metis { map: h.pecell })
    })
    .map_err(|e| e.to_string())?;
    a.step().map_err(|e| e.to_string())?;
    a.reset(&Constants::default()).map_err(|e| e.to_string())?;
    rt.flush().map_err(|e| e.to_string())?;
    let comm = rt.communicator().clone();
    comm.barrier().map_err(|e| e.to_string())?;
    rt.reset_timings();
    let t = Instant::now();
    let mut residual = 0.0;
    for _ in 0..iters {
        residual = a.step().map_err(|e| e.to_string())?;
    }
    rt.flush().map_err(|e| e.to_string())?;
    let total = t.elapsed().as_secs_f64();
    let timings = rt.timings();
    let all = |mut values: Vec<f64>, op: ReduceOp| -> Result<Vec<f64>, String> {
        comm.all_reduce_f64(&mut values, op)
            .map_err(|e| e.to_string())?;
        Ok(values)
    };
    let seconds = |name: &str| {
        timings
            .iter()
            .find(|t| t.kernel == name)
            .map_or(0.0, |t| t.seconds)
    };
    let mut slowest: Vec<f64> = vec![total];
    slowest.extend(LOOPS.iter().map(|n| seconds(n)));
    let slowest = all(slowest, ReduceOp::Max)?;
    let summed = all(
        vec![
            timings.iter().map(|t| t.bytes as f64).sum(),
            timings.iter().map(|t| t.halo.bytes as f64).sum(),
            timings
                .iter()
                .map(|t| t.halo.wait_seconds + t.reduction_wait_seconds)
                .sum(),
            timings.iter().map(|t| t.seconds).sum(),
        ],
        ReduceOp::Sum,
    )?;
    if comm.rank() == 0 {
        let ms = |s: f64| 1e3 * s / iters as f64;
        println!(
            "ROW\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            comm.size(),
            ms(slowest[0]),
            ms(slowest[1]),
            ms(slowest[2]),
            ms(slowest[3]),
            ms(slowest[4]),
            ms(slowest[5]),
            summed[0] / iters as f64,
            residual,
            summed[1] / iters as f64,
            summed[2] / summed[3].max(f64::MIN_POSITIVE)
        );
    }
    Ok(())
}

/// A row across `ranks` MPI ranks of `backend` (one thread each): this program again under
/// `mpirun`, as workers.
fn run_ranks(
    ranks: usize,
    backend: &str,
    iters: usize,
    ij: (usize, usize),
    mesh_args: &[String],
) -> Result<Row, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new("mpirun")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMP_NUM_THREADS", "1")
        .args([
            "-np",
            &ranks.to_string(),
            "--oversubscribe",
            "--bind-to",
            "none",
        ])
        .args(["--timeout", "1200"])
        .arg(exe)
        .args(["--mpi-worker", backend, "--iterations", &iters.to_string()])
        .args(["--ij", &ij.0.to_string(), &ij.1.to_string()])
        .args(mesh_args)
        .output()
        .map_err(|e| format!("mpirun: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("ROW\t"))
        .ok_or_else(|| {
            format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })?;
    let f: Vec<f64> = line
        .split('\t')
        .skip(1)
        .map(|v| v.parse().map_err(|_| format!("bad worker line `{line}`")))
        .collect::<Result<_, _>>()?;
    if f.len() != 11 {
        return Err(format!("bad worker line `{line}`"));
    }
    Ok(Row {
        name: format!("mpi {ranks}x {backend}"),
        threads: 1,
        ceiling: f64::NAN,
        ms_per_iter: f[1],
        loop_ms: [f[2], f[3], f[4], f[5], f[6]],
        bytes_per_iter: f[7],
        residual: f[8],
        ranks: Some((ranks, f[9], f[10])),
    })
}

/// The GPU's device-to-device copy rate (bytes read and written per second, best of 20 copies of
/// 1 GiB), when the `cuda` backend can run here.
#[cfg(feature = "cuda")]
fn gpu_copy_rate() -> Option<f64> {
    use op2::op2_device::Device;
    let config = op2::Config::from_env().ok()?;
    match op2::backend_cuda::DriverGpu::new(&config)
        .and_then(|g| g.copy_bandwidth(1 << 30, 20).map(|r| (g, r)))
    {
        Ok((g, r)) => {
            println!("GPU {}: device-to-device copy {r:.0} GB/s", g.device_name());
            Some(r)
        }
        Err(e) => {
            println!("cuda: {e}");
            None
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_copy_rate() -> Option<f64> {
    None
}

const USAGE: &str = "usage: airfoil-bench [--iterations N] [--ij I J] [--backend NAME]... [--shuffle SEED] [--renumber] [--checkpoint-overhead] [--memory-worker BACKEND THREADS]";

/// Iterations a memory worker runs (every loop has run, planned and compiled by then).
const MEMORY_ITERATIONS: usize = 10;

/// One backend's memory, measured in this process from its start: the mesh generated, declared
/// (taken over by the runtime), `MEMORY_ITERATIONS` iterations run. One line of `key=bytes`.
fn memory_worker(backend: &str, threads: usize, ij: (usize, usize)) -> Result<String, String> {
    let rt = op2::builder()
        .backend(backend)
        .num_threads(threads)
        .build()
        .map_err(|e| e.to_string())?;
    let a = Airfoil::from_mesh(&rt, Mesh::generate(ij.0, ij.1), &Constants::default())
        .map_err(|e| e.to_string())?;
    for _ in 0..MEMORY_ITERATIONS {
        a.step().map_err(|e| e.to_string())?;
    }
    rt.flush().map_err(|e| e.to_string())?;
    let r = rt.memory_report();
    let kind = |k| r.of_kind(k).0;
    use op2::MemoryKind as K;
    Ok(format!(
        "memory declared={} dats={} maps={} plans={} code={} other={} device={} heap_peak={} rss_peak={} rss_end={}",
        r.declared_bytes(),
        kind(K::Dat) + kind(K::Global) + kind(K::Const),
        kind(K::Map),
        kind(K::Plan),
        kind(K::Code),
        kind(K::Other) + kind(K::Halo),
        r.device_bytes(),
        memory::heap_peak(),
        memory::peak_rss().unwrap_or(0),
        memory::rss().unwrap_or(0),
    ))
}

/// The memory table: each configuration's backend in a process of its own (a fresh process's
/// peaks are its own), figures in MB and as multiples of the declared bytes.
fn memory_table(configs: &[(String, &'static str, usize)], ij: (usize, usize)) {
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    println!(
        "\nmemory after {MEMORY_ITERATIONS} iterations (MB; each backend in a process of its own):\n{:<12} {:>3} {:>9} {:>9} {:>8} {:>8} {:>8} {:>9} {:>11} {:>11} {:>11}",
        "backend",
        "thr",
        "declared",
        "host dats",
        "maps",
        "plans",
        "code",
        "device",
        "heap peak",
        "RSS peak",
        "RSS at end"
    );
    for (label, backend, threads) in configs {
        let out = std::process::Command::new(&me)
            .args(["--ij", &ij.0.to_string(), &ij.1.to_string()])
            .args(["--memory-worker", backend, &threads.to_string()])
            .output();
        let line = match &out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
            Ok(o) => {
                println!(
                    "{label}: skipped: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                continue;
            }
            Err(e) => {
                println!("{label}: skipped: {e}");
                continue;
            }
        };
        let field = |k: &str| -> f64 {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let declared = field("declared");
        let mb = |k: &str| field(k) / 1e6;
        println!(
            "{:<12} {:>3} {:>9.1} {:>9.1} {:>8.1} {:>8.2} {:>8.2} {:>9.1} {:>6.1} {:>3.2}x {:>6.1} {:>3.2}x {:>6.1} {:>3.2}x",
            label,
            threads,
            declared / 1e6,
            mb("dats"),
            mb("maps"),
            mb("plans"),
            mb("code"),
            mb("device"),
            mb("heap_peak"),
            field("heap_peak") / declared,
            mb("rss_peak"),
            field("rss_peak") / declared,
            mb("rss_end"),
            field("rss_end") / declared,
        );
    }
}

/// The mesh every row runs on: generated, then shuffled and renumbered as asked.
fn bench_mesh(ij: (usize, usize), shuffle: Option<u64>, renumber: bool) -> Mesh {
    let mut mesh = Mesh::generate(ij.0, ij.1);
    if let Some(seed) = shuffle {
        mesh = airfoil::mesh::shuffled(&mesh, seed);
    }
    if renumber {
        mesh = mesh
            .into_renumbered()
            .expect("a generated mesh's maps fit its sets");
    }
    mesh
}

fn main() {
    let mut iters = 100;
    let mut ij = STANDARD_IJ;
    let mut only: Vec<String> = Vec::new();
    let mut worker: Option<String> = None;
    let (mut shuffle, mut renumber) = (None, false);
    let mut checkpoint_overhead = false;
    let (mut memory_only, mut memory_threads) = (None, 1);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    let usage = || -> ! {
        eprintln!("{USAGE}");
        std::process::exit(2)
    };
    while let Some(a) = it.next() {
        let mut num = || -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match a.as_str() {
            "--iterations" => iters = num().max(1),
            "--ij" => ij = (num(), num()),
            "--backend" => only.push(it.next().cloned().unwrap_or_else(|| usage())),
            "--mpi-worker" => worker = Some(it.next().cloned().unwrap_or_else(|| usage())),
            "--memory-worker" => {
                let (backend, threads) = (it.next(), it.next());
                memory_only = Some(backend.cloned().unwrap_or_else(|| usage()));
                memory_threads = threads
                    .and_then(|t| t.parse().ok())
                    .unwrap_or_else(|| usage());
            }
            "--shuffle" => shuffle = Some(num() as u64),
            "--renumber" => renumber = true,
            "--checkpoint-overhead" => checkpoint_overhead = true,
            _ => usage(),
        }
    }
    if let Some(backend) = memory_only {
        match memory_worker(&backend, memory_threads, ij) {
            Ok(line) => println!("{line}"),
            Err(e) => {
                eprintln!("airfoil-bench memory worker: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    if let Some(backend) = worker {
        #[cfg(feature = "mpi")]
        let result = mpi_worker(&bench_mesh(ij, shuffle, renumber), &backend, iters);
        #[cfg(not(feature = "mpi"))]
        let result: Result<(), String> = Err(format!("{backend}: built without feature `mpi`"));
        if let Err(e) = result {
            eprintln!("airfoil-bench worker: {e}");
            std::process::exit(1);
        }
        return;
    }
    let cores = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1);
    let mesh = bench_mesh(ij, shuffle, renumber);
    // MPI workers build the same mesh.
    let mut mesh_args: Vec<String> = Vec::new();
    if let Some(seed) = shuffle {
        mesh_args.extend(["--shuffle".to_string(), seed.to_string()]);
    }
    if renumber {
        mesh_args.push("--renumber".into());
    }
    println!(
        "Airfoil {}x{}{}{}: {} cells, {} edges; {iters} iterations per configuration; {cores} cores",
        ij.0,
        ij.1,
        shuffle.map_or(String::new(), |s| format!(", shuffled (seed {s})")),
        if renumber { ", renumbered" } else { "" },
        mesh.ncell(),
        mesh.nedge()
    );
    if checkpoint_overhead {
        if let Err(e) = checkpoint_cost(&mesh, iters.max(300), cores) {
            eprintln!("checkpoint overhead: {e}");
            std::process::exit(1);
        }
        return;
    }
    let triads: Vec<(usize, f64)> = (1..=cores.clamp(1, 2))
        .chain((cores > 2).then_some(cores))
        .map(|t| (t, triad(t)))
        .collect();
    for (t, gbs) in &triads {
        println!("STREAM triad, {t} thread(s): {gbs:.1} GB/s");
    }
    let triad_for = |t: usize| {
        triads
            .iter()
            .rev()
            .find(|(n, _)| *n <= t)
            .map(|p| p.1)
            .unwrap_or(f64::NAN)
    };

    // The baseline.
    let mut base = Baseline::new(&mesh, Constants::default());
    base.step(); // warm-up, then restart
    let mut base = Baseline::new(&mesh, Constants::default());
    let t = Instant::now();
    let mut residual = 0.0;
    for _ in 0..iters {
        residual = base.step();
    }
    let mut rows = vec![Row {
        name: "hand-written Rust".into(),
        threads: 1,
        ceiling: triad_for(1),
        ms_per_iter: 1e3 * t.elapsed().as_secs_f64() / iters as f64,
        loop_ms: base.seconds.map(|s| 1e3 * s / iters as f64),
        bytes_per_iter: f64::NAN,
        residual,
        ranks: None,
    }];

    let host = |label: &str, backend: &'static str, threads: usize| Config {
        label: label.into(),
        backend,
        threads,
        strategy: None,
        simd: true,
        tiling: None,
    };
    let scalar = |label: &str, backend: &'static str, threads: usize| Config {
        simd: false,
        ..host(label, backend, threads)
    };
    let tiled = |label: &str, backend: &'static str, threads: usize| Config {
        tiling: Some(op2::TilingMode::Always),
        ..host(label, backend, threads)
    };
    let mut configs = vec![
        host("seq", "seq", 1),
        scalar("seq, no SIMD", "seq", 1),
        tiled("seq, tiled", "seq", 1),
    ];
    let mut threads: Vec<usize> = vec![1, 2];
    if cores > 2 {
        threads.push(cores);
    }
    configs.extend(threads.into_iter().map(|t| host("openmp", "openmp", t)));
    configs.push(scalar("openmp, no SIMD", "openmp", 2));
    configs.push(tiled("openmp, tiled", "openmp", 2));
    // The OpenCL device (PoCL's CPU device here: every core, as its own thread pool).
    configs.push(host("opencl", "opencl", cores));
    for strategy in ["colour", "atomics", "staged-atomics"] {
        configs.push(Config {
            strategy: Some(strategy),
            ..host(&format!("cuda {strategy}"), "cuda", 1)
        });
    }
    if !only.is_empty() {
        configs.retain(|c| only.iter().any(|o| o == c.backend));
    }
    let copy_rate = if configs.iter().any(|c| c.backend == "cuda") {
        gpu_copy_rate()
    } else {
        None
    };
    let registered: Vec<&str> = op2::backends().iter().map(|b| b.name).collect();
    // One memory row per backend that ran (openmp with 2 threads: the figure).
    let mut memory_configs: Vec<(String, &'static str, usize)> = Vec::new();
    for c in &configs {
        let threads = if c.backend == "openmp" { 2 } else { c.threads };
        if registered.contains(&c.backend) && !memory_configs.iter().any(|m| m.1 == c.backend) {
            memory_configs.push((c.backend.to_string(), c.backend, threads));
        }
    }
    let mut chosen_skipped = false;
    for c in configs {
        if !registered.contains(&c.backend) {
            println!("{}: skipped (not built in)", c.label);
            chosen_skipped |= !only.is_empty();
            continue;
        }
        let row = run_op2(&mesh, &c, iters, false).and_then(|mut r| {
            if c.strategy.is_some() {
                // Loop times from a run that waits for each loop; ms/iter stays the queued run's.
                r.loop_ms = run_op2(&mesh, &c, iters, true)?.loop_ms;
                r.ceiling = copy_rate.unwrap_or(f64::NAN);
            } else {
                r.ceiling = triad_for(c.threads);
            }
            Ok(r)
        });
        match row {
            Ok(r) => rows.push(r),
            Err(e) => {
                println!("{} ({} threads): skipped: {e}", c.label, c.threads);
                chosen_skipped |= !only.is_empty();
            }
        }
    }
    // Across MPI ranks, one thread each, beside the one-process rows above.
    if cfg!(feature = "mpi") {
        for (ranks, backend) in [(1, "seq"), (2, "seq"), (2, "openmp")] {
            if !only.is_empty() && !only.iter().any(|o| o == backend) {
                continue;
            }
            match run_ranks(ranks, backend, iters, ij, &mesh_args) {
                Ok(mut r) => {
                    r.ceiling = triad_for(ranks);
                    rows.push(r);
                }
                Err(e) => {
                    println!("mpi {ranks}x {backend}: skipped: {e}");
                    chosen_skipped |= !only.is_empty();
                }
            }
        }
    }
    // The library's byte count applies to the baseline too: same loops, same data.
    let bytes = rows
        .iter()
        .find(|r| r.bytes_per_iter.is_finite())
        .map(|r| r.bytes_per_iter);
    if let Some(b) = bytes {
        rows[0].bytes_per_iter = b;
    }

    let base_ms = rows[0].ms_per_iter;
    println!(
        "\n{:<18} {:>3} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>12}",
        "configuration",
        "thr",
        "ms/iter",
        "ratio",
        "save",
        "adt",
        "res",
        "bres",
        "update",
        "GB/s",
        "%ceil",
        "residual"
    );
    for r in &rows {
        let gbs = r.bytes_per_iter / (r.ms_per_iter * 1e-3) / 1e9;
        println!(
            "{:<18} {:>3} {:>9.2} {:>7.3} {:>9.2} {:>9.2} {:>9.2} {:>9.3} {:>9.2} {:>7.1} {:>6.0}% {:>12}",
            r.name,
            r.threads,
            r.ms_per_iter,
            r.ms_per_iter / base_ms,
            r.loop_ms[0],
            r.loop_ms[1],
            r.loop_ms[2],
            r.loop_ms[3],
            r.loop_ms[4],
            gbs,
            100.0 * gbs / r.ceiling,
            format_residual(r.residual)
        );
    }
    if let Some(b) = bytes {
        println!(
            "bytes moved per iteration (OP2's convention): {:.0} MB",
            b / 1e6
        );
    }
    println!("%ceil: GB/s against the STREAM triad (host rows) or the GPU's copy rate (cuda rows)");
    for r in &rows {
        if let Some((ranks, halo, wait)) = r.ranks {
            println!(
                "{}: {ranks} rank(s) x 1 thread, halo {:.3} MB sent per iteration (all ranks), waiting {:.1}% of loop time",
                r.name,
                halo / 1e6,
                100.0 * wait
            );
        }
    }
    // Past the per-loop floor: what loop-at-a-time execution must move, at the 2-thread
    // triad's rate, against the 2-thread rows; what SIMD batches and tiling change.
    let row =
        |name: &str, threads: usize| rows.iter().find(|r| r.name == name && r.threads == threads);
    if let (Some(b), Some(t2)) = (bytes, triads.iter().find(|(t, _)| *t == 2).map(|p| p.1)) {
        let floor = b / (t2 * 1e9) * 1e3;
        println!("per-loop floor (bytes / 2-thread triad): {floor:.2} ms per iteration");
        for name in ["openmp", "openmp, tiled", "openmp, no SIMD"] {
            if let Some(r) = row(name, 2) {
                println!(
                    "  {name}, 2 threads: {:.2} ms = {:.3} x the floor",
                    r.ms_per_iter,
                    r.ms_per_iter / floor
                );
            }
        }
    }
    for (threads, on, off) in [(1, "seq", "seq, no SIMD"), (2, "openmp", "openmp, no SIMD")] {
        if let (Some(on), Some(off)) = (row(on, threads), row(off, threads)) {
            println!(
                "SIMD batches on {}: res_calc {:.3} x its scalar time, adt_calc {:.3}, iteration {:.3}",
                on.name,
                on.loop_ms[2] / off.loop_ms[2],
                on.loop_ms[1] / off.loop_ms[1],
                on.ms_per_iter / off.ms_per_iter
            );
        }
    }
    for (threads, on, off) in [(1, "seq, tiled", "seq"), (2, "openmp, tiled", "openmp")] {
        if let (Some(on), Some(off)) = (row(on, threads), row(off, threads)) {
            println!(
                "tiled / default on {}: {:.3} per iteration",
                off.name,
                on.ms_per_iter / off.ms_per_iter
            );
        }
    }
    let seq_ms = rows.iter().find(|r| r.name == "seq").map(|r| r.ms_per_iter);
    let one_rank = rows
        .iter()
        .find(|r| r.name == "mpi 1x seq")
        .map(|r| r.ms_per_iter);
    let two_ranks = rows
        .iter()
        .find(|r| r.name == "mpi 2x seq")
        .map(|r| r.ms_per_iter);
    if let (Some(two), Some(one), Some(seq)) = (two_ranks, one_rank, seq_ms) {
        println!(
            "speed-up of 2 ranks: {:.2}x over 1 rank, {:.2}x over seq in one process",
            one / two,
            seq / two
        );
    }
    // Same residuals everywhere; against OP2-Common's when the run stops at a reference point.
    let first = format_residual(rows[0].residual);
    let same = rows.iter().all(|r| format_residual(r.residual) == first);
    println!(
        "residuals {} across configurations",
        if same { "agree" } else { "DIFFER" }
    );
    if ij == STANDARD_IJ && iters % 100 == 0 && iters <= 1000 {
        let reference = REFERENCE_RESIDUALS[iters / 100 - 1];
        println!(
            "reference residual at {iters}: {reference} ({})",
            if first == reference {
                "matches"
            } else {
                "DIFFERS"
            }
        );
    }
    memory_table(&memory_configs, ij);
    if !same || chosen_skipped {
        std::process::exit(1);
    }
}

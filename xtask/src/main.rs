//! `cargo xtask`: project automation with no dependencies beyond std (see matklad/cargo-xtask).
//!
//! - `cargo xtask test [--install-deps]`: checks the system packages the suite needs (installing them
//!   when asked: gcc and PoCL for OpenCL with apt, NVRTC for CUDA from PyPI into `target/nvrtc`),
//!   then runs the workspace tests with every backend feature this machine supports, the facade
//!   suite again on each other backend, the conformance run, the Python package's tests and
//!   examples (`python/`), and the Rust examples.
//! - `cargo xtask bench [--iterations N] [--ij I J] [--shuffle SEED] [--renumber]`: Airfoil on the
//!   standard mesh (or it shuffled and/or renumbered) on every usable backend and thread count
//!   beside a hand-written Rust baseline and STREAM triad, one process; then the lazy graph's
//!   bench, loops over an extruded mesh against the same mesh declared unstructured, and
//!   Python beside Rust (Airfoil from one `new_grid.h5`, and `par_loop`'s cost from Python).
//! - `cargo xtask python`, `cargo xtask bench-python`: only the Python package's tests and
//!   examples, or only its rows of the bench.
//! - `cargo xtask bench-la [--repeats N] [--assembly-n N]`: op2-la's figures in one process: the
//!   sparsity of Airfoil's cell-to-node pattern, Poisson stiffness assembly on seq and openmp (1 and
//!   2 threads, interleaved rounds), and native CG + Jacobi beside PETSc's on a 200 x 200 problem.
//! - `cargo xtask gpu-check [--bundle [DIR] | --run DIR]`: every GPU check (conformance, device
//!   tests, Airfoil and the bench on `cuda`), from a bundle of binaries that runs on a GPU machine
//!   without a toolchain (see `gpu.rs`).
//! - `cargo xtask airfoil-mpi [--iterations N] [--ranks 1,2,3,4] [--backend seq,openmp]
//!   [--partitioner metis,geometric,blocks] [--hdf5]`: Airfoil under `mpirun` at each rank count,
//!   backend and partitioner (from OP2's HDF5 file read in slices, with VTK and PNG output, under
//!   `--hdf5`); fails unless every run prints OP2-Common's residuals (see `mpi.rs`).
//! - `cargo xtask setup-scaling [--cells N] [--ranks 1,2,4,8] [--partitioner geometric,ptscotch,metis]`:
//!   the distributed setup's memory, time and cut per rank count and partitioner (see `mpi.rs`).
//! - `cargo xtask conformance [--backend NAME]... [--require NAME]... [--random N]`: every backend
//!   (or the named ones) against the sequential reference, each in its own process; prints a table
//!   of case x backend.
//! - `cargo xtask fuzz [--seconds N] [--backend LABEL]... [--seed S]`: the differential fuzzer on
//!   every backend configuration (or the named ones), N seconds each (see `fuzz.rs`).

mod chaos;
mod conformance;
mod docs;
mod fuzz;
mod gpu;
#[cfg(test)]
mod layering;
mod mpi;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Something on the system the suite needs, how to tell it is there, and the Debian packages that
/// provide it.
struct SystemDep {
    what: &'static str,
    /// A shell test that succeeds when it is present.
    check: &'static str,
    packages: &'static [&'static str],
    why: &'static str,
    /// Without it the suite cannot run at all (else the backend that needs it is skipped).
    required: bool,
}

const SYSTEM_DEPS: &[SystemDep] = &[
    SystemDep {
        what: "a C compiler (`cc`)",
        check: "command -v cc",
        packages: &["gcc"],
        why: "compiles generated kernels (host backends)",
        required: true,
    },
    SystemDep {
        what: "the C compiler's C++ front end (`cc -x c++`)",
        check: "echo 'int main() { return 0; }' | cc -x c++ -fsyntax-only - >/dev/null 2>&1",
        packages: &["g++"],
        why: "the CUDA emulator compiles generated CUDA as C++ (the suite requires cuda-emulator)",
        required: true,
    },
    SystemDep {
        what: "an OpenCL driver (ICD)",
        check: OPENCL_CHECK,
        packages: &["pocl-opencl-icd", "ocl-icd-opencl-dev", "clinfo"],
        why: "PoCL's CPU OpenCL device runs the opencl backend's tests",
        required: false,
    },
    SystemDep {
        what: "Open MPI (library, headers, `mpirun`) and libclang",
        check: "command -v mpirun && command -v mpicc && (ls /usr/lib/llvm-*/lib/libclang*.so* || ls /usr/lib/x86_64-linux-gnu/libclang*.so*) >/dev/null 2>&1",
        packages: &[
            "libopenmpi-dev",
            "openmpi-bin",
            "libclang-dev",
            "pkg-config",
        ],
        why: "op2-mpi links MPI (rsmpi generates its bindings with libclang) and its tests run `mpirun -np 1..4`",
        required: true,
    },
    SystemDep {
        what: "HDF5 (library, headers, `h5dump`)",
        check: "pkg-config --exists hdf5 && command -v h5dump",
        packages: &["libhdf5-dev", "hdf5-tools", "pkg-config"],
        why: "op2-hdf5 links HDF5 (OP2's mesh files); its tests check files with h5dump",
        required: true,
    },
    SystemDep {
        what: "PETSc 3.18 (library, headers, pkg-config file)",
        check: "pkg-config --exists PETSc",
        packages: &["libpetsc-real-dev", "pkg-config"],
        why: "op2-la's `petsc` feature solves with PETSc's KSP; its tests compare the native solvers with it",
        required: true,
    },
    SystemDep {
        what: "LAPACK (`-llapack`)",
        check: "echo 'void dgetrf_(void); int main(void) { dgetrf_(); return 0; }' | cc -x c - -llapack -o /dev/null",
        packages: &["liblapack-dev"],
        why: "today's PyOP2 callables (pyop2.codegen.rep2loopy's inverse and solve) link kernels with LAPACK; the Python tests run them",
        required: true,
    },
    SystemDep {
        what: "PT-Scotch (library and headers)",
        check: "test -f /usr/include/scotch/ptscotch.h || test -f /usr/include/ptscotch.h",
        packages: &["libptscotch-dev"],
        why: "op2-mpi's `ptscotch` feature partitions on the distributed graph; its tests run it under mpirun",
        required: true,
    },
    SystemDep {
        what: "ParMETIS's interface (PT-Scotch's implementation)",
        check: "test -f /usr/include/parmetis/parmetis.h || test -f /usr/include/parmetis.h",
        packages: &["libscotchparmetis-dev"],
        why: "op2-mpi's `parmetis` feature runs METIS across ranks on the distributed graph; its tests run it under mpirun",
        required: true,
    },
    SystemDep {
        what: "Python's venv module and headers",
        check: "python3 -m venv --help >/dev/null 2>&1",
        packages: &["python3-venv", "python3-dev"],
        why: "the op2rs Python package is built (maturin, numpy from PyPI) and tested in a venv",
        required: true,
    },
    SystemDep {
        what: "Python with h5py and meshio",
        check: FILE_TOOLS_CHECK,
        packages: &["python3-h5py", "python3-meshio"],
        why: "the file-format tests read files made by h5py and open VTK output with meshio",
        required: false,
    },
];

/// Whether Debian's Python has the readers the file-format tests compare against.
const FILE_TOOLS_CHECK: &str = "/usr/bin/python3 -c 'import h5py, meshio' >/dev/null 2>&1";

/// Where `--install-deps` puts NVRTC (the PyPI wheel of CUDA 12.8's), relative to the workspace.
const NVRTC_TARGET: &str = "target/nvrtc";

/// The wheel: NVRTC runs without a GPU, so CI compiles every generated CUDA kernel with it.
const NVRTC_WHEEL: &str = "nvidia-cuda-nvrtc-cu12==12.8.93";

/// The directory holding the installed `libnvrtc.so.12`.
fn nvrtc_dir() -> PathBuf {
    root().join(NVRTC_TARGET).join("nvidia/cuda_nvrtc/lib")
}

/// NVRTC for the CUDA tests: `OP2_NVRTC` when the user set it, else the copy `--install-deps`
/// installed, else none (the CUDA tests then check the emulator only).
fn nvrtc() -> Option<PathBuf> {
    if let Some(p) = env::var_os("OP2_NVRTC") {
        return Some(PathBuf::from(p));
    }
    let d = nvrtc_dir();
    d.join("libnvrtc.so.12").exists().then_some(d)
}

/// The op2rs Python package: built from `python/` into a venv under `target/` (maturin and
/// numpy from PyPI), then its pytest suite on every host backend and the CUDA emulator, and
/// on OpenCL where the driver is there.
/// The `target/pyenv` virtual environment with maturin, NumPy, pytest, h5py, mpi4py, loopy and petsc4py from
/// PyPI and the op2rs package built from `python/` with MPI: its Python.
fn python_env() -> Result<PathBuf, String> {
    let venv = root().join("target/pyenv");
    if !venv.join("bin/python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    let py = venv.join("bin/python");
    run(Command::new(&py).args([
        "-m",
        "pip",
        "install",
        "-q",
        "maturin>=1.5,<2",
        "numpy",
        "pytest",
        "h5py",
        // Its wheel loads the system's Open MPI: the distributed example shares MPI with it.
        "mpi4py",
        // Today's PyOP2 takes kernels written with loopy (LoopyLocalKernel): the package turns
        // them into C with loopy's own code generator, and its tests do so.
        "loopy",
    ]))?;
    install_petsc4py(&py)?;
    run(Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--force-reinstall",
            "--no-deps",
        ])
        .arg(root().join("python"))
        // Across ranks too (op2-mpi, with PT-Scotch): maturin reads its cargo arguments from
        // here.
        .env("MATURIN_PEP517_ARGS", "--features mpi,ptscotch,parmetis"))?;
    Ok(py)
}

/// petsc4py built against the system's PETSc (a required system package), at PETSc's own
/// version: the tests of `Mat.handle` and the `vec` contexts and the PETSc solve of the
/// today's-API Poisson example need it. PyPI has its source only; pip builds it once (a few
/// minutes) and keeps the wheel in its cache.
fn install_petsc4py(py: &Path) -> Result<(), String> {
    let pkg_config = |arg: &str| -> Result<String, String> {
        let out = Command::new("pkg-config")
            .args([arg, "PETSc"])
            .output()
            .map_err(|e| format!("pkg-config: {e}"))?;
        if !out.status.success() {
            return Err("pkg-config knows no PETSc: run `cargo xtask deps --install`".into());
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let version = pkg_config("--modversion")?;
    let prefix = pkg_config("--variable=prefix")?;
    // Its build runs setup.py in this venv (no isolation), with the Cython it was made for.
    run(Command::new(py).args([
        "-m",
        "pip",
        "install",
        "-q",
        "cython<3",
        "setuptools",
        "wheel",
    ]))?;
    run(Command::new(py)
        .args(["-m", "pip", "install", "-q", "--no-build-isolation"])
        .arg(format!("petsc4py=={version}"))
        .env("PETSC_DIR", prefix)
        .env_remove("PETSC_ARCH"))
}

/// OP2's `new_grid.h5` for the standard mesh, written by the Rust Airfoil example.
fn airfoil_h5() -> Result<PathBuf, String> {
    let mesh = root().join("target/new_grid.h5");
    let mut c = cargo();
    c.args(["run", "--release", "-p", "airfoil", "--example", "airfoil"]);
    c.args(["--features", "hdf5", "--", "--write-mesh"])
        .arg(&mesh);
    run(c.args(["--iterations", "0", "--no-progress"]))?;
    Ok(mesh)
}

/// The Python package's tests, then its examples: Jacobi, Aero and today's-API Poisson on every
/// backend (checked against NumPy or the exact solution; Poisson under mpirun too), the distributed and hand-built-halo examples under mpirun, Airfoil on OpenMP from the `new_grid.h5` the Rust example writes (OP2's ten
/// residuals) and Airfoil with vector maps (its first two).
fn python_tests(features: &[&str]) -> Result<(), String> {
    let py = python_env()?;
    let mut backends = vec!["sequential", "openmp", "cuda-emulator"];
    if features.contains(&"opencl") {
        backends.push("opencl");
    }
    // From outside `python/`, so that the installed package (with its native module) is the
    // one imported.
    let python = |args: &[&str]| {
        let mut c = Command::new(&py);
        c.args(args).current_dir(root().join("target"));
        c
    };
    let examples = root().join("python/examples");
    for b in &backends {
        run(python(&["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(root().join("python/tests"))
            .env("OP2RS_TEST_BACKEND", b))?;
        run(python(&[])
            .arg(examples.join("jacobi.py"))
            .args(["--backend", b]))?;
        // PyOP2's Aero (soa=True, OP2_STRIDE, CG from loops) on the mesh it writes, checked
        // against NumPy.
        run(python(&[])
            .arg(examples.join("aero.py"))
            .args(["--backend", b]))?;
        // Today's PyOP2 API (`from pyop2 import op2`): P1 Poisson from packed kernels, its
        // error second order against the exact solution.
        run(python(&[])
            .arg(examples.join("poisson_today.py"))
            .args(["--backend", b]))?;
    }
    {
        let mut c = mpi::mpirun(2, 300);
        c.arg(&py).arg(examples.join("poisson_today.py"));
        run(c.current_dir(root().join("target")))?;
    }
    // Across ranks: a mesh partitioned from Python, checked against NumPy (every rank handing
    // in the mesh at 2 ranks, with MPI started by mpi4py too; rank 0 alone at 3 on OpenMP).
    for (ranks, input, backend, extra) in [
        (2, "everywhere", "sequential", None),
        (2, "everywhere", "sequential", Some("--mpi4py")),
        (3, "root", "openmp", None),
    ] {
        let mut c = mpi::mpirun(ranks, 300);
        c.arg(&py).arg(examples.join("distributed.py"));
        c.args(["--input", input, "--backend", backend]);
        run(c.args(extra).current_dir(root().join("target")))?;
    }
    // From a mesh file: each of 4 ranks reads only its slices, PT-Scotch partitions the graph
    // where it lies; checked against NumPy on the whole file.
    let grid = root().join("target/distributed_grid.h5");
    run(python(&[])
        .arg(examples.join("distributed.py"))
        .arg("--write-mesh")
        .arg(&grid)
        .args(["--n", "60"]))?;
    {
        let mut c = mpi::mpirun(4, 300);
        c.arg(&py).arg(examples.join("distributed.py"));
        c.arg("--mesh").arg(&grid);
        c.args(["--input", "slices", "--partitioner", "ptscotch"]);
        run(c.current_dir(root().join("target")))?;
    }
    // PyOP2's hand-built halos: each rank's part of a chain in local numbers, checked against
    // NumPy on the whole chain.
    for (ranks, backend) in [(2, "sequential"), (3, "openmp")] {
        let mut c = mpi::mpirun(ranks, 300);
        c.arg(&py).arg(examples.join("halo.py"));
        run(c
            .args(["--backend", backend])
            .current_dir(root().join("target")))?;
    }
    // A matrix's PETSc handle across ranks: op2rs's and PETSc's solves agree, and each sees
    // the other's writes.
    {
        let mut c = mpi::mpirun(2, 300);
        c.arg(&py).arg(examples.join("handle_ranks.py"));
        run(c.current_dir(root().join("target")))?;
    }
    // Today's halos: each rank's Halo object (mpi4py) fills ghosts and sends their increments
    // to their owners; checked against NumPy on the whole ring.
    for (ranks, backend) in [(2, "sequential"), (3, "openmp")] {
        let mut c = mpi::mpirun(ranks, 300);
        c.arg(&py).arg(examples.join("halo_today.py"));
        run(c
            .args(["--backend", backend])
            .current_dir(root().join("target")))?;
    }
    let mesh = airfoil_h5()?;
    run(python(&[])
        .arg(examples.join("airfoil.py"))
        .arg("--mesh")
        .arg(&mesh)
        .args(["--backend", "openmp"]))?;
    // PyOP2's airfoil_vector (whole map rows, kernels declaring arrays longer than the rows):
    // its first residuals against OP2-Common's.
    run(python(&[])
        .arg(examples.join("airfoil_vector.py"))
        .arg("--mesh")
        .arg(&mesh)
        .args(["--backend", "openmp", "--iterations", "200"]))
}

/// Python beside Rust: Airfoil's time per iteration from the Rust example and from the Python
/// one on the same mesh file and backend, runs alternating; then the cost of a `par_loop` call
/// from Python (`python/bench/overhead.py`).
fn python_bench(iterations: usize) -> Result<(), String> {
    let py = python_env()?;
    let mesh = airfoil_h5()?;
    let rust = root().join("target/release/examples/airfoil");
    let per_iteration = |out: &str| -> Option<f64> {
        let line = out.lines().find(|l| l.contains("ms per iteration"))?;
        line.split(": ")
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let n = iterations.to_string();
    let (mut best_rs, mut best_py) = (f64::INFINITY, f64::INFINITY);
    for round in 1..=2 {
        let mut r = Command::new(&rust);
        r.arg("--mesh").arg(&mesh);
        r.args(["--backend", "openmp", "--iterations", &n, "--no-progress"]);
        let mut p = Command::new(&py);
        p.arg(root().join("python/examples/airfoil.py"))
            .arg("--mesh")
            .arg(&mesh)
            .args(["--backend", "openmp", "--iterations", &n])
            .current_dir(root().join("target"));
        for (label, cmd, best) in [("rust", r, &mut best_rs), ("python", p, &mut best_py)] {
            let mut cmd = cmd;
            let out = cmd.output().map_err(|e| format!("{label} airfoil: {e}"))?;
            let text = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() {
                return Err(format!("{label} airfoil failed:\n{text}"));
            }
            let ms = per_iteration(&text)
                .ok_or_else(|| format!("{label} airfoil printed no time:\n{text}"))?;
            println!("airfoil openmp, round {round}, {label}: {ms:.2} ms per iteration");
            *best = best.min(ms);
        }
    }
    println!(
        "airfoil openmp, best of 2: rust {best_rs:.2} ms, python {best_py:.2} ms per iteration \
         (python / rust = {:.3}; the goal is at most 1.1)",
        best_py / best_rs
    );
    for b in ["sequential", "openmp"] {
        run(Command::new(&py)
            .arg(root().join("python/bench/overhead.py"))
            .args(["--backend", b])
            .current_dir(root().join("target")))?;
    }
    Ok(())
}

/// Installs NVRTC from PyPI (pip, itself from apt when missing).
fn install_nvrtc() -> Result<(), String> {
    if !sh_ok("python3 -m pip --version") {
        run(Command::new("apt-get").args([
            "install",
            "-y",
            "--no-install-recommends",
            "python3-pip",
        ]))?;
    }
    let target = root().join(NVRTC_TARGET);
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--break-system-packages",
            "--upgrade",
            "--target",
        ])
        .arg(&target)
        .arg(NVRTC_WHEEL))
}

/// An ICD loader and at least one driver registered with it.
const OPENCL_CHECK: &str =
    "ls /etc/OpenCL/vendors/*.icd && (ldconfig -p | grep -q 'libOpenCL.so.1')";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("deps") => deps(&args[1..]),
        Some("conformance") => conformance::run(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("bench-la") => bench_la(&args[1..]),
        Some("python") => python_tests(&host_features()),
        Some("bench-python") => python_bench(1000),
        Some("gpu-check") => gpu::run(&args[1..]),
        Some("airfoil-mpi") => mpi::airfoil(&args[1..]),
        Some("setup-scaling") => mpi::setup_scaling(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("chaos") => chaos::run_chaos(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask test [--install-deps]\n       cargo xtask deps [--install]\n       cargo xtask conformance [--backend NAME]... [--require NAME]... [--random N]\n       cargo xtask bench [--iterations N] [--ij I J] [--backend NAME]... [--shuffle SEED] [--renumber]\n       cargo xtask bench-la [--repeats N] [--assembly-n N]\n       cargo xtask python\n       cargo xtask bench-python\n       cargo xtask gpu-check [--bundle [DIR] | --run DIR]\n       cargo xtask fuzz [--seconds N] [--backend LABEL]... [--seed S] [--max-set N]\n       cargo xtask airfoil-mpi [--iterations N] [--ranks 1,2,3,4] [--backend seq,openmp] [--partitioner metis,geometric,blocks] [--ij I J] [--renumber] [--hdf5]\n       cargo xtask setup-scaling [--cells N] [--ranks 1,2,4,8] [--partitioner geometric,ptscotch,metis]\n       cargo xtask chaos [--crashes N] [--seed S] [--ij I J] [--iterations N] [--every N] [--no-mpi]"
            );
            Err("unknown or missing command".into())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
        .to_path_buf()
}

fn sh_ok(check: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("({check}) >/dev/null 2>&1"))
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether an OpenCL driver is installed.
fn have_opencl() -> bool {
    sh_ok(OPENCL_CHECK)
}

/// Prints what is missing; installs it with apt when `install` is set.
fn check_system_deps(install: bool) -> Result<(), String> {
    let missing: Vec<&SystemDep> = SYSTEM_DEPS.iter().filter(|d| !sh_ok(d.check)).collect();
    if missing.is_empty() {
        if install {
            pin_serial_hdf5()?;
        }
        return Ok(());
    }
    let packages: Vec<&str> = missing
        .iter()
        .flat_map(|d| d.packages.iter().copied())
        .collect();
    for d in &missing {
        eprintln!(
            "missing {} (Debian packages {}): {}",
            d.what,
            d.packages.join(" "),
            d.why
        );
    }
    let line = format!(
        "apt-get update && apt-get install -y {}",
        packages.join(" ")
    );
    if !install {
        if missing.iter().any(|d| d.required) {
            return Err(format!(
                "install the missing packages: {line}\n(or run `cargo xtask test --install-deps` as root)"
            ));
        }
        eprintln!("xtask: going on without them ({line} would add them)");
        return Ok(());
    }
    run(Command::new("apt-get").arg("update"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&packages))?;
    pin_serial_hdf5()
}

/// PETSc's packages bring Open MPI's HDF5, whose `hdf5.pc` alternative outranks the serial one;
/// op2-hdf5 is built against serial HDF5 (ranks write through rank 0), so point `hdf5.pc` back.
fn pin_serial_hdf5() -> Result<(), String> {
    let serial = "/usr/lib/x86_64-linux-gnu/pkgconfig/hdf5-serial.pc";
    let current = Command::new("update-alternatives")
        .args(["--query", "hdf5.pc"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let points_elsewhere = current
        .lines()
        .any(|l| l.starts_with("Value:") && !l.ends_with("hdf5-serial.pc"));
    if Path::new(serial).exists() && points_elsewhere {
        run(Command::new("update-alternatives").args(["--set", "hdf5.pc", serial]))?;
    }
    Ok(())
}

/// Installs NVRTC when asked and missing; says what the CUDA tests will check either way.
fn check_nvrtc(install: bool) -> Result<Option<PathBuf>, String> {
    if nvrtc().is_none() {
        if install {
            install_nvrtc()?;
        } else {
            eprintln!(
                "xtask: no NVRTC (set OP2_NVRTC, or `cargo xtask test --install-deps` installs \
                 {NVRTC_WHEEL} from PyPI into {NVRTC_TARGET}): the CUDA tests check the emulator only"
            );
        }
    }
    Ok(nvrtc())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

fn cargo() -> Command {
    Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Whether the C compiler builds OpenMP code (gcc ships libgomp; clang needs libomp).
fn have_openmp() -> bool {
    Command::new("sh")
        .arg("-c")
        .arg("printf 'int main(void){return 0;}' | cc -fopenmp -x c - -o /dev/null >/dev/null 2>&1")
        .status()
        .is_ok_and(|s| s.success())
}

/// The Cargo features of the backends this machine can build and run.
fn host_features() -> Vec<&'static str> {
    let mut f = Vec::new();
    if have_openmp() {
        f.push("openmp");
    } else {
        eprintln!("xtask: the C compiler lacks OpenMP support; skipping the openmp backend");
    }
    if have_opencl() {
        f.push("opencl");
    } else {
        eprintln!("xtask: no OpenCL driver is installed; skipping the opencl backend");
    }
    // CUDA builds anywhere (the driver and NVRTC are opened at run time); its host emulator runs
    // everywhere, the `cuda` backend itself where there is a GPU.
    f.push("cuda");
    f
}

/// The facade's test binary that runs again on each device backend (`cache` tests the host
/// compiler's caches, `backends` chooses its own backends).
const DEVICE_SUITE: [&str; 1] = ["suite"];

/// Checks (and with `--install`, installs) the system packages building and testing need: CI
/// runs it first, since even `cargo clippy` on the workspace links MPI.
fn deps(args: &[String]) -> Result<(), String> {
    let install = args.iter().any(|a| a == "--install");
    if let Some(bad) = args.iter().find(|a| *a != "--install") {
        return Err(format!("unknown option `{bad}`"));
    }
    check_system_deps(install)?;
    check_nvrtc(install).map(drop)
}

fn test(args: &[String]) -> Result<(), String> {
    let install = args.iter().any(|a| a == "--install-deps");
    if let Some(bad) = args.iter().find(|a| *a != "--install-deps") {
        return Err(format!("unknown option `{bad}`"));
    }
    check_system_deps(install)?;
    let nvrtc = check_nvrtc(install)?;
    // The CUDA tests compile every generated kernel with NVRTC when it is there, and must.
    let cuda_env: Vec<(&str, std::ffi::OsString)> = match &nvrtc {
        Some(d) => vec![
            ("OP2_NVRTC", d.clone().into_os_string()),
            ("OP2_REQUIRE_NVRTC", "1".into()),
        ],
        None => Vec::new(),
    };
    let features = host_features();
    let mut ws_features: Vec<String> = features.iter().map(|f| format!("op2/{f}")).collect();
    ws_features.extend(features.iter().map(|f| format!("op2-conformance/{f}")));
    // Distributed meshes: the facade's `mpi`, Airfoil's partition tests and table, the suite
    // across ranks.
    ws_features.extend([
        "op2/mpi".to_string(),
        "airfoil/mpi".to_string(),
        "op2-conformance/mpi".to_string(),
        // The wave example's mpirun test.
        "wave/mpi".to_string(),
        // The Poisson problem's tests across thread ranks.
        "poisson/mpi".to_string(),
        // The fuzzer's programs on thread ranks (its seed tests).
        "op2-fuzz/ranks".to_string(),
        // OP2's HDF5 files, in the facade and in Airfoil.
        "op2/hdf5".to_string(),
        "airfoil/hdf5".to_string(),
        // PETSc beside the native solvers (op2-la's comparison tests, la-bench).
        "op2/petsc".to_string(),
        // PT-Scotch's distributed partitioner in op2-mpi's mpirun and memory tests.
        "op2/ptscotch".to_string(),
        // METIS across ranks (ParMETIS's call) in the same tests.
        "op2/parmetis".to_string(),
        "airfoil/petsc".to_string(),
    ]);
    let ws_features = ws_features.join(",");
    let with_features = |cmd: &mut Command| {
        if !ws_features.is_empty() {
            cmd.args(["--features", &ws_features]);
        }
    };
    // Backends that must start here: the suite's `--require`s, and Airfoil's conformance test
    // (in its own crate, so the suite needs no app) reads the same list.
    let mut must_start = vec!["seq"];
    for f in ["openmp", "opencl", "cuda-emulator"] {
        if features.contains(&f) || (f == "cuda-emulator" && features.contains(&"cuda")) {
            must_start.push(f);
        }
    }
    let mut c = cargo();
    c.args(["test", "--workspace", "--all-targets"]);
    with_features(&mut c);
    c.env("OP2_REQUIRE_BACKENDS", must_start.join(","));
    // Where the readers are installed the file-format tests must use them, not skip.
    if sh_ok(FILE_TOOLS_CHECK) {
        c.env("OP2_REQUIRE_FILE_TOOLS", "1");
    } else {
        eprintln!(
            "xtask: no Python with h5py and meshio; the file-format tests skip their readers"
        );
    }
    run(c.envs(cuda_env.iter().cloned()))?;
    run(cargo().args(["test", "--workspace", "--doc"]))?;
    // The facade's suite computes its expected values independently; rerun it on the OpenMP
    // backend with 1, 2 and 3 threads, small blocks on some runs so that its meshes span many.
    if features.contains(&"openmp") {
        for (threads, part) in [
            ("1", None),
            ("2", Some("32")),
            ("3", None),
            ("3", Some("16")),
        ] {
            let mut c = cargo();
            // Every loop on every thread, however small its mesh.
            c.args(["test", "-p", "op2", "--features", "openmp", "--tests"])
                .env("OP2_TEST_BACKEND", "openmp")
                .env("OMP_NUM_THREADS", threads)
                .env("OP2_OMP_MIN_PER_THREAD", "1");
            match part {
                Some(p) => c.env("OP2_PART_SIZE", p),
                None => c.env_remove("OP2_PART_SIZE"),
            };
            run(&mut c)?;
        }
    }
    // The facade suite on the OpenCL device, minus the host-compiler cache tests: with the
    // device's own scheme (the host scheme on PoCL), then with the staged scheme GPUs run.
    if features.contains(&"opencl") {
        for scheme in [None, Some("staged")] {
            let mut c = cargo();
            c.args(["test", "-p", "op2", "--features", "opencl"]);
            for t in DEVICE_SUITE {
                c.args(["--test", t]);
            }
            match scheme {
                Some(s) => c.env("OP2_OPENCL_SCHEME", s),
                None => c.env_remove("OP2_OPENCL_SCHEME"),
            };
            run(c.env("OP2_TEST_BACKEND", "opencl"))?;
        }
    }
    // The facade suite on the CUDA backend's generated code, run by the host emulator: the
    // default strategy, then colouring and staged atomics with small blocks.
    if features.contains(&"cuda") {
        for (strategy, part) in [
            (None, None),
            (Some("colour"), Some("32")),
            (Some("staged-atomics"), Some("32")),
        ] {
            let mut c = cargo();
            c.args(["test", "-p", "op2", "--features", "cuda"]);
            for t in DEVICE_SUITE {
                c.args(["--test", t]);
            }
            c.env("OP2_TEST_BACKEND", "cuda-emulator");
            match strategy {
                Some(s) => c.env("OP2_CUDA_STRATEGY", s),
                None => c.env_remove("OP2_CUDA_STRATEGY"),
            };
            match part {
                Some(p) => c.env("OP2_PART_SIZE", p),
                None => c.env_remove("OP2_PART_SIZE"),
            };
            run(&mut c)?;
        }
    }
    let required: Vec<String> = must_start
        .iter()
        .flat_map(|b| ["--require".to_string(), b.to_string()])
        .collect();
    conformance::run(&required)?;
    python_tests(&features)?;
    // The GPU check's bundle, run on the CUDA emulator, so that it works when a GPU is lent.
    let bundle = root().join("target/gpu-check-ci");
    gpu::bundle(&bundle, false)?;
    gpu::check(&bundle, true)?;
    run(cargo().args(["run", "--release", "-p", "op2", "--example", "midpoint"]))?;
    // The extruded column model: exits non-zero unless its error falls as h².
    run(cargo().args(["run", "--release", "-p", "op2", "--example", "extruded"]))?;
    // The Poisson problem (op2-la): exits non-zero unless its observed order is within 2 +- 0.1;
    // in one process, then at 2 ranks under mpirun (mesh partitioned, assembled and solved
    // across the ranks).
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "poisson",
        "--bin",
        "poisson",
        "--features",
        "mpi",
    ]))?;
    let poisson = root().join("target/release/poisson");
    run(&mut Command::new(&poisson))?;
    run(mpi::mpirun(2, 600)
        .arg(&poisson)
        .args(["--sizes", "8,16,32,64,128"]))?;
    // README command one: Airfoil on the default backend; it exits non-zero unless its residuals
    // match OP2-Common's reference.
    run(cargo().args(["run", "--release", "--example", "airfoil"]))?;
    // Airfoil under mpirun, 100 iterations: OP2-Common's first residual at 2 and 3 ranks, both
    // host backends, two partitioners (`cargo xtask airfoil-mpi` runs the whole matrix).
    mpi::airfoil(&[
        "--iterations".into(),
        "100".into(),
        "--ranks".into(),
        "2,3".into(),
        "--backend".into(),
        if features.contains(&"openmp") {
            "seq,openmp".into()
        } else {
            "seq".into()
        },
        "--partitioner".into(),
        "metis,blocks".into(),
    ])?;
    // The same from OP2's HDF5 file, each rank reading its slice, with VTK pieces and a picture.
    mpi::airfoil(&[
        "--iterations".into(),
        "100".into(),
        "--ranks".into(),
        "2".into(),
        "--backend".into(),
        "seq".into(),
        "--partitioner".into(),
        "metis".into(),
        "--hdf5".into(),
    ])?;
    // Crash safety: Airfoil killed 20 times and restarted, on one process and on 2 ranks, then a
    // 2-rank checkpoint restarted on 1 and 3 ranks (`cargo xtask chaos` at full size).
    chaos::run_chaos(
        &[
            "--ij",
            "200",
            "100",
            "--iterations",
            "300",
            "--every",
            "5",
            "--features",
            "mpi,hdf5",
        ]
        .map(String::from),
    )?;
    eprintln!("xtask: all tests passed");
    Ok(())
}

fn bench_la(args: &[String]) -> Result<(), String> {
    check_system_deps(false)?;
    let mut features: Vec<&str> = host_features();
    features.push("petsc");
    let mut c = cargo();
    c.args(["run", "--release", "-p", "airfoil", "--bin", "la-bench"]);
    c.arg("--no-default-features");
    c.args(["--features", &features.join(",")]);
    run(c.arg("--").args(args))
}

fn bench(args: &[String]) -> Result<(), String> {
    check_system_deps(false)?;
    let mut c = cargo();
    c.args([
        "run",
        "--release",
        "-p",
        "airfoil",
        "--bin",
        "airfoil-bench",
    ]);
    // The host backends built here, and MPI for the rows across ranks.
    let mut features: Vec<&str> = host_features();
    features.push("mpi");
    c.arg("--no-default-features");
    c.args(["--features", &features.join(",")]);
    run(c.arg("--").args(args))?;
    // The lazy graph: its overhead, fusion, and the wave example and Airfoil with its
    // optimisations off and on (rows across 2 MPI ranks too).
    let mut c = cargo();
    c.args(["run", "--release", "-p", "wave", "--bin", "lazy-bench"]);
    c.arg("--no-default-features");
    c.args(["--features", &features.join(",")]);
    run(&mut c)?;
    // Extruded meshes: the same loops walked column by column and over explicit 3-D maps.
    let mut c = cargo();
    c.args([
        "run",
        "--release",
        "-p",
        "op2",
        "--features",
        "openmp",
        "--example",
        "extruded-bench",
    ]);
    run(&mut c)?;
    // Python over the same library: Airfoil beside the Rust example, and par_loop's overhead.
    let iterations = args
        .iter()
        .position(|a| a == "--iterations")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(1000);
    python_bench(iterations)
}

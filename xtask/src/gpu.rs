//! `cargo xtask gpu-check`: everything GPU-related in one command, runnable on a GPU machine that
//! has the binaries but no Rust toolchain.
//!
//! - `cargo xtask gpu-check --bundle [DIR]` builds, here, a self-contained folder (default
//!   `target/gpu-check`): release binaries of the conformance runner, the fuzzer, the facade's device tests,
//!   Airfoil and its bench, this xtask, NVRTC compressed (when `--install-deps` put it in
//!   `target/nvrtc`), and `gpu-check.sh`.
//! - `DIR/gpu-check.sh` (that is, `xtask gpu-check --run DIR`) runs, on the GPU machine: the
//!   conformance suite requiring `cuda` with each strategy and small blocks, the device-state,
//!   hardening, classic, errors, misuse and aliasing tests on `cuda` with each strategy (`colour`,
//!   `atomics`, `staged-atomics`), random programs from the differential fuzzer on each, Airfoil on
//!   `cuda` with each (its residuals must match OP2-Common's), and the bench's `cuda` rows; then a
//!   summary. Exit status 0 only when every step passed.
//! - `cargo xtask gpu-check` does both, on a machine with a toolchain and a GPU.

use crate::conformance::{self, Runner};
use crate::{cargo, root};
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The facade's tests run on `cuda`: each test binary with the modules of it that run (libtest
/// filters: a test runs when its path contains one of them).
const TESTS: [(&str, &[&str]); 2] = [
    ("backends", &["device_states::"]),
    (
        "suite",
        &["hardening::", "classic::", "bad_input::", "aliasing::"],
    ),
];

/// Random programs the fuzzer runs on each strategy (two on the emulator).
const FUZZ_PROGRAMS: &str = "20";

/// The CUDA strategies every step runs with.
const STRATEGIES: [&str; 3] = ["colour", "atomics", "staged-atomics"];

/// Where the bundle goes unless told.
const DEFAULT_BUNDLE: &str = "target/gpu-check";

pub fn run(args: &[String]) -> Result<(), String> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        [] => {
            let dir = root().join(DEFAULT_BUNDLE);
            bundle(&dir, false)?;
            check(&dir, false)
        }
        ["--bundle"] => bundle(&root().join(DEFAULT_BUNDLE), true),
        ["--bundle", dir] => bundle(&absolute(dir), true),
        ["--run", dir] => check(&absolute(dir), false),
        // The same steps on the CUDA emulator (Airfoil on a small grid, no bench): a check of
        // the bundle itself on a machine without a GPU.
        ["--run", dir, "--emulate"] => check(&absolute(dir), true),
        _ => Err("usage: cargo xtask gpu-check [--bundle [DIR] | --run DIR [--emulate]]".into()),
    }
}

fn absolute(dir: &str) -> PathBuf {
    let p = PathBuf::from(dir);
    if p.is_absolute() {
        p
    } else {
        env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    }
}

/// Builds the binaries (release, `cuda` feature) and copies them, stripped, into `dir`, with
/// NVRTC packed beside them when `pack_nvrtc` (a bundle that travels to another machine).
pub fn bundle(dir: &Path, pack_nvrtc: bool) -> Result<(), String> {
    let tests = dir.join("tests");
    fs::create_dir_all(&tests).map_err(|e| format!("{}: {e}", tests.display()))?;
    crate::run(cargo().args([
        "build",
        "--release",
        "-p",
        "op2-conformance",
        "--features",
        "cuda",
        "--bin",
        "op2-conformance",
    ]))?;
    crate::run(cargo().args([
        "build",
        "--release",
        "-p",
        "op2-fuzz",
        "--features",
        "cuda",
        "--bin",
        "op2-fuzz",
    ]))?;
    crate::run(cargo().args([
        "build",
        "--release",
        "-p",
        "airfoil",
        "--example",
        "airfoil",
        "--bin",
        "airfoil-bench",
    ]))?;
    let release = root().join("target/release");
    copy_binary(
        &release.join("op2-conformance"),
        &dir.join("op2-conformance"),
    )?;
    copy_binary(&release.join("op2-fuzz"), &dir.join("op2-fuzz"))?;
    copy_binary(&release.join("examples/airfoil"), &dir.join("airfoil"))?;
    copy_binary(&release.join("airfoil-bench"), &dir.join("airfoil-bench"))?;
    for (name, exe) in test_executables()? {
        copy_binary(&exe, &tests.join(name))?;
    }
    let me = env::current_exe().map_err(|e| format!("this xtask's path: {e}"))?;
    copy_binary(&me, &dir.join("xtask"))?;
    let nvrtc = root()
        .join(crate::NVRTC_TARGET)
        .join("nvidia/cuda_nvrtc/lib");
    let packed = dir.join("nvrtc.tar.xz");
    if pack_nvrtc && nvrtc.join("libnvrtc.so.12").exists() && !packed.exists() {
        eprintln!("xtask: packing NVRTC into {} (a minute)", packed.display());
        crate::run(
            Command::new("tar")
                .arg("-C")
                .arg(&nvrtc)
                .arg("-cJf")
                .arg(&packed)
                .args(["libnvrtc.so.12", "libnvrtc-builtins.so.12.8"]),
        )?;
    }
    let script = dir.join("gpu-check.sh");
    fs::write(
        &script,
        "#!/bin/sh\n# Runs op2-rs's GPU checks from this folder (see xtask/src/gpu.rs).\n\
         here=$(cd \"$(dirname \"$0\")\" && pwd)\nexec \"$here/xtask\" gpu-check --run \"$here\"\n",
    )
    .map_err(|e| format!("{}: {e}", script.display()))?;
    chmod_x(&script)?;
    eprintln!(
        "xtask: GPU check bundle in {}; on the GPU machine run {}",
        dir.display(),
        script.display()
    );
    Ok(())
}

/// The release test binaries of [`TESTS`], built with the `cuda` feature, by name.
fn test_executables() -> Result<Vec<(String, PathBuf)>, String> {
    let mut c = cargo();
    c.current_dir(root()).args([
        "test",
        "--release",
        "-p",
        "op2",
        "--features",
        "cuda",
        "--no-run",
        "--message-format=json",
    ]);
    for (t, _) in TESTS {
        c.args(["--test", t]);
    }
    let out = c
        .output()
        .map_err(|e| format!("building the test binaries: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building the test binaries failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // One JSON object per line; the artifacts of test targets carry their executable's path.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    for (t, _) in TESTS {
        let name = format!("\"name\":\"{t}\"");
        let exe = text
            .lines()
            .filter(|l| l.contains(&name) && l.contains("\"test\":true"))
            .find_map(|l| json_string(l, "executable"))
            .ok_or(format!("no test executable for `{t}` in cargo's output"))?;
        found.push((t.to_string(), PathBuf::from(exe)));
    }
    Ok(found)
}

/// The string value of `"key":"..."` in one line of JSON (paths hold no escaped quotes here).
fn json_string(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let end = start + line[start..].find('"')?;
    Some(line[start..end].replace("\\\\", "\\"))
}

fn copy_binary(from: &Path, to: &Path) -> Result<(), String> {
    fs::copy(from, to).map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))?;
    // Debug info makes the bundle several times larger; a bundle must travel.
    let _ = Command::new("strip").arg("--strip-debug").arg(to).status();
    chmod_x(to)
}

fn chmod_x(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// One step's outcome.
struct Step {
    name: String,
    ok: bool,
    seconds: f64,
    note: String,
}

/// Runs every check from the bundle in `dir` on `cuda`, or on `cuda-emulator` when `emulate`.
pub fn check(dir: &Path, emulate: bool) -> Result<(), String> {
    let backend = if emulate { "cuda-emulator" } else { "cuda" };
    let started = Instant::now();
    let mut env_vars: Vec<(String, String)> = Vec::new();
    match nvrtc(dir)? {
        Some(path) => {
            eprintln!("xtask: NVRTC from {}", path.display());
            env_vars.push(("OP2_NVRTC".into(), path.display().to_string()));
        }
        None => eprintln!("xtask: no NVRTC found; the cuda backend will say so"),
    }
    if let Ok(out) = Command::new("nvidia-smi").arg("-L").output() {
        eprint!("{}", String::from_utf8_lossy(&out.stdout));
    }
    let with_env = |c: &mut Command| {
        for (k, v) in &env_vars {
            c.env(k, v);
        }
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut step = |name: String, f: &mut dyn FnMut() -> Result<String, String>| {
        eprintln!("xtask: gpu-check: {name}");
        let t = Instant::now();
        let (ok, note) = match f() {
            Ok(n) => (true, n),
            Err(e) => (false, e),
        };
        eprintln!(
            "xtask: gpu-check: {name}: {}",
            if ok { "ok" } else { "FAILED" }
        );
        steps.push(Step {
            name,
            ok,
            seconds: t.elapsed().as_secs_f64(),
            note,
        });
    };

    // A GPU must be usable at all; otherwise nothing else means anything.
    let conformance_bin = dir.join("op2-conformance");
    let mut usable = false;
    step(format!("the {backend} backend is usable"), &mut || {
        let mut c = Command::new(&conformance_bin);
        with_env(&mut c);
        let out = c
            .args(["probe", backend])
            .output()
            .map_err(|e| e.to_string())?;
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        usable = out.status.success();
        if usable { Ok(said) } else { Err(said) }
    });
    if usable {
        step(
            format!(
                "conformance on {backend} (colour, atomics, staged-atomics, 16-element blocks)"
            ),
            &mut || {
                let args: Vec<String> = ["--backend", backend, "--require", backend]
                    .map(String::from)
                    .to_vec();
                let runner = Runner::Binary(conformance_bin.clone(), env_vars.clone());
                conformance::run_with(&runner, &args).map(|()| String::new())
            },
        );
        for strategy in STRATEGIES {
            for (t, modules) in TESTS {
                let what = modules.join(" ");
                step(
                    format!("tests/{t} {what} on {backend} ({strategy})"),
                    &mut || {
                        let mut c = Command::new(dir.join("tests").join(t));
                        c.args(modules.iter());
                        with_env(&mut c);
                        // The backend under check must start: its tests fail instead of skipping.
                        c.env("OP2_TEST_BACKEND", backend)
                            .env("OP2_CUDA_STRATEGY", strategy)
                            .env("OP2_REQUIRE_BACKENDS", backend);
                        if !emulate {
                            c.env("OP2_REQUIRE_CUDA", "1");
                        }
                        status_of(&mut c)
                    },
                );
            }
        }
        for strategy in STRATEGIES {
            let programs = if emulate { "2" } else { FUZZ_PROGRAMS };
            step(
                format!(
                    "{programs} random programs on {backend} ({strategy}) against the reference"
                ),
                &mut || {
                    let mut c = Command::new(dir.join("op2-fuzz"));
                    with_env(&mut c);
                    c.args(["run", &format!("{backend}/{strategy}")]).args([
                        "--programs",
                        programs,
                        "--seed",
                        "1",
                    ]);
                    status_of(&mut c)
                },
            );
        }
        for strategy in STRATEGIES {
            step(format!("Airfoil on {backend} ({strategy})"), &mut || {
                let mut c = Command::new(dir.join("airfoil"));
                with_env(&mut c);
                c.args(["--backend", backend])
                    .env("OP2_CUDA_STRATEGY", strategy);
                if emulate {
                    c.args(["--iterations", "2", "--ij", "20", "30"]);
                }
                let out = output_of(&mut c)?;
                // Keep the residual lines and the timing for the summary.
                Ok(out
                    .lines()
                    .filter(|l| l.contains("per iteration") || l.contains("residuals"))
                    .collect::<Vec<_>>()
                    .join("; "))
            });
        }
        if !emulate {
            step("the bench's cuda rows".into(), &mut || {
                let mut c = Command::new(dir.join("airfoil-bench"));
                with_env(&mut c);
                c.args(["--backend", "cuda"]);
                output_of(&mut c)
            });
        }
    }

    println!(
        "\nop2-rs GPU check on {backend} ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    for s in &steps {
        println!(
            "  {:<66} {:>6} {:>7.1} s",
            s.name,
            if s.ok { "ok" } else { "FAILED" },
            s.seconds
        );
    }
    for s in steps.iter().filter(|s| !s.note.is_empty()) {
        println!("\n{}:\n{}", s.name, s.note.trim_end());
    }
    let failed = steps.iter().filter(|s| !s.ok).count();
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("gpu-check: {failed} step(s) failed"))
    }
}

/// Runs a command, its output going to ours; `Err` with its status when it fails.
fn status_of(c: &mut Command) -> Result<String, String> {
    let status = c.status().map_err(|e| format!("{c:?}: {e}"))?;
    if status.success() {
        Ok(String::new())
    } else {
        Err(format!("{c:?} failed with {status}"))
    }
}

/// Runs a command and returns its standard output (also shown); `Err` with it when it fails.
fn output_of(c: &mut Command) -> Result<String, String> {
    let out = c.output().map_err(|e| format!("{c:?}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{c:?} failed with {}:\n{text}", out.status))
    }
}

/// NVRTC for the checks: `OP2_NVRTC` as set, else the system's (a CUDA toolkit, whose NVRTC
/// matches its driver best), else the bundle's copy, unpacked once.
fn nvrtc(dir: &Path) -> Result<Option<PathBuf>, String> {
    if let Some(p) = env::var_os("OP2_NVRTC") {
        return Ok(Some(PathBuf::from(p)));
    }
    let system = ["/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"]
        .into_iter()
        .map(PathBuf::from)
        .find(|d| {
            fs::read_dir(d).is_ok_and(|mut it| {
                it.any(|e| {
                    e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libnvrtc.so"))
                })
            })
        });
    if system.is_some() {
        return Ok(system);
    }
    let unpacked = dir.join("nvrtc");
    if unpacked.join("libnvrtc.so.12").exists() {
        return Ok(Some(unpacked));
    }
    let packed = dir.join("nvrtc.tar.xz");
    if !packed.exists() {
        return Ok(None);
    }
    fs::create_dir_all(&unpacked).map_err(|e| format!("{}: {e}", unpacked.display()))?;
    status_of(
        Command::new("tar")
            .arg("-C")
            .arg(&unpacked)
            .arg("-xJf")
            .arg(&packed),
    )?;
    Ok(Some(unpacked))
}

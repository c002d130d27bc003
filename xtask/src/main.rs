//! `cargo xtask`: project automation with no dependencies beyond std (see matklad/cargo-xtask).
//!
//! - `cargo xtask test [--install-deps]`: checks the system packages the suite needs (installing them
//!   with apt when asked), then runs the workspace tests and the examples.

use std::env;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// A command the suite needs and the Debian package that provides it.
struct SystemDep {
    command: &'static str,
    package: &'static str,
    why: &'static str,
}

const SYSTEM_DEPS: &[SystemDep] = &[SystemDep {
    command: "cc",
    package: "gcc",
    why: "compiles generated kernels (host backends)",
}];

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask test [--install-deps]");
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

fn have(command: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {command} >/dev/null 2>&1"))
        .status()
        .is_ok_and(|s| s.success())
}

/// Prints what is missing; installs it with apt when `install` is set.
fn check_system_deps(install: bool) -> Result<(), String> {
    let missing: Vec<&SystemDep> = SYSTEM_DEPS.iter().filter(|d| !have(d.command)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|d| d.package).collect();
    for d in &missing {
        eprintln!(
            "missing `{}` (Debian package {}): {}",
            d.command, d.package, d.why
        );
    }
    let line = format!(
        "apt-get update && apt-get install -y {}",
        packages.join(" ")
    );
    if !install {
        return Err(format!(
            "install the missing packages: {line}\n(or run `cargo xtask test --install-deps` as root)"
        ));
    }
    run(Command::new("apt-get").arg("update"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&packages))
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

fn test(args: &[String]) -> Result<(), String> {
    let install = args.iter().any(|a| a == "--install-deps");
    if let Some(bad) = args.iter().find(|a| *a != "--install-deps") {
        return Err(format!("unknown option `{bad}`"));
    }
    check_system_deps(install)?;
    run(cargo().args(["test", "--workspace", "--all-targets"]))?;
    run(cargo().args(["test", "--workspace", "--doc"]))?;
    run(cargo().args(["run", "--release", "-p", "op2", "--example", "midpoint"]))?;
    eprintln!("xtask: all tests passed");
    Ok(())
}

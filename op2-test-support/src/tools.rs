//! The external tools the file-format tests check against (Python with h5py or meshio, h5dump),
//! for the tests of op2-vtk, op2-hdf5 and Airfoil.

use std::path::Path;
use std::process::Command;

/// Whether the external-tool tests must run (`cargo xtask test` sets `OP2_REQUIRE_FILE_TOOLS`
/// after installing the tools); otherwise a missing tool skips them with a message.
pub fn tools_required() -> bool {
    std::env::var_os("OP2_REQUIRE_FILE_TOOLS").is_some()
}

/// A Python that imports `module`: `OP2_PYTHON`, else Debian's, else the one on the PATH. `None`
/// (with a message) where there is none and the tools are not required; a panic where they are.
pub fn python_with(module: &str, debian_package: &str) -> Option<String> {
    let candidates = std::env::var("OP2_PYTHON")
        .into_iter()
        .chain(["/usr/bin/python3".to_string(), "python3".to_string()]);
    for p in candidates {
        let ok = Command::new(&p)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(p);
        }
    }
    assert!(
        !tools_required(),
        "OP2_REQUIRE_FILE_TOOLS is set but no Python has {module}"
    );
    eprintln!("skipped: no Python with {module} (apt-get install {debian_package})");
    None
}

/// Runs `script` with `args` and returns what it printed; a failing script fails the test.
pub fn run_python(python: &str, script: &str, args: &[&Path]) -> String {
    output_of(Command::new(python).args(["-c", script]).args(args))
}

/// Runs a tool and returns what it printed (trimmed); a tool that fails fails the test, with its
/// error output.
pub fn output_of(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

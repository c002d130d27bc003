//! The distributed setup's memory under `mpirun` at 1, 2, 4 and 8 ranks: `setup-scaling` (this
//! crate's binary) has every rank generate only its slice of a quad mesh of two million cells in
//! scrambled numbering, partition it, and report its peak memory during the setup (a counting
//! allocator). A hidden gather of the mesh anywhere makes the peak stop shrinking with the rank
//! count, and makes some rank's peak reach the size of the whole connectivity: both fail here
//! (every rank at 8 ranks must stay below half of the maps, with every distributed partitioner:
//! geometric, PT-Scotch and METIS through ParMETIS's call).

use std::process::Command;

/// One line of `setup-scaling`'s figures as key=value pairs.
fn figures(line: &str) -> std::collections::HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn run(ranks: usize, partitioner: &str, cells: usize) -> std::collections::HashMap<String, String> {
    let out = Command::new("mpirun")
        .args([
            "-np",
            &ranks.to_string(),
            "--oversubscribe",
            "--timeout",
            "600",
        ])
        .arg(env!("CARGO_BIN_EXE_setup-scaling"))
        .args(["--cells", &cells.to_string(), "--partitioner", partitioner])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OP2_MPI_TIMEOUT", "500")
        .output()
        .unwrap_or_else(|e| panic!("mpirun could not start ({e}); install openmpi-bin"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{partitioner} at {ranks} ranks failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("setup "))
        .unwrap_or_else(|| panic!("no figures from {partitioner} at {ranks} ranks:\n{stdout}"));
    eprintln!("{line}");
    figures(line)
}

fn number(f: &std::collections::HashMap<String, String>, key: &str) -> f64 {
    f[key].parse().unwrap()
}

/// Checks `partitioner` at 1, 2, 4 and 8 ranks: every rank at 8 ranks must peak below half the
/// maps as handed in (32-bit values).
fn check(partitioner: &str) {
    let cells = 2_000_000;
    let one = run(1, partitioner, cells);
    let mut last = f64::INFINITY;
    for ranks in [2, 4, 8] {
        let f = run(ranks, partitioner, cells);
        assert_eq!(
            f["owned_ok"], "true",
            "{partitioner}: elements lost or owned twice"
        );
        let peak = number(&f, "peak_max");
        assert!(
            peak < last,
            "{partitioner}: the peak grew from {last} to {peak} at {ranks} ranks"
        );
        last = peak;
        if ranks == 8 {
            let ratio = peak / number(&one, "peak_max");
            assert!(
                ratio <= 0.3,
                "{partitioner}: the largest peak at 8 ranks is {ratio:.3} of the peak at 1 rank"
            );
            // The maps as handed in (32-bit values): a rank that gathered them would fail.
            let connectivity = number(&f, "connectivity_bytes");
            let limit = 0.5 * connectivity;
            assert!(
                peak < limit,
                "{partitioner}: a rank peaked at {peak} bytes, the maps take {connectivity}"
            );
        }
    }
}

/// One test, the partitioners in turn: two `mpirun -np 8` at once would share the cores.
#[test]
fn the_setup_needs_less_memory_per_rank_as_ranks_grow() {
    check("geometric");
    // PT-Scotch's graph goes to its home ranks in rounds: 0.49 of the maps at 8 ranks, as the
    // geometric setup (docs/05-ranks.md).
    if cfg!(feature = "ptscotch") {
        check("ptscotch");
    }
    // METIS across ranks is ParMETIS's call on the same distributed graph.
    if cfg!(feature = "parmetis") {
        check("metis");
    }
}

//! Airfoil as a conformance case: 20 lazy iterations on a small grid, every backend built here
//! compared with the sequential reference by the suite's own runner and tolerances. It lives with
//! the application (not in `op2-conformance`) so the library's suite never depends on an app.

use airfoil::{Airfoil, Constants, Mesh};
use op2::Result;
use op2_conformance::{Case, CaseRuntime, Outcome, Outputs, probe, run_case};

/// All five loops, the residual history, the final flow state and the last update's largest change.
/// (One process: Airfoil across ranks has its own tests in `partition.rs`.)
fn airfoil_small(rt: &CaseRuntime) -> Result<Outputs> {
    let mesh = Mesh::generate(20, 30);
    let a = Airfoil::new(rt.plain()?, &mesh, &Constants::default())?;
    let residuals: Vec<f64> = (0..20).map(|_| a.step()).collect::<Result<_>>()?;
    let mut o = Outputs::new();
    o.push("residuals", &residuals);
    o.push("q", &a.q()?);
    o.push("max_change", &[a.max_change()?]);
    Ok(o)
}

const AIRFOIL_SMALL: Case = Case {
    name: "airfoil_small",
    about: "Airfoil, 20 iterations on a 20 x 30 O-grid",
    tolerance: 1e-10,
    run: airfoil_small,
};

/// Backends a device build requires (as `cargo xtask test` sets `OP2_REQUIRE_BACKENDS`) may not
/// be skipped; others are skipped with a note when they cannot start here.
#[test]
fn airfoil_conforms_on_every_backend() {
    let mut ran = 0;
    for backend in op2::backends().iter().map(|b| b.name) {
        if let Err(why) = probe(backend) {
            assert!(
                !op2_test_support::backend_required(backend),
                "{backend} is required but cannot start: {why}"
            );
            eprintln!("{backend}: not checked here: {why}");
            continue;
        }
        let outcome = run_case(&AIRFOIL_SMALL, backend);
        assert_eq!(outcome, Outcome::Pass, "Airfoil on {backend}");
        ran += 1;
    }
    assert!(ran >= 1, "not even the reference ran");
}

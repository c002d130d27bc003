//! A deliberately broken backend (the reference, then one value corrupted) must be caught by the
//! suite, with the first differing value named.

use op2::{
    ArgKind, Backend, BackendFactory, Config, DType, LoopInvocation, LoopSignature, PreparedLoop,
    Result,
};
use op2_conformance::{Outcome, run_suite};
use std::sync::Arc;

/// Runs the sequential backend, then adds one to the first value of the first Dat a loop writes.
struct Broken(Box<dyn Backend>);

struct BrokenLoop(Arc<dyn PreparedLoop>);

impl Backend for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        Ok(Arc::new(BrokenLoop(self.0.prepare(sig)?)))
    }
}

impl PreparedLoop for BrokenLoop {
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        self.0.run(inv)?;
        let written = inv
            .sig
            .args
            .iter()
            .position(|a| a.kind != ArgKind::Global && a.access.writes());
        if let (Some(i), true) = (written, inv.end > inv.start) {
            let p = inv.args[i];
            // SAFETY: the arg is a locked, non-empty Dat of this dtype (the runtime checked it).
            unsafe {
                match inv.sig.args[i].dtype {
                    DType::F64 => *p.cast::<f64>() += 1.0,
                    DType::F32 => *p.cast::<f32>() += 1.0,
                    DType::I32 => *p.cast::<i32>() += 1,
                    DType::U32 => *p.cast::<u32>() += 1,
                    DType::I64 => *p.cast::<i64>() += 1,
                    DType::U64 => *p.cast::<u64>() = (*p.cast::<u64>()).wrapping_add(1),
                    DType::C64 => *p.cast::<f32>() += 1.0,
                    DType::C128 => *p.cast::<f64>() += 1.0,
                }
            }
        }
        Ok(())
    }
}

fn create(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(Broken((op2::find_backend("seq")?.create)(
        config,
    )?)))
}

op2::register_backend!(BackendFactory {
    name: "broken",
    feature: "",
    description: "test only: seq with one value corrupted per loop",
    create,
    settings: &[],
});

#[test]
fn a_corrupted_value_is_caught_and_named() {
    let results = run_suite("broken", 8);
    let outcome = |case: &str| {
        results
            .iter()
            .find(|r| r.case == case)
            .map(|r| r.outcome.clone())
            .unwrap()
    };
    assert_eq!(
        outcome("direct_write"),
        Outcome::Fail("x[0]: expected 42, got 43".into())
    );
    assert!(matches!(outcome("random_loops"), Outcome::Fail(_)));
    // Loops over an empty set write nothing, so there is nothing to corrupt.
    assert_eq!(outcome("zero_size_set"), Outcome::Pass);
    let failed = results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
        .count();
    assert!(failed >= 25, "only {failed} cases caught the corruption");
}

#[test]
fn the_reference_conforms_to_itself() {
    op2_conformance::assert_conforms("seq");
}

#[test]
fn a_backend_missing_from_the_build_is_skipped_with_the_reason() {
    let skipped_because = |backend: &str, why: &str| {
        let results = run_suite(backend, 0);
        assert!(
            results.iter().all(|r| matches!(
                &r.outcome,
                Outcome::Skipped(w) if w.contains(why)
            )),
            "{backend}: {:?}",
            results[0].outcome
        );
    };
    skipped_because("no-such-backend", "not registered in this build");
    // A first-party backend outside this build (there is one unless every feature is on) is
    // skipped naming the feature that brings it.
    let built: Vec<&str> = op2::backends().iter().map(|b| b.name).collect();
    if let Some((name, feature)) = op2::FIRST_PARTY_BACKENDS
        .iter()
        .find(|b| !built.contains(&b.0))
    {
        skipped_because(name, &format!("feature `{feature}`"));
    }
}

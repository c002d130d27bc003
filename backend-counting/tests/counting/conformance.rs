//! The conformance suite, run from this crate as any third-party backend would, and a check that
//! the suite really went through this backend.

op2_conformance::conformance_tests!("counting", backend_counting::LINKED);

#[test]
fn loops_go_through_the_counting_backend() {
    let (_, runs_before) = backend_counting::counts();
    op2_conformance::run_case(&op2_conformance::cases()[0], "counting");
    let (prepared, runs) = backend_counting::counts();
    assert!(prepared >= 1);
    assert!(runs > runs_before, "{runs} runs, {runs_before} before");
}

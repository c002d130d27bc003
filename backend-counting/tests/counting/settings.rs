//! A third-party backend's own setting goes through the runtime like a first-party one: declared
//! with the backend, listed, read from its environment variable or `builder().setting`, checked,
//! and handed to the backend in its configuration.

use op2::{Kernel, Op2Error, READ, WRITE};

fn counting() -> op2::RuntimeBuilder {
    std::hint::black_box(&backend_counting::LINKED);
    op2::builder().backend("counting")
}

#[test]
fn the_setting_is_declared_and_listed() {
    std::hint::black_box(&backend_counting::LINKED);
    let s = op2::known_settings()
        .into_iter()
        .find(|s| s.name == "counting_inner")
        .expect("backend-counting declares counting_inner");
    assert_eq!(s.env, "OP2_COUNTING_INNER");
    assert_eq!(s.default, "seq");
}

#[test]
fn the_builder_sets_it_and_the_backend_reads_it() {
    let rt = counting().setting("counting_inner", "seq").build().unwrap();
    assert_eq!(rt.config().setting("counting_inner"), Some("seq"));
    let s = rt.decl_set(10, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [2.0f64; 10], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let k = Kernel::new(
        "twice",
        "void twice(const double *x, double *y) { *y = 2 * *x; }",
    )
    .unwrap();
    rt.par_loop(&k, &s, [x.arg(READ), y.arg(WRITE)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![4.0; 10]);
}

#[test]
fn a_value_the_backend_cannot_use_is_its_error() {
    // The setting names another backend; one that does not exist is refused when the backend is
    // made, with the list of those that do.
    match counting().setting("counting_inner", "abacus").build() {
        Err(Op2Error::UnknownBackend { name, .. }) => assert_eq!(name, "abacus"),
        other => panic!("expected UnknownBackend, got {:?}", other.err()),
    }
}

#[test]
fn the_environment_variable_sets_it() {
    let c =
        op2::Config::from_vars(|k| (k == "OP2_COUNTING_INNER").then(|| "seq".to_string())).unwrap();
    assert_eq!(c.setting("counting_inner"), Some("seq"));
}

/// What op2-la asks of a backend (its threads, its memory) is a method of the backend, so a
/// wrapper that forwards them gets the same answers as the backend it wraps.
#[test]
fn a_third_party_backend_reports_its_capabilities() {
    let rt = counting()
        .setting("counting_inner", "seq")
        .num_threads(4)
        .build()
        .unwrap();
    assert_eq!(rt.host_threads(), 1, "seq's loops run on one thread");
    assert!(rt.runs_on_host_memory());
    assert!(!rt.uses_openmp_threads());
}

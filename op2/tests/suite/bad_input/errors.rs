//! Bad input: every misuse gives its specific, typed error (never a panic, a hang or silent damage).

use super::{inc1, mesh};
use op2::{INC, Kernel, MAX, MIN, Op2Error, READ, RW, SetSizes, WRITE};
use op2_test_support::{assert_err, rt};

fn k2() -> Kernel {
    Kernel::new("k2", "void k2(double *a, double *b) { a[0] += b[0]; }").unwrap()
}

// ---- declarations -------------------------------------------------------------------------------

#[test]
fn map_value_too_large() {
    let m = mesh();
    assert_err!(
        m.rt.decl_map(&m.edges, &m.nodes, 2, vec![0, 1, 1, 2, 2, 4], "bad"),
        Op2Error::MapValueOutOfRange {
            row: 2,
            entry: 1,
            value: 4,
            ..
        }
    );
}

#[test]
fn map_value_negative() {
    let m = mesh();
    assert_err!(
        m.rt.decl_map(&m.edges, &m.nodes, 2, vec![0, -1, 1, 2, 2, 3], "bad"),
        Op2Error::MapValueOutOfRange { value: -1, .. }
    );
}

#[test]
fn map_wrong_length() {
    let m = mesh();
    assert_err!(
        m.rt.decl_map(&m.edges, &m.nodes, 2, vec![0, 1, 1, 2], "bad"),
        Op2Error::DataLength {
            what: "map",
            expected: 6,
            actual: 4,
            ..
        }
    );
}

#[test]
fn map_arity_zero() {
    let m = mesh();
    assert_err!(
        m.rt.decl_map(&m.edges, &m.nodes, 0, vec![], "bad"),
        Op2Error::ZeroDimension { what: "map", .. }
    );
}

#[test]
fn map_between_sets_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let s = other.decl_set(3, "foreign").unwrap();
    assert_err!(
        m.rt.decl_map(&s, &m.nodes, 1, vec![0, 0, 0], "bad"),
        Op2Error::ForeignObject { what: "set", .. }
    );
}

#[test]
fn dat_wrong_length() {
    let m = mesh();
    assert_err!(
        m.rt.decl_dat(&m.nodes, 2, [0.0f64; 7], "bad"),
        Op2Error::DataLength {
            what: "dat",
            expected: 8,
            actual: 7,
            ..
        }
    );
}

#[test]
fn dat_dim_zero() {
    let m = mesh();
    assert_err!(
        m.rt.decl_dat::<f64>(&m.nodes, 0, &[], "bad"),
        Op2Error::ZeroDimension { what: "dat", .. }
    );
}

#[test]
fn dat_on_a_set_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let s = other.decl_set(3, "foreign").unwrap();
    assert_err!(
        m.rt.decl_dat_zeros::<f64>(&s, 1, "bad"),
        Op2Error::ForeignObject { .. }
    );
}

#[test]
fn global_wrong_length() {
    let m = mesh();
    assert_err!(
        m.rt.decl_global(2, &[1.0f64], "bad"),
        Op2Error::DataLength { what: "global", .. }
    );
}

#[test]
fn global_dim_zero() {
    let m = mesh();
    assert_err!(
        m.rt.decl_global::<f64>(0, &[], "bad"),
        Op2Error::ZeroDimension { what: "global", .. }
    );
}

#[test]
fn global_set_value_wrong_length() {
    let m = mesh();
    assert_err!(
        m.g.set_value(&[1.0, 2.0]),
        Op2Error::DataLength { what: "global", .. }
    );
}

#[test]
fn const_wrong_length() {
    let m = mesh();
    assert_err!(
        m.rt.decl_const(4, &[1.0f64; 3], "c"),
        Op2Error::DataLength { what: "const", .. }
    );
}

#[test]
fn const_dim_zero() {
    let m = mesh();
    assert_err!(
        m.rt.decl_const::<f64>(0, &[], "c"),
        Op2Error::ZeroDimension { what: "const", .. }
    );
}

#[test]
fn const_name_not_an_identifier() {
    let m = mesh();
    assert_err!(
        m.rt.decl_const(1, &[1.0f64], "2pi"),
        Op2Error::InvalidIdentifier { what: "const", .. }
    );
}

#[test]
fn const_declared_twice() {
    let m = mesh();
    m.rt.decl_const(1, &[1.0f64], "gam").unwrap();
    assert_err!(
        m.rt.decl_const(1, &[2.0f64], "gam"),
        Op2Error::DuplicateConst { .. }
    );
}

#[test]
fn const_set_value_wrong_length() {
    let m = mesh();
    let c = m.rt.decl_const(2, &[1.0f64, 2.0], "pair").unwrap();
    assert_err!(
        c.set_value(&[1.0]),
        Op2Error::DataLength { what: "const", .. }
    );
}

#[test]
fn set_sections_overflow() {
    let m = mesh();
    let sizes = SetSizes {
        core: usize::MAX,
        owned: 1,
        exec_halo: 0,
        nonexec_halo: 0,
    };
    assert_err!(
        m.rt.decl_set_sections(sizes, "huge"),
        Op2Error::SetSizeOverflow { .. }
    );
}

#[test]
fn kernel_name_not_an_identifier() {
    assert_err!(
        Kernel::new("my-kernel", "void f() {}"),
        Op2Error::InvalidIdentifier { what: "kernel", .. }
    );
}

#[test]
fn kernel_source_lacks_the_function() {
    assert_err!(
        Kernel::new("k", "void other(double *a) { }"),
        Op2Error::KernelNotFound { .. }
    );
}

#[test]
fn kernel_source_only_declares_the_function() {
    assert_err!(
        Kernel::new("k", "void k(double *a);"),
        Op2Error::KernelNotFound { .. }
    );
}

// ---- loop args ----------------------------------------------------------------------------------

#[test]
fn map_from_is_not_the_iteration_set() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.cells, [m.xn.arg_via(&m.e2n, 0, INC)]),
        Op2Error::MapFromMismatch { arg: 0, .. }
    );
}

#[test]
fn dat_set_is_not_the_maps_target() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xe.arg_via(&m.e2n, 0, INC)]),
        Op2Error::DatSetMismatch { arg: 0, .. }
    );
}

#[test]
fn row_arg_dat_set_is_not_the_maps_target() {
    let m = mesh();
    let k = Kernel::new("kr", "void kr(double **a) { }").unwrap();
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xe.arg_row(&m.e2n, READ)]),
        Op2Error::DatSetMismatch { .. }
    );
}

#[test]
fn direct_dat_not_on_the_iteration_set() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg(RW)]),
        Op2Error::DirectSetMismatch { arg: 0, .. }
    );
}

#[test]
fn second_arg_errors_name_position_one() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&k2(), &m.edges, [m.xe.arg(RW), m.xn.arg(READ)]),
        Op2Error::DirectSetMismatch { arg: 1, .. }
    );
}

#[test]
fn declared_dim_differs_from_the_dat() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &inc1(),
            &m.edges,
            [op2::op_arg_dat(&m.xe, -1, None, 2, "double", RW)]
        ),
        Op2Error::DimMismatch {
            declared: 2,
            actual: 1,
            ..
        }
    );
}

#[test]
fn declared_type_differs_from_the_dat() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &inc1(),
            &m.edges,
            [op2::op_arg_dat(&m.xe, -1, None, 1, "float", RW)]
        ),
        Op2Error::TypeMismatch {
            declared_by: "the arg",
            ..
        }
    );
}

#[test]
fn declared_dim_differs_from_the_global() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &k2(),
            &m.edges,
            [m.xe.arg(RW), op2::op_arg_gbl(&m.g, 3, "double", INC)]
        ),
        Op2Error::DimMismatch { arg: 1, .. }
    );
}

#[test]
fn declared_type_differs_from_the_global() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &k2(),
            &m.edges,
            [m.xe.arg(RW), op2::op_arg_gbl(&m.g, 1, "int", INC)]
        ),
        Op2Error::TypeMismatch { arg: 1, .. }
    );
}

#[test]
fn min_on_a_dat() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xe.arg(MIN)]),
        Op2Error::ReductionOnDat { .. }
    );
}

#[test]
fn max_on_an_indirect_dat() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg_via(&m.e2n, 1, MAX)]),
        Op2Error::ReductionOnDat { .. }
    );
}

#[test]
fn write_to_a_const() {
    let m = mesh();
    let c = m.rt.decl_const(1, &[1.0f64], "cw").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [c.arg(WRITE)]),
        Op2Error::ConstWrite { .. }
    );
}

#[test]
fn increment_a_const() {
    let m = mesh();
    let c = m.rt.decl_const(1, &[1.0f64], "ci").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [c.arg(INC)]),
        Op2Error::ConstWrite { .. }
    );
}

#[test]
fn write_to_a_global() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.g.arg(WRITE)]),
        Op2Error::GlobalAccess { .. }
    );
}

#[test]
fn rw_on_a_global() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.g.arg(RW)]),
        Op2Error::GlobalAccess { .. }
    );
}

#[test]
fn map_index_equal_to_arity() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg_via(&m.e2n, 2, INC)]),
        Op2Error::MapIndexOutOfRange {
            index: 2,
            arity: 2,
            ..
        }
    );
}

#[test]
fn op2_style_negative_index_that_is_not_the_whole_row() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &inc1(),
            &m.edges,
            [op2::op_arg_dat(&m.xn, -3, Some(&m.e2n), 1, "double", INC)]
        ),
        Op2Error::MapIndexOutOfRange { index: -3, .. }
    );
}

#[test]
fn op2_style_index_without_a_map() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &inc1(),
            &m.edges,
            [op2::op_arg_dat(&m.xe, 0, None, 1, "double", RW)]
        ),
        Op2Error::InvalidArg { .. }
    );
}

#[test]
fn too_few_args_for_the_kernel() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&k2(), &m.edges, [m.xe.arg(RW)]),
        Op2Error::KernelParamCount {
            params: 2,
            args: 1,
            ..
        }
    );
}

#[test]
fn too_many_args_for_the_kernel() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xe.arg(RW), m.g.arg(INC)]),
        Op2Error::KernelParamCount {
            params: 1,
            args: 2,
            ..
        }
    );
}

#[test]
fn kernel_parameter_type_differs_from_the_dat() {
    let m = mesh();
    let k = Kernel::new("kf", "void kf(float *a) { a[0] = 1.0f; }").unwrap();
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xe.arg(WRITE)]),
        Op2Error::TypeMismatch {
            declared_by: "the kernel parameter",
            ..
        }
    );
}

#[test]
fn whole_row_arg_given_to_a_plain_pointer() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg_row(&m.e2n, READ)]),
        Op2Error::KernelParamShape {
            expected: "an array of pointers",
            ..
        }
    );
}

#[test]
fn direct_arg_given_to_an_array_of_pointers() {
    let m = mesh();
    let k = Kernel::new("kp", "void kp(double *a[2]) { }").unwrap();
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xe.arg(READ)]),
        Op2Error::KernelParamShape {
            expected: "a pointer",
            ..
        }
    );
}

#[test]
fn loop_over_a_set_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let s = other.decl_set(3, "foreign").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &s, [m.xe.arg(RW)]),
        Op2Error::ForeignObject { what: "set", .. }
    );
}

#[test]
fn loop_with_a_dat_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let s = other.decl_set(3, "edges").unwrap();
    let d = other.decl_dat_zeros::<f64>(&s, 1, "foreign").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [d.arg(RW)]),
        Op2Error::ForeignObject { what: "dat", .. }
    );
}

#[test]
fn loop_with_a_map_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let (a, b) = (
        other.decl_set(3, "edges").unwrap(),
        other.decl_set(4, "nodes").unwrap(),
    );
    let fm = other.decl_map(&a, &b, 1, vec![0, 1, 2], "fm").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg_via(&fm, 0, INC)]),
        Op2Error::ForeignObject { what: "map", .. }
    );
}

#[test]
fn host_guard_alive_while_a_loop_writes() {
    let m = mesh();
    let eager = op2::builder()
        .backend(&op2_test_support::backend())
        .lazy(false)
        .build()
        .unwrap();
    let s = eager.decl_set(3, "s").unwrap();
    let x = eager.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let guard = x.data_ro().unwrap();
    assert_err!(
        eager.par_loop(&inc1(), &s, [x.arg(RW)]),
        Op2Error::DataBorrowed { .. }
    );
    drop(guard);
    drop(m);
}

#[test]
fn kernel_that_does_not_compile() {
    let m = mesh();
    let k = Kernel::new(
        "broken",
        "void broken(double *a) { a[0] = undefined_symbol + ; }",
    )
    .unwrap();
    match m.rt.par_loop(&k, &m.edges, [m.xe.arg(RW)]) {
        Err(Op2Error::Compile {
            message,
            source_path,
            kernel,
            ..
        }) => {
            assert_eq!(kernel, "broken");
            assert!(message.contains("error"), "compiler message: {message}");
            let kept = std::fs::read_to_string(&source_path).expect("generated source is kept");
            assert!(kept.contains("undefined_symbol"));
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn compiler_that_does_not_exist() {
    if matches!(op2_test_support::backend().as_str(), "opencl" | "cuda") {
        // Device backends compile with their device's compiler: the host C compiler is unused.
        let rt = op2::builder()
            .backend(&op2_test_support::backend())
            .cc("/nonexistent/op2-cc")
            .build();
        assert!(rt.is_ok(), "{:?}", rt.err());
        return;
    }
    assert_err!(
        op2::builder()
            .backend(&op2_test_support::backend())
            .cc("/nonexistent/op2-cc")
            .build(),
        Op2Error::CompilerNotFound { .. }
    );
}

#[test]
fn unknown_backend_lists_the_available_ones() {
    match op2::builder().backend("quantum").build() {
        Err(Op2Error::UnknownBackend { name, available }) => {
            assert_eq!(name, "quantum");
            assert!(available.contains(&"seq".to_string()), "{available:?}");
        }
        other => panic!("expected UnknownBackend, got {:?}", other.err()),
    }
}

#[test]
fn first_party_backend_without_its_feature() {
    // Asking for a first-party backend left out of the build names its feature instead of failing
    // as unknown. The build with every feature has none left out; `cargo xtask test` reruns this
    // suite with one backend feature at a time, where the others are.
    let built: Vec<&str> = op2::backends().iter().map(|b| b.name).collect();
    let Some(absent) = op2::FIRST_PARTY_BACKENDS
        .iter()
        .find(|b| !built.contains(&b.0))
    else {
        eprintln!("every first-party backend is built in: checked by the single-feature reruns");
        return;
    };
    assert_err!(
        op2::builder().backend(absent.0).build(),
        Op2Error::BackendNotEnabled { .. }
    );
}

#[test]
fn zero_threads_is_a_config_error() {
    assert_err!(
        op2::builder().backend("seq").num_threads(0).build(),
        Op2Error::Config { .. }
    );
}

#[test]
fn errors_name_the_objects_involved() {
    let m = mesh();
    let err =
        m.rt.par_loop(&inc1(), &m.cells, [m.xn.arg_via(&m.e2n, 0, INC)])
            .unwrap_err()
            .to_string();
    for word in ["inc1", "e2n", "edges", "cells"] {
        assert!(err.contains(word), "`{err}` should name `{word}`");
    }
    let _ = (&m.nodes, &m.g);
}

#[test]
fn mutable_host_guard_alive_while_a_lazy_loop_is_recorded_and_flushed() {
    // Recording must not wait on the data (it would hang); running it reports the live guard.
    let m = mesh();
    let mut guard = m.xe.data().unwrap();
    guard[0] = 1.0;
    m.rt.par_loop(&inc1(), &m.edges, [m.xe.arg(RW)]).unwrap();
    assert_err!(m.rt.flush(), Op2Error::DataBorrowed { .. });
    drop(guard);
}

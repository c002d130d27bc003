//! More bad input, as a new user gets it wrong: odd names, wrong shapes and types of every kind,
//! access modes that make no sense, objects of other runtimes, settings out of range, kernels that
//! do not compile, data too large for a device. Each case asserts its error variant; none may
//! panic, hang or crash. `cargo xtask test` runs this file on every backend.

use super::{Mesh, inc1, mesh};
use op2::{INC, Kernel, MAX, MIN, Op2Error, READ, RW, SetSizes, WRITE, op_arg_dat};
use op2_test_support::{assert_err, backend, kernel, rt};

// ---- names -----------------------------------------------------------------------------------

#[test]
fn const_with_an_empty_name() {
    assert_err!(
        rt().decl_const(1, &[1.0f64], ""),
        Op2Error::InvalidIdentifier { what: "const", .. }
    );
}

#[test]
fn const_with_a_space_in_its_name() {
    assert_err!(
        rt().decl_const(1, &[1.0f64], "gas constant"),
        Op2Error::InvalidIdentifier { .. }
    );
}

#[test]
fn const_with_a_non_ascii_name() {
    assert_err!(
        rt().decl_const(1, &[1.0f64], "γ"),
        Op2Error::InvalidIdentifier { .. }
    );
}

#[test]
fn const_named_with_the_generated_prefix() {
    assert_err!(
        rt().decl_const(1, &[1.0f64], "op2_gam"),
        Op2Error::ReservedIdentifier { what: "const", .. }
    );
}

#[test]
fn const_named_with_the_generated_prefix_in_capitals() {
    assert_err!(
        rt().decl_const(1, &[1.0f64], "OP2_GAM"),
        Op2Error::ReservedIdentifier { .. }
    );
}

#[test]
fn const_named_like_a_c_keyword() {
    for name in ["while", "return", "static", "sizeof", "unsigned"] {
        assert_err!(
            rt().decl_const(1, &[1i32], name),
            Op2Error::ReservedIdentifier { .. }
        );
    }
}

#[test]
fn const_named_like_a_standard_type() {
    assert_err!(
        rt().decl_const(1, &[1i32], "uint64_t"),
        Op2Error::ReservedIdentifier { .. }
    );
}

#[test]
fn const_with_a_double_underscore() {
    assert_err!(
        rt().decl_const(1, &[1i32], "__secret"),
        Op2Error::ReservedIdentifier { .. }
    );
}

#[test]
fn const_declared_twice_with_another_type() {
    let rt = rt();
    rt.decl_const(1, &[1i32], "c").unwrap();
    assert_err!(
        rt.decl_const(2, &[1.0f64, 2.0], "c"),
        Op2Error::DuplicateConst { .. }
    );
}

#[test]
fn kernel_with_an_empty_name() {
    assert_err!(
        Kernel::new("", "void f(double *a) {}"),
        Op2Error::InvalidIdentifier { what: "kernel", .. }
    );
}

#[test]
fn kernel_name_with_a_dash() {
    assert_err!(
        Kernel::new("res-calc", "void res_calc(double *a) {}"),
        Op2Error::InvalidIdentifier { .. }
    );
}

#[test]
fn kernel_named_with_the_generated_prefix() {
    assert_err!(
        Kernel::new("op2_kernel", "void op2_kernel(double *a) {}"),
        Op2Error::ReservedIdentifier { what: "kernel", .. }
    );
}

#[test]
fn kernel_named_like_a_keyword() {
    assert_err!(
        Kernel::new("for", "void for(double *a) {}"),
        Op2Error::ReservedIdentifier { .. }
    );
}

#[test]
fn kernel_source_with_a_helper_in_the_generated_namespace() {
    assert_err!(
        Kernel::new(
            "k",
            "#define OP2_TWICE(x) (2 * (x))\nvoid k(double *a) { a[0] = OP2_TWICE(a[0]); }"
        ),
        Op2Error::ReservedIdentifier { .. }
    );
}

#[test]
fn kernel_source_defining_another_function() {
    assert_err!(
        Kernel::new("wanted", "void other(double *a) { a[0] = 1; }"),
        Op2Error::KernelNotFound { .. }
    );
}

#[test]
fn kernel_source_that_is_empty() {
    assert_err!(Kernel::new("k", ""), Op2Error::KernelNotFound { .. });
}

#[test]
fn kernel_named_like_a_const_of_its_runtime() {
    let m = mesh();
    m.rt.decl_const(1, &[2.0f64], "inc1").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xe.arg(RW)]),
        Op2Error::NameClash { .. }
    );
}

// ---- declarations --------------------------------------------------------------------------

#[test]
fn dat_with_too_many_values() {
    let m = mesh();
    assert_err!(
        m.rt.decl_dat(&m.nodes, 2, [0.0f64; 9], "x"),
        Op2Error::DataLength {
            expected: 8,
            actual: 9,
            ..
        }
    );
}

#[test]
fn dat_with_no_values_on_a_set_that_has_elements() {
    let m = mesh();
    assert_err!(
        m.rt.decl_dat::<i64>(&m.nodes, 1, &[], "x"),
        Op2Error::DataLength { expected: 4, .. }
    );
}

#[test]
fn zero_filled_dat_of_dim_zero() {
    let m = mesh();
    assert_err!(
        m.rt.decl_dat_zeros::<u32>(&m.nodes, 0, "x"),
        Op2Error::ZeroDimension { field: "dim", .. }
    );
}

#[test]
fn dat_on_a_set_with_halos_counts_every_section() {
    let rt = rt();
    let s = rt
        .decl_set_sections(
            SetSizes {
                core: 2,
                owned: 1,
                exec_halo: 1,
                nonexec_halo: 1,
            },
            "s",
        )
        .unwrap();
    assert_err!(
        rt.decl_dat(&s, 1, [0.0f64; 3], "x"),
        Op2Error::DataLength { expected: 5, .. }
    );
}

#[test]
fn map_whose_values_do_not_fill_the_rows() {
    let m = mesh();
    assert_err!(
        m.rt.decl_map(&m.cells, &m.nodes, 3, vec![0, 1, 2, 3], "c2n"),
        Op2Error::DataLength {
            expected: 6,
            actual: 4,
            ..
        }
    );
}

#[test]
fn map_with_the_smallest_int_value() {
    let m = mesh();
    assert_err!(
        m.rt.decl_map(&m.edges, &m.nodes, 1, vec![0, i32::MIN, 1], "m"),
        Op2Error::MapValueOutOfRange { row: 1, .. }
    );
}

#[test]
fn map_from_an_empty_set_with_values() {
    let m = mesh();
    let empty = m.rt.decl_set(0, "empty").unwrap();
    assert_err!(
        m.rt.decl_map(&empty, &m.nodes, 2, vec![0, 1], "m"),
        Op2Error::DataLength { expected: 0, .. }
    );
}

#[test]
fn map_to_an_empty_set_with_values() {
    let m = mesh();
    let empty = m.rt.decl_set(0, "empty").unwrap();
    assert_err!(
        m.rt.decl_map(&m.edges, &empty, 1, vec![0, 0, 0], "m"),
        Op2Error::MapValueOutOfRange { to_size: 0, .. }
    );
}

#[test]
fn map_to_a_set_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let foreign = other.decl_set(4, "nodes").unwrap();
    assert_err!(
        m.rt.decl_map(&m.edges, &foreign, 1, vec![0, 1, 2], "m"),
        Op2Error::ForeignObject { what: "set", .. }
    );
}

#[test]
fn global_with_too_many_values() {
    assert_err!(
        rt().decl_global(2, &[1.0f64, 2.0, 3.0], "g"),
        Op2Error::DataLength { .. }
    );
}

#[test]
fn const_set_to_too_few_values() {
    let rt = rt();
    let c = rt.decl_const(3, &[1.0f64, 2.0, 3.0], "c").unwrap();
    assert_err!(c.set_value(&[1.0]), Op2Error::DataLength { .. });
}

// ---- kernel parameters against args --------------------------------------------------------

#[test]
fn kernel_takes_float_where_the_dat_holds_double() {
    let m = mesh();
    let k = kernel("f", "void f(float *a) { a[0] = 1.0f; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xe.arg(WRITE)]),
        Op2Error::TypeMismatch { .. }
    );
}

#[test]
fn kernel_takes_int64_where_the_dat_holds_int32() {
    let m = mesh();
    let k = kernel("f", "void f(int64_t *a) { a[0] = 1; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.ie.arg(WRITE)]),
        Op2Error::TypeMismatch { .. }
    );
}

#[test]
fn kernel_takes_unsigned_where_the_dat_holds_int() {
    let m = mesh();
    let k = kernel("f", "void f(unsigned int *a) { a[0] = 1; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.ie.arg(WRITE)]),
        Op2Error::TypeMismatch { .. }
    );
}

#[test]
fn kernel_parameter_it_never_names_takes_any_type() {
    // C compilers take `int *` for a Dat of doubles when the kernel never touches it (today's
    // PyOP2 tests pass int64 Dats to such kernels): nothing can be misread, the loop runs.
    let m = mesh();
    let k = kernel(
        "f",
        "void f(int *unused, double *b, float *) { b[0] += 2.0; }",
    );
    m.rt.par_loop(
        &k,
        &m.edges,
        [m.xn.arg_via(&m.e2n, 0, READ), m.xe.arg(INC), m.ie.arg(READ)],
    )
    .unwrap();
    assert_eq!(m.xe.to_vec().unwrap(), vec![2.0; 3]);
    // Named anywhere else (here through a macro the body uses), its type is checked again.
    let k = kernel(
        "g",
        "#define FIRST unused[0]\nvoid g(int *unused, double *b) { b[0] += FIRST; }",
    );
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xn.arg_via(&m.e2n, 0, READ), m.xe.arg(INC)]),
        Op2Error::TypeMismatch { arg: 0, .. }
    );
    // Strings and comments do not hide a use (a `//` inside a string is no comment); names
    // the source may make without spelling them (token pasting, a header of the user's own,
    // macros given to the compiler) count as uses.
    let refused = [
        (
            "s",
            "void s(int *unused, double *b) { const char *u = \"see http://x\"; b[0] += unused[0] + (u != 0); }",
        ),
        (
            "t",
            "#define AT(p, n) p##n[0]\nvoid t(int *unused, double *b) { b[0] += AT(un, used); }",
        ),
        (
            "h",
            "#include \"my_macros.h\"\nvoid h(int *unused, double *b) { b[0] += 1.0; }",
        ),
    ];
    for (name, source) in refused {
        assert_err!(
            m.rt.par_loop(
                &kernel(name, source),
                &m.edges,
                [m.xn.arg_via(&m.e2n, 0, READ), m.xe.arg(INC)]
            ),
            Op2Error::TypeMismatch { arg: 0, .. }
        );
    }
    let k = kernel("d", "void d(int *unused, double *b) { b[0] += FIRST; }")
        .with_compile_args(["-DFIRST=unused[0]"])
        .unwrap();
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xn.arg_via(&m.e2n, 0, READ), m.xe.arg(INC)]),
        Op2Error::TypeMismatch { arg: 0, .. }
    );
    // A comment naming it is no use.
    let k = kernel(
        "c",
        "void c(int *unused, double *b) { /* unused[0] */ b[0] += 1.0; }",
    );
    m.rt.par_loop(&k, &m.edges, [m.xn.arg_via(&m.e2n, 0, READ), m.xe.arg(INC)])
        .unwrap();
    assert_eq!(m.xe.to_vec().unwrap(), vec![3.0; 3]);
}

#[test]
fn kernel_takes_double_where_the_global_holds_int() {
    let m = mesh();
    let gi = m.rt.decl_global(1, &[0i32], "gi").unwrap();
    let k = kernel("f", "void f(double *g) { *g += 1; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [gi.arg(INC)]),
        Op2Error::TypeMismatch { ref object, .. } if object == "gi"
    );
}

#[test]
fn kernel_takes_a_double_pointer_for_one_map_entry() {
    let m = mesh();
    let k = kernel("f", "void f(double **a) { a[0][0] += 1; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xn.arg_via(&m.e2n, 0, INC)]),
        Op2Error::KernelParamShape {
            expected: "a pointer",
            ..
        }
    );
}

#[test]
fn kernel_takes_a_plain_value_not_a_pointer() {
    let m = mesh();
    let k = kernel("f", "void f(double a) { }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xe.arg(READ)]),
        Op2Error::KernelParamShape { .. }
    );
}

#[test]
fn kernel_takes_a_global_as_an_array_of_pointers() {
    let m = mesh();
    let k = kernel("f", "void f(double *g[1]) { }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.g.arg(READ)]),
        Op2Error::KernelParamShape { .. }
    );
}

#[test]
fn whole_row_array_shorter_than_the_arity() {
    let m = mesh();
    let k = kernel(
        "f",
        "void f(const double *x[2], double *y) { *y = x[1][0]; }",
    );
    let y = m.rt.decl_dat_zeros::<f64>(&m.cells, 1, "y").unwrap();
    assert_err!(
        m.rt.par_loop(&k, &m.cells, [m.xn.arg_row(&m.c2n, READ), y.arg(WRITE)]),
        Op2Error::KernelParamBound {
            declared: 2,
            expected: 3,
            what: "pointers",
            ..
        }
    );
}

#[test]
fn whole_row_array_of_hexadecimal_bound() {
    let m = mesh();
    let k = kernel("f", "void f(double *x[0x4]) { x[3][0] += 1; }");
    assert_err!(
        m.rt.par_loop(&k, &m.cells, [m.xn.arg_row(&m.c2n, INC)]),
        Op2Error::KernelParamBound { declared: 4, .. }
    );
}

#[test]
fn indirect_value_array_longer_than_the_dim() {
    let m = mesh();
    let k = kernel("f", "void f(double a[2]) { a[1] += 1; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xn.arg_via(&m.e2n, 1, INC)]),
        Op2Error::KernelParamBound {
            declared: 2,
            expected: 1,
            what: "values",
            ..
        }
    );
}

#[test]
fn const_arg_array_longer_than_the_const() {
    let m = mesh();
    let c = m.rt.decl_const(2, &[1.0f64, 2.0], "coef").unwrap();
    let k = kernel("f", "void f(const double c[3], double *x) { *x = c[2]; }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [c.arg(READ), m.xe.arg(WRITE)]),
        Op2Error::KernelParamBound {
            declared: 3,
            expected: 2,
            ..
        }
    );
}

#[test]
fn value_array_of_bound_zero() {
    let m = mesh();
    let k = kernel("f", "void f(double a[0]) { }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xe.arg(READ)]),
        Op2Error::KernelParamBound { declared: 0, .. }
    );
}

// ---- access modes --------------------------------------------------------------------------

#[test]
fn min_on_a_direct_dat() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xe.arg(MIN)]),
        Op2Error::ReductionOnDat { .. }
    );
}

#[test]
fn max_on_a_whole_row() {
    let m = mesh();
    let k = kernel("f", "void f(double *x[2]) { }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xn.arg_row(&m.e2n, MAX)]),
        Op2Error::ReductionOnDat { .. }
    );
}

#[test]
fn rw_on_a_const() {
    let m = mesh();
    let c = m.rt.decl_const(1, &[1.0f64], "c").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [c.arg(RW)]),
        Op2Error::ConstWrite { .. }
    );
}

#[test]
fn min_and_max_on_a_const() {
    let m = mesh();
    let c = m.rt.decl_const(1, &[1.0f64], "c").unwrap();
    for access in [MIN, MAX] {
        assert_err!(
            m.rt.par_loop(&inc1(), &m.edges, [c.arg(access)]),
            Op2Error::ConstWrite { .. }
        );
    }
}

#[test]
fn map_index_far_beyond_the_arity() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg_via(&m.e2n, usize::MAX, INC)]),
        Op2Error::MapIndexOutOfRange { .. }
    );
}

#[test]
fn op2_style_direct_index_given_with_a_map() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &inc1(),
            &m.edges,
            [op_arg_dat(
                &m.xn,
                op2::OP_ID,
                Some(&m.e2n),
                1,
                "double",
                INC
            )]
        ),
        Op2Error::MapIndexOutOfRange { index: -1, .. }
    );
}

#[test]
fn op2_style_unknown_type_name() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(
            &inc1(),
            &m.edges,
            [op_arg_dat(&m.xe, op2::OP_ID, None, 1, "real", RW)]
        ),
        Op2Error::TypeMismatch {
            declared_by: "the arg",
            ..
        }
    );
}

#[test]
fn op2_style_global_with_the_wrong_dim() {
    let m = mesh();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [op2::op_arg_gbl(&m.g, 3, "double", INC)]),
        Op2Error::DimMismatch {
            declared: 3,
            actual: 1,
            ..
        }
    );
}

#[test]
fn whole_row_through_a_map_from_another_set() {
    let m = mesh();
    let k = kernel("f", "void f(double *x[3]) { }");
    assert_err!(
        m.rt.par_loop(&k, &m.edges, [m.xn.arg_row(&m.c2n, READ)]),
        Op2Error::MapFromMismatch { .. }
    );
}

#[test]
fn loop_with_a_global_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let g = other.decl_global(1, &[0.0f64], "g").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [g.arg(INC)]),
        Op2Error::ForeignObject { what: "global", .. }
    );
}

#[test]
fn loop_with_a_const_of_another_runtime() {
    let m = mesh();
    let other = rt();
    let c = other.decl_const(1, &[0.0f64], "c").unwrap();
    assert_err!(
        m.rt.par_loop(&inc1(), &m.edges, [c.arg(READ)]),
        Op2Error::ForeignObject { what: "const", .. }
    );
}

// ---- kernels the compiler rejects ----------------------------------------------------------

/// Asserts that `src` fails to compile at `par_loop` with the compiler's message and a kept source.
fn assert_does_not_compile(name: &str, src: &str) {
    let m = mesh();
    let k = kernel(name, src);
    match m.rt.par_loop(&k, &m.edges, [m.xe.arg(RW)]) {
        Err(Op2Error::Compile {
            message,
            source_path,
            ..
        }) => {
            assert!(!message.is_empty());
            assert!(source_path.exists(), "{}", source_path.display());
        }
        other => panic!("{}: expected a compile error, got {other:?}", backend()),
    }
}

#[test]
fn kernel_calling_a_function_that_does_not_exist() {
    assert_does_not_compile(
        "calls",
        "void calls(double *a) { a[0] = no_such_function(a[0]); }",
    );
}

#[test]
fn kernel_using_a_const_nobody_declared() {
    assert_does_not_compile(
        "undeclared",
        "void undeclared(double *a) { a[0] = gamma_x; }",
    );
}

#[test]
fn kernel_with_unbalanced_braces() {
    assert_does_not_compile(
        "braces",
        "void braces(double *a) { if (a[0] > 0) { a[0] = 1; }",
    );
}

#[test]
fn kernel_assigning_to_a_const_parameter() {
    assert_does_not_compile("ro", "void ro(const double *a) { a[0] = 1.0; }");
}

// ---- settings and devices ------------------------------------------------------------------

#[test]
fn zero_part_size_is_a_config_error() {
    assert_err!(
        op2::builder().backend(&backend()).part_size(0).build(),
        Op2Error::Config { ref key, .. } if key == "part_size"
    );
}

#[test]
fn a_setting_no_backend_declares_is_a_config_error() {
    assert_err!(
        op2::builder()
            .backend(&backend())
            .setting("warp_drive", "on")
            .build(),
        Op2Error::Config { ref key, .. } if key == "warp_drive"
    );
}

#[test]
fn zero_elements_per_thread_is_a_config_error() {
    assert_err!(
        op2::builder()
            .backend(&backend())
            .setting("omp_min_per_thread", 0)
            .build(),
        Op2Error::Config { .. }
    );
}

#[test]
fn unreadable_environment_values_are_config_errors() {
    // The runtime's own variables, and those of the backends built into this binary.
    let known: Vec<&str> = op2::known_settings().iter().map(|s| s.env).collect();
    for (key, value) in [
        ("OP2_LAZY", "sometimes"),
        ("OP2_PART_SIZE", "-5"),
        ("OMP_NUM_THREADS", "0"),
        ("OP2_OMP_MIN_PER_THREAD", "many"),
        ("OP2_CUDA_SYNC", "2"),
        ("OP2_CUDA_DEVICE", "gpu0"),
        ("OP2_CUDA_STRATEGY", "luck"),
    ] {
        let backends_own = key.starts_with("OP2_OMP") || key.starts_with("OP2_CUDA");
        if backends_own && !known.contains(&key) {
            continue;
        }
        assert_err!(
            op2::Config::from_vars(|k| (k == key).then(|| value.to_string())),
            Op2Error::Config { .. }
        );
    }
}

#[test]
fn an_unknown_cuda_strategy_is_a_config_error() {
    if !op2::backends().iter().any(|b| b.name == "cuda-emulator") {
        return;
    }
    assert_err!(
        op2::builder()
            .backend("cuda-emulator")
            .setting("cuda_strategy", "telepathy")
            .build(),
        Op2Error::Config { .. }
    );
}

#[test]
fn a_missing_opencl_device_is_unavailable_with_the_reason() {
    if !op2::backends().iter().any(|b| b.name == "opencl") {
        return;
    }
    assert_err!(
        op2::builder()
            .backend("opencl")
            .setting("opencl_device", "no such device anywhere")
            .build(),
        Op2Error::BackendUnavailable { .. }
    );
}

#[test]
fn cuda_without_a_gpu_is_unavailable_not_a_panic() {
    if !op2::backends().iter().any(|b| b.name == "cuda") {
        return;
    }
    match op2::builder().backend("cuda").build() {
        Ok(rt) => assert_eq!(rt.backend_name(), "cuda"),
        Err(e) => assert!(
            matches!(e, Op2Error::BackendUnavailable { .. }),
            "wrong error: {e:?}"
        ),
    }
}

#[test]
fn a_global_too_large_for_a_devices_private_memory() {
    // 300,000 doubles of accumulator per work-item: host backends reduce it, devices refuse it.
    let m = mesh();
    let big =
        m.rt.decl_global(300_000, &vec![0.0f64; 300_000], "big")
            .unwrap();
    let k = kernel("fill", "void fill(double *g) { g[299999] += 1.0; }");
    match m.rt.par_loop(&k, &m.edges, [big.arg(INC)]) {
        Ok(_) => assert_eq!(big.value().unwrap()[299_999], 3.0),
        Err(e) => assert!(
            matches!(e, Op2Error::DeviceLimit { .. }),
            "wrong error: {e:?}"
        ),
    }
}

// ---- data in use -----------------------------------------------------------------------------

#[test]
fn mutable_guard_alive_while_a_loop_reads() {
    let m = mesh();
    let guard = m.xe.data().unwrap();
    m.rt.par_loop(&inc1(), &m.edges, [m.xn.arg_via(&m.e2n, 0, INC)])
        .unwrap();
    let copy = kernel("copy", "void copy(const double *a, double *b) { *b = *a; }");
    m.rt.par_loop(&copy, &m.edges, [m.xe.arg(READ), m.ie_as_f64().arg(WRITE)])
        .unwrap();
    assert_err!(m.rt.flush(), Op2Error::DataBorrowed { .. });
    drop(guard);
    m.rt.flush().unwrap();
}

#[test]
fn global_value_read_while_its_guard_is_held_elsewhere() {
    // A Global written by a pending loop, read while a guard on the loop's input is alive: the
    // read must say why it cannot run the loop, not hang.
    let m = mesh();
    let sum = kernel("sum", "void sum(const double *x, double *g) { *g += *x; }");
    let guard = m.xe.data().unwrap();
    m.rt.par_loop(&sum, &m.edges, [m.xe.arg(READ), m.g.arg(INC)])
        .unwrap();
    assert_err!(m.g.value(), Op2Error::DataBorrowed { .. });
    drop(guard);
    assert_eq!(m.g.value().unwrap(), [0.0]);
}

impl Mesh {
    /// A second f64 Dat on the edges.
    fn ie_as_f64(&self) -> op2::Dat<f64> {
        self.rt.decl_dat_zeros::<f64>(&self.edges, 1, "ye").unwrap()
    }
}

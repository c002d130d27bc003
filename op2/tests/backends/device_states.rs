//! The device backends' data states: every row of the device-data state table, observed through each
//! backend's transfer counters and states, with the data checked after each move. Runs on every
//! device backend built in: `opencl` (needs an OpenCL device with double precision: PoCL's CPU
//! device in CI), `cuda-emulator`, and `cuda` where a GPU is present (else it says it skipped,
//! unless `OP2_REQUIRE_CUDA` is set).

use op2::{Dat, DataState, DeviceStats, INC, Kernel, READ, RW, Runtime, WRITE};

/// The whole table as tests of one backend: `(module, backend name)`.
macro_rules! state_table_tests {
    ($module:ident, $backend:expr) => {
        mod $module {
            use super::*;

            fn runtime() -> Option<Runtime> {
                super::runtime($backend)
            }

            #[test]
            fn device_unallocated_rows() {
                if let Some(rt) = runtime() {
                    super::device_unallocated_rows(rt)
                }
            }

            #[test]
            fn device_and_both_rows() {
                if let Some(rt) = runtime() {
                    super::device_and_both_rows(rt)
                }
            }

            #[test]
            fn host_rows_and_host_access() {
                if let Some(rt) = runtime() {
                    super::host_rows_and_host_access(rt)
                }
            }

            #[test]
            fn indirect_write_uploads_first() {
                if let Some(rt) = runtime() {
                    super::indirect_write_uploads_first(rt)
                }
            }

            #[test]
            fn reductions_leave_the_global_where_they_finish() {
                if let Some(rt) = runtime() {
                    super::reductions(rt)
                }
            }
        }
    };
}

#[cfg(feature = "opencl")]
state_table_tests!(opencl, "opencl");
#[cfg(feature = "cuda")]
state_table_tests!(cuda_emulator, "cuda-emulator");
#[cfg(feature = "cuda")]
state_table_tests!(cuda, "cuda");

/// An eager runtime on `backend`, or `None` (the test returns early, and says so) where it cannot
/// start here: `cuda` without a GPU unless `OP2_REQUIRE_CUDA` is set, the others unless
/// `OP2_REQUIRE_BACKENDS` names them (as `cargo xtask test` does).
fn runtime(backend: &str) -> Option<Runtime> {
    op2_test_support::runtime_if_available(op2::builder().backend(backend).lazy(false))
}

/// Counter changes since `before`: (allocations, host-to-device, device-to-host).
fn delta(rt: &Runtime, before: DeviceStats) -> (u64, u64, u64) {
    let now = rt.device_stats().expect("a device backend has counters");
    (
        now.allocations - before.allocations,
        now.to_device - before.to_device,
        now.to_host - before.to_host,
    )
}

fn state<T: op2::Scalar>(rt: &Runtime, d: &Dat<T>) -> DataState {
    rt.data_state(d.id())
        .expect("a device backend tracks states")
}

struct Loops {
    rt: Runtime,
    cells: op2::Set,
    /// out = 2 * in (in READ, out WRITE: out is overwritten whole).
    copy: Kernel,
    /// x = x + 1 (RW).
    bump: Kernel,
}

fn loops(rt: Runtime) -> Loops {
    let cells = rt.decl_set(1000, "cells").unwrap();
    Loops {
        copy: Kernel::new(
            "twice",
            "void twice(const double *i, double *o) { *o = 2 * *i; }",
        )
        .unwrap(),
        bump: Kernel::new("bump", "void bump(double *x) { *x += 1; }").unwrap(),
        rt,
        cells,
    }
}

fn values(n: usize) -> Vec<f64> {
    (0..n).map(|i| i as f64 * 0.5).collect()
}

fn device_unallocated_rows(rt: Runtime) {
    let l = loops(rt);
    let (rt, cells) = (&l.rt, &l.cells);
    let x = rt.decl_dat(cells, 1, values(1000), "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(cells, 1, "y").unwrap();
    let z = rt.decl_dat(cells, 1, values(1000), "z").unwrap();
    assert_eq!(state(rt, &x), DataState::DeviceUnallocated);

    // Read: alloc + h2d, BOTH. Write-only (direct WRITE of the whole set): alloc, no h2d, DEVICE.
    let before = rt.device_stats().unwrap();
    rt.par_loop(&l.copy, cells, [x.arg(READ), y.arg(WRITE)])
        .unwrap();
    assert_eq!(delta(rt, before), (2, 1, 0));
    assert_eq!(state(rt, &x), DataState::Both);
    assert_eq!(state(rt, &y), DataState::Device);

    // Written (RW): alloc + h2d, DEVICE.
    let before = rt.device_stats().unwrap();
    rt.par_loop(&l.bump, cells, [z.arg(RW)]).unwrap();
    assert_eq!(delta(rt, before), (1, 1, 0));
    assert_eq!(state(rt, &z), DataState::Device);

    let expect: Vec<f64> = values(1000).iter().map(|v| v + 1.0).collect();
    assert_eq!(*z.data_ro().unwrap(), expect[..]);
}

fn device_and_both_rows(rt: Runtime) {
    let l = loops(rt);
    let (rt, cells) = (&l.rt, &l.cells);
    let x = rt.decl_dat(cells, 1, values(1000), "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(cells, 1, "y").unwrap();
    rt.par_loop(&l.copy, cells, [x.arg(READ), y.arg(WRITE)])
        .unwrap();
    let before = rt.device_stats().unwrap();
    // DEVICE read stays DEVICE; BOTH read stays BOTH: no transfers.
    let w = rt.decl_dat_zeros::<f64>(cells, 1, "w").unwrap();
    rt.par_loop(&l.copy, cells, [y.arg(READ), w.arg(WRITE)])
        .unwrap();
    assert_eq!(delta(rt, before), (1, 0, 0), "only w is allocated");
    assert_eq!(state(rt, &y), DataState::Device);
    let before = rt.device_stats().unwrap();
    rt.par_loop(&l.copy, cells, [x.arg(READ), w.arg(WRITE)])
        .unwrap();
    assert_eq!(delta(rt, before), (0, 0, 0));
    assert_eq!(state(rt, &x), DataState::Both);
    // DEVICE written stays DEVICE; BOTH written becomes DEVICE: no transfers.
    let before = rt.device_stats().unwrap();
    rt.par_loop(&l.bump, cells, [y.arg(RW)]).unwrap();
    rt.par_loop(&l.bump, cells, [x.arg(RW)]).unwrap();
    assert_eq!(delta(rt, before), (0, 0, 0));
    assert_eq!(state(rt, &y), DataState::Device);
    assert_eq!(state(rt, &x), DataState::Device);
    // The device copies hold the results: x + 1 and 2x + 1.
    let xs = values(1000);
    assert_eq!(
        *y.data_ro().unwrap(),
        xs.iter().map(|v| 2.0 * v + 1.0).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        *x.data_ro().unwrap(),
        xs.iter().map(|v| v + 1.0).collect::<Vec<_>>()[..]
    );
}

fn host_rows_and_host_access(rt: Runtime) {
    let l = loops(rt);
    let (rt, cells) = (&l.rt, &l.cells);
    let x = rt.decl_dat(cells, 1, values(1000), "x").unwrap();
    rt.par_loop(&l.bump, cells, [x.arg(RW)]).unwrap();
    assert_eq!(state(rt, &x), DataState::Device);

    // data_ro() on DEVICE: d2h, BOTH. Again: nothing to copy.
    let before = rt.device_stats().unwrap();
    assert_eq!(x.data_ro().unwrap()[3], 2.5);
    assert_eq!(state(rt, &x), DataState::Both);
    drop(x.data_ro().unwrap());
    assert_eq!(delta(rt, before), (0, 0, 1));

    // data() on BOTH: no copy, HOST (the host may now change it).
    let before = rt.device_stats().unwrap();
    x.data().unwrap()[3] = 100.0;
    assert_eq!(state(rt, &x), DataState::Host);
    assert_eq!(delta(rt, before), (0, 0, 0));

    // HOST read: h2d, BOTH; the device sees the host's change.
    let y = rt.decl_dat_zeros::<f64>(cells, 1, "y").unwrap();
    let before = rt.device_stats().unwrap();
    rt.par_loop(&l.copy, cells, [x.arg(READ), y.arg(WRITE)])
        .unwrap();
    assert_eq!(delta(rt, before), (1, 1, 0));
    assert_eq!(state(rt, &x), DataState::Both);
    assert_eq!(y.data_ro().unwrap()[3], 200.0);

    // data() on DEVICE: d2h, HOST.
    rt.par_loop(&l.bump, cells, [x.arg(RW)]).unwrap();
    let before = rt.device_stats().unwrap();
    assert_eq!(x.data().unwrap()[3], 101.0);
    assert_eq!(delta(rt, before), (0, 0, 1));
    assert_eq!(state(rt, &x), DataState::Host);

    // HOST written (RW): h2d, DEVICE.
    let before = rt.device_stats().unwrap();
    rt.par_loop(&l.bump, cells, [x.arg(RW)]).unwrap();
    assert_eq!(delta(rt, before), (0, 1, 0));
    assert_eq!(state(rt, &x), DataState::Device);

    // HOST write-only: no h2d, DEVICE, and the host's old values are gone.
    x.data().unwrap()[0] = -1.0;
    assert_eq!(state(rt, &x), DataState::Host);
    let before = rt.device_stats().unwrap();
    let ones = rt.decl_dat(cells, 1, vec![1.0; 1000], "ones").unwrap();
    rt.par_loop(&l.copy, cells, [ones.arg(READ), x.arg(WRITE)])
        .unwrap();
    assert_eq!(delta(rt, before), (1, 1, 0), "only `ones` travels");
    assert_eq!(state(rt, &x), DataState::Device);
    assert!(x.data_ro().unwrap().iter().all(|&v| v == 2.0));
}

fn indirect_write_uploads_first(rt: Runtime) {
    // An indirect WRITE may miss elements, whose old values must survive: not write-only.
    let edges = rt.decl_set(3, "edges").unwrap();
    let nodes = rt.decl_set(10, "nodes").unwrap();
    let e2n = rt
        .decl_map(&edges, &nodes, 1, vec![2, 5, 7], "e2n")
        .unwrap();
    let n = rt.decl_dat(&nodes, 1, values(10), "n").unwrap();
    let k = Kernel::new("put", "void put(double *v) { *v = -1; }").unwrap();
    let before = rt.device_stats().unwrap();
    rt.par_loop(&k, &edges, [n.arg_via(&e2n, 0, WRITE)])
        .unwrap();
    assert_eq!(delta(&rt, before), (1, 1, 0));
    let mut expect = values(10);
    for i in [2, 5, 7] {
        expect[i] = -1.0;
    }
    assert_eq!(*n.data_ro().unwrap(), expect[..]);
}

/// Every device backend finishes reductions on the device: the Global stays there until read.
fn reductions(rt: Runtime) {
    let l = loops(rt);
    let (rt, cells) = (&l.rt, &l.cells);
    let x = rt.decl_dat(cells, 1, values(1000), "x").unwrap();
    let g = rt.decl_global(1, &[10.0f64], "g").unwrap();
    let k = Kernel::new("sum", "void sum(const double *x, double *g) { *g += *x; }").unwrap();
    rt.par_loop(&k, cells, [x.arg(READ), g.arg(INC)]).unwrap();
    assert_eq!(rt.data_state(g.id()), Some(DataState::Device));
    // 10 + 0.5 * (0 + 1 + ... + 999), exact in binary floating point.
    assert_eq!(g.value().unwrap(), [10.0 + 0.5 * 999.0 * 1000.0 / 2.0]);
}

#[cfg(feature = "opencl")]
#[test]
fn opencl_programs_come_back_from_the_disk_cache() {
    let dir = tempfile::tempdir().unwrap();
    let token = format!("{}", std::process::id());
    let k = Kernel::new(
        "cached",
        &format!("void cached(double *x) {{ *x = *x * 2 + {token}; }}"),
    )
    .unwrap();
    if runtime("opencl").is_none() {
        return;
    }
    let run = || {
        let rt = op2::builder()
            .backend("opencl")
            .cache_dir(dir.path())
            .build()
            .unwrap();
        let s = rt.decl_set(10, "s").unwrap();
        let x = rt.decl_dat(&s, 1, values(10), "x").unwrap();
        rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
        assert_eq!(x.data_ro().unwrap()[2], 2.0 + token.parse::<f64>().unwrap());
    };
    let binaries = || {
        let mut v: Vec<_> = std::fs::read_dir(dir.path().join("opencl"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "bin"))
            .map(|e| (e.path(), e.metadata().unwrap().modified().unwrap()))
            .collect();
        v.sort();
        v
    };
    let before = op2::backend_opencl::program_stats();
    run();
    let first = binaries();
    assert_eq!(first.len(), 1, "one program binary cached: {first:?}");
    assert!(op2::backend_opencl::program_stats().compiles > before.compiles);
    // A new runtime has an empty memory cache: the program comes from the disk, unchanged.
    let before = op2::backend_opencl::program_stats();
    run();
    assert!(op2::backend_opencl::program_stats().disk_hits > before.disk_hits);
    assert_eq!(binaries(), first);
}

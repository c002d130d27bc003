//! Round trips through OP2's HDF5 layout, and the typed errors for files that do not hold what a
//! declaration needs: missing datasets, wrong shapes and types, values out of range, files that
//! are not HDF5 or are cut short.

use backend_seq as _;
use op2_core::{INC, Kernel, READ, Runtime};
use op2_hdf5::{H5File, Hdf5Error};
use op2_test_support::seq as runtime;

/// A small mesh: 3 edges over 4 nodes, coordinates, an int flag per edge, two constants.
fn write_small(path: &std::path::Path) {
    let f = H5File::create(path).unwrap();
    f.write_set("nodes", 4).unwrap();
    f.write_set("edges", 3).unwrap();
    f.write_map_values("pedge", 2, &[0, 1, 1, 2, 2, 3]).unwrap();
    f.write_dat_values("p_x", 2, &[0.0, 0.0, 1.0, 0.5, 2.0, 0.25, 3.0, 1.0f64])
        .unwrap();
    f.write_dat_values("p_flag", 1, &[7i32, -1, 3]).unwrap();
    f.write_const("gam", &[1.4f64]).unwrap();
    f.write_const("qinf", &[1.0, 0.5, 0.0, 2.5f64]).unwrap();
    f.flush().unwrap();
}

/// The small mesh in a fresh file, open for reading and writing, its two sets declared.
struct Small {
    /// Keeps the file's directory alive.
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    rt: Runtime,
    f: H5File,
    nodes: op2_core::Set,
    edges: op2_core::Set,
}

fn small() -> Small {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.h5");
    write_small(&path);
    let rt = runtime();
    let f = H5File::open_rw(&path).unwrap();
    let nodes = f.decl_set(&rt, "nodes").unwrap();
    let edges = f.decl_set(&rt, "edges").unwrap();
    Small {
        _dir: dir,
        path,
        rt,
        f,
        nodes,
        edges,
    }
}

#[test]
fn round_trip_declares_what_was_written_and_a_loop_runs_on_it() {
    let Small {
        _dir,
        path,
        rt,
        f,
        nodes,
        edges,
    } = small();
    assert_eq!((nodes.size(), edges.size()), (4, 3));
    let pedge = f.decl_map(&rt, &edges, &nodes, 2, "pedge").unwrap();
    assert_eq!(pedge.values(), &[0, 1, 1, 2, 2, 3]);
    let x = f.decl_dat::<f64>(&rt, &nodes, 2, "p_x").unwrap();
    let flag = f.decl_dat::<i32>(&rt, &edges, 1, "p_flag").unwrap();
    assert_eq!(flag.to_vec().unwrap(), vec![7, -1, 3]);
    let qinf = f.decl_const::<f64>(&rt, 4, "qinf").unwrap();
    assert_eq!(qinf.value().unwrap(), vec![1.0, 0.5, 0.0, 2.5]);
    assert_eq!(f.const_values::<f64>("gam", 1).unwrap(), vec![1.4]);

    // Sum of edge lengths along x into the nodes, computed independently below.
    let deg = rt.decl_dat_zeros::<f64>(&nodes, 1, "deg").unwrap();
    let k = Kernel::new(
        "spread",
        "void spread(const double *a, const double *b, double *da, double *db) { \
         double d = b[0] - a[0]; *da += d; *db += d; }",
    )
    .unwrap();
    rt.par_loop(
        &k,
        &edges,
        [
            x.arg_via(&pedge, 0, READ),
            x.arg_via(&pedge, 1, READ),
            deg.arg_via(&pedge, 0, INC),
            deg.arg_via(&pedge, 1, INC),
        ],
    )
    .unwrap();
    assert_eq!(deg.to_vec().unwrap(), vec![1.0, 2.0, 2.0, 1.0]);

    // Written back (OP2's op_fetch_data_hdf5_file) and read again, bit for bit.
    f.write_dat(&rt, &deg).unwrap();
    f.write_map(&rt, &pedge).unwrap();
    let again = H5File::open(&path).unwrap();
    assert_eq!(
        again.values::<f64>("deg", 4, 1).unwrap(),
        vec![1.0, 2.0, 2.0, 1.0]
    );
    assert_eq!(again.shape("pedge").unwrap(), (3, 2));
    drop((f, again));
    // A file opened for reading refuses writes with an error.
    let read_only = H5File::open(&path).unwrap();
    let e = read_only.write_set("more", 1).unwrap_err();
    assert!(matches!(e, Hdf5Error::Io { .. }), "{e}");
}

#[test]
fn slices_read_only_the_rows_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.h5");
    let f = H5File::create(&path).unwrap();
    let values: Vec<f64> = (0..30).map(f64::from).collect();
    f.write_dat_values("v", 3, &values).unwrap();
    f.write_dat_values("one", 1, &[5i64, 6, 7, 8]).unwrap();
    assert_eq!(f.rows::<f64>("v", 2..4, 3).unwrap(), values[6..12].to_vec());
    assert_eq!(f.rows::<f64>("v", 10..10, 3).unwrap(), Vec::<f64>::new());
    // Integers narrow when every value fits.
    assert_eq!(f.rows::<i32>("one", 1..3, 1).unwrap(), vec![6, 7]);
    assert_eq!(f.rows::<u64>("one", 0..4, 1).unwrap(), vec![5, 6, 7, 8]);
    assert!(matches!(
        f.rows::<f64>("v", 9..11, 3),
        Err(Hdf5Error::Shape { .. })
    ));
    // Unsigned 64-bit values past i64's range, and every type's name fits the `type` attribute.
    f.write_dat_values("big", 1, &[u64::MAX, 1]).unwrap();
    assert_eq!(f.rows::<u64>("big", 0..2, 1).unwrap(), vec![u64::MAX, 1]);
    assert!(matches!(
        f.rows::<i64>("big", 0..1, 1),
        Err(Hdf5Error::Value { .. })
    ));
    f.write_dat_values("u32", 2, &[1u32, 2]).unwrap();
    f.write_const("f32", &[0.5f32]).unwrap();
    assert_eq!(f.const_values::<f64>("f32", 1).unwrap(), vec![0.5]);
}

#[test]
fn names_with_groups_and_empty_sets_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("groups.h5");
    let f = H5File::create(&path).unwrap();
    f.write_set("mesh/empty", 0).unwrap();
    f.write_dat_values::<f64>("mesh/fields/none", 2, &[])
        .unwrap();
    f.write_set("mesh/cells", 2).unwrap();
    let rt = runtime();
    let empty = f.decl_set(&rt, "mesh/empty").unwrap();
    assert_eq!(empty.size(), 0);
    let none = f
        .decl_dat::<f64>(&rt, &empty, 2, "mesh/fields/none")
        .unwrap();
    assert!(none.to_vec().unwrap().is_empty());
    assert_eq!(f.set_size("mesh/cells").unwrap(), 2);
    assert!(!f.contains("mesh/nothing/here"));
}

#[test]
fn bad_files_give_typed_errors_naming_file_and_dataset() {
    let Small {
        _dir,
        path,
        rt,
        f,
        nodes,
        edges,
    } = small();
    let name = path.display().to_string();

    let e = f.decl_set(&rt, "cells").unwrap_err();
    assert!(matches!(e, Hdf5Error::Missing { .. }), "{e}");
    assert!(e.to_string().contains(&name) && e.to_string().contains("`cells`"));
    // A set whose dataset is a map.
    assert!(matches!(
        f.decl_set(&rt, "pedge"),
        Err(Hdf5Error::Shape { .. })
    ));
    // Wrong dim, wrong from-set size.
    let e = f.decl_map(&rt, &edges, &nodes, 3, "pedge").unwrap_err();
    assert!(matches!(e, Hdf5Error::Shape { .. }), "{e}");
    assert!(e.to_string().contains("`pedge`"), "{e}");
    assert!(matches!(
        f.decl_map(&rt, &nodes, &nodes, 2, "pedge"),
        Err(Hdf5Error::Shape { .. })
    ));
    // A map into a set too small for its values: op2's own check, wrapped with the file.
    let small = rt.decl_set(2, "small").unwrap();
    let e = f.decl_map(&rt, &edges, &small, 2, "pedge").unwrap_err();
    assert!(matches!(e, Hdf5Error::Declare { .. }), "{e}");
    // Floats are not integers, and doubles do not narrow to floats.
    let e = f.decl_map(&rt, &nodes, &nodes, 2, "p_x").unwrap_err();
    assert!(matches!(e, Hdf5Error::Type { .. }), "{e}");
    assert!(e.to_string().contains("double"), "{e}");
    assert!(matches!(
        f.decl_dat::<f32>(&rt, &nodes, 2, "p_x"),
        Err(Hdf5Error::Type { .. })
    ));
    assert!(matches!(
        f.decl_dat::<f64>(&rt, &edges, 1, "p_flag"),
        Err(Hdf5Error::Type { .. })
    ));
    // Negative values do not fit unsigned types.
    let e = f.decl_dat::<u32>(&rt, &edges, 1, "p_flag").unwrap_err();
    assert!(matches!(e, Hdf5Error::Value { .. }), "{e}");
    // A constant of the wrong length.
    assert!(matches!(
        f.const_values::<f64>("qinf", 2),
        Err(Hdf5Error::Shape { .. })
    ));
    // Writing over a dataset with another shape is refused, not silently replaced.
    assert!(matches!(
        f.write_dat_values("p_x", 3, &[0.0f64; 6]),
        Err(Hdf5Error::Unwritable { .. })
    ));
    assert!(matches!(
        f.write_map_values("bad", 2, &[1, 2, 3]),
        Err(Hdf5Error::Unwritable { .. })
    ));
}

#[test]
fn files_that_are_not_hdf5_or_cut_short_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.h5");
    let e = H5File::open(&missing).unwrap_err();
    assert!(matches!(e, Hdf5Error::Open { .. }), "{e}");
    assert!(e.to_string().contains("nowhere.h5"), "{e}");

    let text = dir.path().join("text.h5");
    std::fs::write(&text, "nnode ncell\n1 2\n").unwrap();
    assert!(matches!(H5File::open(&text), Err(Hdf5Error::Open { .. })));

    // A real file cut in half: either opening fails or reading its data does; never a panic or
    // made-up values.
    let whole = dir.path().join("whole.h5");
    {
        let f = H5File::create(&whole).unwrap();
        f.write_set("nodes", 50_000).unwrap();
        let x: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        f.write_dat_values("p_x", 2, &x).unwrap();
    }
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.h5");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    match H5File::open(&cut) {
        Err(e) => assert!(matches!(e, Hdf5Error::Open { .. }), "{e}"),
        Ok(f) => {
            let rt = runtime();
            let r = f
                .decl_set(&rt, "nodes")
                .and_then(|nodes| f.decl_dat::<f64>(&rt, &nodes, 2, "p_x"));
            let e = r.unwrap_err();
            assert!(e.to_string().contains("cut.h5"), "{e}");
        }
    }
}

#[test]
fn a_process_started_while_a_file_was_written_does_not_lock_out_readers() {
    // HDF5 opens files without close-on-exec: with its locks, a child started during the write
    // would hold the writer's lock after the writer closed the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inherited.h5");
    let f = H5File::create(&path).unwrap();
    f.write_set("nodes", 3).unwrap();
    let mut child = std::process::Command::new("sleep")
        .arg("3")
        .spawn()
        .unwrap();
    drop(f);
    let read = H5File::open(&path).and_then(|f| f.set_size("nodes"));
    // Writers lock: the child must not have kept the lock of the descriptor it saw.
    let write = H5File::open_rw(&path).and_then(|f| f.write_set("edges", 2));
    child.kill().ok();
    child.wait().ok();
    assert_eq!(read.unwrap(), 3);
    write.unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn descriptors_are_not_inherited_by_child_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cloexec.h5");
    // A created file is written under a temporary name beside `path` until it is closed: both
    // its descriptor and a reader's are checked.
    let older = H5File::create(&path).unwrap();
    older.write_set("nodes", 1).unwrap();
    older.close().unwrap();
    let f = H5File::create(&path).unwrap();
    f.write_set("nodes", 2).unwrap();
    let reopened = H5File::open(dir.path().join("cloexec.h5")).unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let target = std::fs::read_link(entry.path()).ok();
        if target.as_deref().and_then(std::path::Path::parent) != Some(dir.path()) {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            entry.file_name().to_string_lossy()
        ))
        .unwrap();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
            .unwrap();
        assert_ne!(
            flags & 0o2_000_000,
            0,
            "descriptor without O_CLOEXEC: {info}"
        );
        seen += 1;
    }
    assert!(
        seen >= 2,
        "the writer's and the reader's descriptors not both found"
    );
    drop((f, reopened));
}

#[test]
fn a_file_is_closed_when_its_handle_is_dropped() {
    // HDF5 locks files it opens; a handle that stayed open would lock out the next reader
    // (another rank, or this process reading what it just wrote).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("closed.h5");
    for _ in 0..2 {
        write_small(&path);
        let f = H5File::open(&path).unwrap();
        assert_eq!(f.set_size("nodes").unwrap(), 4);
        drop(f);
        let f = H5File::open_rw(&path).unwrap();
        f.write_dat_values("extra", 1, &[1.0f64]).unwrap();
    }
}

#[test]
fn one_ranks_part_is_not_written_as_the_whole() {
    // Rank 0 of two, with no neighbours: its sets have no halo, yet their rows are its own.
    let comm = op2_core::thread_communicators(2, std::time::Duration::from_secs(5))
        .into_iter()
        .next()
        .unwrap();
    let rt = Runtime::builder()
        .backend("seq")
        .communicator(std::sync::Arc::new(comm))
        .build()
        .unwrap();
    let cells = rt.decl_set(3, "cells").unwrap();
    let pcell = rt
        .decl_map(&cells, &cells, 1, vec![0, 1, 2], "self")
        .unwrap();
    let d = rt.decl_dat_zeros::<f64>(&cells, 1, "d").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = H5File::create(dir.path().join("part.h5")).unwrap();
    let e = f.write_dat(&rt, &d).unwrap_err();
    assert!(matches!(e, Hdf5Error::Unwritable { .. }), "{e}");
    assert!(e.to_string().contains("gather"), "{e}");
    assert!(matches!(
        f.write_map(&rt, &pcell),
        Err(Hdf5Error::Unwritable { .. })
    ));
    assert!(!f.contains("d"));
}

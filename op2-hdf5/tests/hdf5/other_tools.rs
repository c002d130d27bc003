//! Files made by other HDF5 tools in OP2's layout are read, and files written here look to HDF5's
//! own tools the way OP2 writes them. Python's h5py (Debian's `python3-h5py`) writes the foreign
//! file; `h5dump` (Debian's `hdf5-tools`) inspects ours. Where they are missing the tests say so
//! and pass, unless `OP2_REQUIRE_FILE_TOOLS` is set (CI sets it through `cargo xtask test`).

use backend_seq as _;
use op2_core::Runtime;
use op2_hdf5::H5File;
use std::process::Command;

use op2_test_support::tools as support;

#[test]
fn reads_a_file_written_by_h5py() {
    let Some(python) = support::python_with("h5py", "python3-h5py") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foreign.h5");
    // OP2's layout as a C program or another tool writes it: a 64-bit map, a 1-D dat of dim 1,
    // single-precision data, variable-length string attributes, a group.
    let script = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("nodes", data=np.array([5], dtype=np.int32))
    f.create_dataset("cells", data=np.array([3], dtype=np.int32))
    m = f.create_dataset("pcell", data=np.array([[0,1,2],[1,2,3],[2,3,4]], dtype=np.int64))
    m.attrs["dim"] = np.array([3], dtype=np.int32)
    m.attrs["type"] = "long"
    x = f.create_dataset("p_x", data=np.arange(10, dtype=np.float64).reshape(5, 2) / 4)
    x.attrs["type"] = "double"
    f.create_dataset("p_area", data=np.array([0.5, 0.25, 0.125], dtype=np.float32))
    f.create_dataset("p_tag", data=np.array([[9], [8], [7]], dtype=np.uint8))
    f.create_dataset("consts/qinf", data=np.array([1.0, 0.4, 0.0, 2.2]))
    f["gam"] = 1.4
"#;
    support::run_python(&python, script, &[&path]);

    let rt = Runtime::builder().backend("seq").build().unwrap();
    let f = H5File::open_rw(&path).unwrap();
    let nodes = f.decl_set(&rt, "nodes").unwrap();
    let cells = f.decl_set(&rt, "cells").unwrap();
    let pcell = f.decl_map(&rt, &cells, &nodes, 3, "pcell").unwrap();
    assert_eq!(pcell.values(), &[0, 1, 2, 1, 2, 3, 2, 3, 4]);
    let x = f.decl_dat::<f64>(&rt, &nodes, 2, "p_x").unwrap();
    let expected: Vec<f64> = (0..10).map(|i| f64::from(i) / 4.0).collect();
    assert_eq!(x.to_vec().unwrap(), expected);
    // Single precision widens exactly; a 1-D dataset is a dat of dim 1.
    let area = f.decl_dat::<f64>(&rt, &cells, 1, "p_area").unwrap();
    assert_eq!(area.to_vec().unwrap(), vec![0.5, 0.25, 0.125]);
    let area32 = f.decl_dat::<f32>(&rt, &cells, 1, "p_area").unwrap();
    assert_eq!(area32.to_vec().unwrap(), vec![0.5f32, 0.25, 0.125]);
    let tag = f.decl_dat::<i32>(&rt, &cells, 1, "p_tag").unwrap();
    assert_eq!(tag.to_vec().unwrap(), vec![9, 8, 7]);
    assert_eq!(
        f.const_values::<f64>("consts/qinf", 4).unwrap(),
        vec![1.0, 0.4, 0.0, 2.2]
    );
    // A scalar dataset is a constant of dim 1.
    assert_eq!(f.const_values::<f64>("gam", 1).unwrap(), vec![1.4]);
    // And h5py reads what op2-hdf5 adds to the same file.
    f.write_dat_values("p_out", 1, &[1.5f64, 2.5, 3.5]).unwrap();
    f.flush().unwrap();
    drop(f);
    let read_back = "import sys, h5py; d = h5py.File(sys.argv[1])['p_out']; \
                     print(list(d[:, 0]), int(d.attrs['dim'][0]), d.attrs['type'].decode())";
    assert_eq!(
        support::run_python(&python, read_back, &[&path]),
        "[1.5, 2.5, 3.5] 1 double"
    );
}

#[test]
fn complex_dats_in_h5pys_layout_both_ways() {
    use op2_core::num_complex::{Complex32, Complex64};
    let Some(python) = support::python_with("h5py", "python3-h5py") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("complex.h5");
    let script = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("z", data=np.array([[1 + 2j], [3 - 4j]], dtype=np.complex128))
    f.create_dataset("z32", data=np.array([0.5j, -1.5], dtype=np.complex64))
"#;
    support::run_python(&python, script, &[&path]);
    let f = H5File::open_rw(&path).unwrap();
    assert_eq!(
        f.values::<Complex64>("z", 2, 1).unwrap(),
        [Complex64::new(1.0, 2.0), Complex64::new(3.0, -4.0)]
    );
    // Single precision widens; double precision does not narrow.
    assert_eq!(
        f.values::<Complex64>("z32", 2, 1).unwrap(),
        [Complex64::new(0.0, 0.5), Complex64::new(-1.5, 0.0)]
    );
    assert!(f.values::<Complex32>("z", 2, 1).is_err());
    // Real values are not complex ones, nor the other way round.
    assert!(f.values::<f64>("z", 2, 1).is_err());
    f.write_dat_values(
        "w",
        2,
        &[Complex32::new(1.0, -1.0), Complex32::new(0.0, 3.0)],
    )
    .unwrap();
    f.flush().unwrap();
    drop(f);
    let read_back = "import sys, h5py; d = h5py.File(sys.argv[1])['w']; \
                     print(d.dtype, *(complex(v) for v in d[0]), d.attrs['type'].decode())";
    assert_eq!(
        support::run_python(&python, read_back, &[&path]),
        "complex64 (1-1j) 3j float complex"
    );
}

#[test]
fn h5dump_sees_op2s_layout() {
    let have = Command::new("h5dump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            !support::tools_required(),
            "OP2_REQUIRE_FILE_TOOLS is set but h5dump is missing"
        );
        eprintln!("skipped: no h5dump (apt-get install hdf5-tools)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.h5");
    let f = H5File::create(&path).unwrap();
    f.write_set("edges", 2).unwrap();
    f.write_map_values("pedge", 2, &[0, 1, 1, 2]).unwrap();
    f.write_dat_values("p_q", 4, &[0.0f64; 8]).unwrap();
    f.write_const("gam", &[1.4f64]).unwrap();
    drop(f);
    let dump = |args: &[&str]| support::output_of(Command::new("h5dump").args(args).arg(&path));
    let set = dump(&["-d", "edges"]);
    assert!(
        set.contains("H5T_STD_I32LE") && set.contains("( 1 )") && set.contains("2"),
        "{set}"
    );
    let map = dump(&["-d", "pedge"]);
    assert!(
        map.contains("H5T_STD_I32LE") && map.contains("( 2, 2 )"),
        "{map}"
    );
    let dat = dump(&["-d", "p_q"]);
    assert!(
        dat.contains("H5T_IEEE_F64LE") && dat.contains("( 2, 4 )"),
        "{dat}"
    );
    // The attributes OP2 writes: bytes per element, dim, and the type's name.
    let size = dump(&["-a", "p_q/size"]);
    assert!(size.contains("(0): 32"), "{size}");
    let ty = dump(&["-a", "p_q/type"]);
    // A fixed-length string padded with NULs, which C readers and h5py both take as "double".
    assert!(ty.contains("(0): \"double"), "{ty}");
    let gam = dump(&["-d", "gam"]);
    assert!(gam.contains("1.4"), "{gam}");
}

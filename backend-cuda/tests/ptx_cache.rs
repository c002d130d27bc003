//! The PTX caches: a second runtime reads PTX back from disk instead of compiling, a damaged file
//! is compiled again, and a kernel NVRTC rejects fails at `par_loop` with NVRTC's log and the kept
//! source. Needs NVRTC (skipped without it unless `OP2_REQUIRE_NVRTC` is set).

use backend_cuda::{Nvrtc, NvrtcCheck, ptx_stats};
use op2::{BackendFactory, Config, Kernel, Op2Error, RW, Runtime};
use std::path::Path;

op2::register_backend!(BackendFactory {
    name: "cuda-ptx-cache-test",
    feature: "",
    description: "test: cuda-emulator compiling every unit with NVRTC too",
    create: |c| Ok(Box::new(backend_cuda::emulated(c, NvrtcCheck::Required)?)),
    settings: &[],
});

fn nvrtc_here() -> bool {
    match Nvrtc::get(
        Config::from_env()
            .unwrap()
            .settings
            .path("nvrtc")
            .as_deref(),
    ) {
        Ok(_) => true,
        Err(why) if std::env::var_os("OP2_REQUIRE_NVRTC").is_some() => {
            panic!("OP2_REQUIRE_NVRTC is set, but: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

fn runtime(dir: &Path) -> Runtime {
    std::hint::black_box(&backend_cuda::LINKED);
    op2::builder()
        .backend("cuda-ptx-cache-test")
        .cache_dir(dir)
        .build()
        .unwrap()
}

fn ptx_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("cuda"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

/// Runs one loop on a runtime caching in `dir`, with a kernel made unique by `token`; returns the
/// PTX counters' change.
fn run_cached_loop(dir: &Path, token: &str) -> (u64, u64) {
    let k = Kernel::new(
        "cached",
        &format!("void cached(double *x) {{ *x = *x * 2 + {token}; }}"),
    )
    .unwrap();
    let before = ptx_stats();
    let rt = runtime(dir);
    let s = rt.decl_set(10, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [1.0; 10], "x").unwrap();
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    assert_eq!(x.data_ro().unwrap()[3], 2.0 + token.parse::<f64>().unwrap());
    let after = ptx_stats();
    (
        after.compiles - before.compiles,
        after.disk_hits - before.disk_hits,
    )
}

#[test]
#[ignore = "run by ptx_comes_back_from_disk_and_damaged_files_are_rebuilt in a child process"]
fn child_runs_the_cached_loop() {
    let dir = std::env::var("OP2_PTX_TEST_DIR").unwrap();
    let token = std::env::var("OP2_PTX_TEST_TOKEN").unwrap();
    let (compiled, from_disk) = run_cached_loop(Path::new(&dir), &token);
    println!("compiled={compiled} from_disk={from_disk}");
}

/// The child's counters: (compiled, from disk).
fn child(dir: &Path, token: &str) -> (u64, u64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "child_runs_the_cached_loop",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("OP2_PTX_TEST_DIR", dir)
        .env("OP2_PTX_TEST_TOKEN", token)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text.lines().find(|l| l.starts_with("compiled=")).unwrap();
    let nums: Vec<u64> = line
        .split(['=', ' '])
        .filter_map(|t| t.parse().ok())
        .collect();
    (nums[0], nums[1])
}

#[test]
fn ptx_comes_back_from_disk_and_damaged_files_are_rebuilt() {
    if !nvrtc_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let token = format!("{}", std::process::id());
    assert_eq!(
        run_cached_loop(dir.path(), &token),
        (1, 0),
        "first: compiled"
    );
    let files = ptx_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let good = std::fs::read(&files[0]).unwrap();
    assert!(
        String::from_utf8_lossy(&good).contains(".entry op2_stub"),
        "the file is PTX"
    );
    // Another process starts with an empty memory cache: the PTX comes from disk.
    assert_eq!(child(dir.path(), &token), (0, 1));
    // A damaged file fails its checksum and is compiled again, then written whole.
    std::fs::write(&files[0], &good[..good.len() / 2]).unwrap();
    assert_eq!(child(dir.path(), &token), (1, 0));
    assert_eq!(std::fs::read(&files[0]).unwrap(), good);
}

#[test]
fn nvrtc_errors_name_the_kernel_and_keep_the_source() {
    if !nvrtc_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [0.0; 4], "x").unwrap();
    let k = Kernel::new("broken", "void broken(double *x) { *x = no_such_name; }").unwrap();
    match rt.par_loop(&k, &s, [x.arg(RW)]) {
        Err(Op2Error::Compile {
            kernel,
            cc,
            message,
            source_path,
        }) => {
            assert_eq!(kernel, "broken");
            assert!(cc.starts_with("NVRTC"), "{cc}");
            assert!(message.contains("no_such_name"), "{message}");
            let src = std::fs::read_to_string(&source_path).unwrap();
            assert!(src.contains("*x = no_such_name;"));
            assert_eq!(source_path.extension().unwrap(), "cu");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

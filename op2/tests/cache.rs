//! The compiled-code cache: shared across processes through the disk, keyed by everything that
//! shapes the code, written atomically, self-checking, in a private directory.

use op2::{Kernel, READ, RW, WRITE};
use op2_codegen::jit_stats;
use op2_test_support::{backend, run_child, unique_token};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

/// The JIT counters are per process; tests that read them take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn runtime(cache: &Path) -> op2::Runtime {
    op2::builder()
        .backend(&backend())
        .lazy(false)
        .cache_dir(cache)
        .build()
        .unwrap()
}

/// Runs `x = 3 * x + 1` over 8 elements with a kernel whose source carries `token`.
fn run_tagged_loop(cache: &Path, token: &str) -> Vec<f64> {
    let rt = runtime(cache);
    let s = rt.decl_set(8, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [1.0f64; 8], "x").unwrap();
    let k = Kernel::new(
        "tagged",
        &format!("/* {token} */ void tagged(double *x) {{ *x = 3.0 * *x + 1.0; }}"),
    )
    .unwrap();
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    x.to_vec().unwrap()
}

#[test]
#[ignore = "runs in a child process sharing the parent's cache directory"]
fn child_runs_tagged_loop() {
    let cache = std::env::var("OP2_TEST_CACHE").unwrap();
    let token = std::env::var("OP2_TEST_TOKEN").unwrap();
    assert_eq!(run_tagged_loop(Path::new(&cache), &token), vec![4.0; 8]);
    let s = jit_stats();
    println!(
        "STATS compiles={} disk_hits={} rebuilds={}",
        s.compiles, s.disk_hits, s.rebuilds
    );
}

fn child_stats(cache: &Path, token: &str) -> String {
    let out = run_child(
        "child_runs_tagged_loop",
        &[
            ("OP2_TEST_CACHE", cache.to_str().unwrap()),
            ("OP2_TEST_TOKEN", token),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let at = stdout.find("STATS").expect("child prints its stats");
    stdout[at..].lines().next().unwrap_or_default().to_string()
}

#[test]
fn second_process_compiles_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let token = unique_token();
    let before = jit_stats().compiles;
    assert_eq!(run_tagged_loop(dir.path(), &token), vec![4.0; 8]);
    assert_eq!(
        jit_stats().compiles,
        before + 1,
        "the first process compiles"
    );
    assert_eq!(
        child_stats(dir.path(), &token),
        "STATS compiles=0 disk_hits=1 rebuilds=0"
    );
}

#[test]
fn truncated_cache_file_is_rebuilt() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let token = unique_token();
    run_tagged_loop(dir.path(), &token);
    let libs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "so"))
        .collect();
    assert_eq!(libs.len(), 1, "one library in the cache: {libs:?}");
    let bytes = std::fs::read(&libs[0]).unwrap();
    // A new file renamed over the old one, as a crash or a full disk would leave it: this process
    // still has the old file mapped, which must stay intact.
    let partial = dir.path().join("partial");
    std::fs::write(&partial, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::rename(&partial, &libs[0]).unwrap();
    assert_eq!(
        child_stats(dir.path(), &token),
        "STATS compiles=1 disk_hits=0 rebuilds=1"
    );
    // And the rebuilt file is whole again: a third process loads it.
    assert_eq!(
        child_stats(dir.path(), &token),
        "STATS compiles=0 disk_hits=1 rebuilds=0"
    );
}

#[test]
fn concurrent_processes_share_one_cache() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let token = unique_token();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "child_runs_tagged_loop",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                ])
                .env("OP2_TEST_CACHE", dir.path())
                .env("OP2_TEST_TOKEN", &token)
                .output_async()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // No temporary files are left behind, and the cache holds one library.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".tmp-")), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| n.ends_with(".so")).count(),
        1,
        "{names:?}"
    );
}

trait SpawnAsync {
    fn output_async(&mut self) -> std::process::Child;
}
impl SpawnAsync for std::process::Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

#[test]
fn changed_dtype_or_map_index_misses() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let token = unique_token();
    let rt = runtime(dir.path());
    let nodes = rt.decl_set(3, "nodes").unwrap();
    let edges = rt.decl_set(2, "edges").unwrap();
    let m = rt
        .decl_map(&edges, &nodes, 2, vec![0, 1, 1, 2], "m")
        .unwrap();
    // Parameters typed `void *` so that one kernel fits every dtype.
    let touch = Kernel::new(
        "touch",
        &format!("/* {token} */ void touch(void *e, void *n) {{ (void)e; (void)n; }}"),
    )
    .unwrap();
    let e64 = rt.decl_dat_zeros::<f64>(&edges, 1, "e64").unwrap();
    let e32 = rt.decl_dat_zeros::<f32>(&edges, 1, "e32").unwrap();
    let n64 = rt.decl_dat_zeros::<f64>(&nodes, 1, "n64").unwrap();

    let compiles = || jit_stats().compiles;
    let c0 = compiles();
    rt.par_loop(&touch, &edges, [e64.arg(WRITE), n64.arg_via(&m, 0, READ)])
        .unwrap();
    assert_eq!(compiles(), c0 + 1);
    rt.par_loop(&touch, &edges, [e64.arg(WRITE), n64.arg_via(&m, 0, READ)])
        .unwrap();
    assert_eq!(compiles(), c0 + 1, "same signature: no compile");
    rt.par_loop(&touch, &edges, [e32.arg(WRITE), n64.arg_via(&m, 0, READ)])
        .unwrap();
    assert_eq!(compiles(), c0 + 2, "changed dtype: compiles");
    rt.par_loop(&touch, &edges, [e64.arg(WRITE), n64.arg_via(&m, 1, READ)])
        .unwrap();
    assert_eq!(compiles(), c0 + 3, "changed map index: compiles");
    rt.par_loop(&touch, &edges, [e64.arg(READ), n64.arg_via(&m, 1, READ)])
        .unwrap();
    assert_eq!(
        compiles(),
        c0 + 3,
        "the access mode does not change sequential code"
    );
    // A fresh runtime in the same process reuses the in-memory cache.
    let hits = jit_stats().memory_hits;
    let rt2 = runtime(dir.path());
    let s2 = rt2.decl_set(2, "edges").unwrap();
    let d2 = rt2.decl_dat_zeros::<f64>(&s2, 1, "d").unwrap();
    let n2 = rt2.decl_set(3, "nodes").unwrap();
    let m2 = rt2.decl_map(&s2, &n2, 2, vec![0, 1, 1, 2], "m").unwrap();
    let dn = rt2.decl_dat_zeros::<f64>(&n2, 1, "dn").unwrap();
    rt2.par_loop(&touch, &s2, [d2.arg(WRITE), dn.arg_via(&m2, 0, READ)])
        .unwrap();
    assert_eq!((compiles(), jit_stats().memory_hits), (c0 + 3, hits + 1));
}

#[test]
fn cache_directory_is_created_private() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("nested").join("op2-cache");
    let _rt = runtime(&cache);
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn dump_gencode_writes_every_generated_source() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let token = unique_token();
    let rt = op2::builder()
        .backend(&backend())
        .cache_dir(dir.path().join("cache"))
        .dump_gencode(&dump)
        .build()
        .unwrap();
    let s = rt.decl_set(2, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let k = Kernel::new(
        "dumped",
        &format!("/* {token} */ void dumped(double *x) {{ *x = 1.0; }}"),
    )
    .unwrap();
    rt.par_loop(&k, &s, [x.arg(WRITE)]).unwrap();
    let files: Vec<_> = std::fs::read_dir(&dump)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let src = std::fs::read_to_string(&files[0]).unwrap();
    // The kernel and the wrapper that calls it (each backend names its wrapper its own way).
    assert!(
        src.contains(&token) && src.contains("dumped(OP2_PASS("),
        "{src}"
    );
}

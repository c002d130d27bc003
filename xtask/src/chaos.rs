//! `cargo xtask chaos`: Airfoil killed with SIGKILL at random moments and restarted from its
//! checkpoint until it finishes, on one process and on 2 MPI ranks (then restarted on 1 and 3),
//! against an uninterrupted run: a table of crashes injected, kills that landed while a
//! checkpoint was being written, restarts, bytes saved per checkpoint (the minimal rule against
//! every Dat) and whether the results are equal.

use super::mpi::{build_airfoil, mpirun};
use super::root;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A repeatable pseudo-random sequence (xorshift).
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

struct Setup {
    exe: PathBuf,
    dir: PathBuf,
    ij: (usize, usize),
    iterations: usize,
    every: usize,
}

impl Setup {
    /// Airfoil on `ranks` (0: one process, no mpirun), in its own process group (so a kill
    /// reaches mpirun and every rank), checkpointing into `ckpt` when given.
    fn command(&self, ranks: usize, ckpt: Option<&Path>, q: &Path) -> Command {
        let mut c = if ranks == 0 {
            Command::new(&self.exe)
        } else {
            let mut c = mpirun(ranks, 600);
            c.arg(&self.exe);
            c
        };
        c.args(["--backend", "seq", "--no-progress"])
            .args(["--ij", &self.ij.0.to_string(), &self.ij.1.to_string()])
            .args(["--iterations", &self.iterations.to_string()])
            .arg("--save-q")
            .arg(q);
        if let Some(p) = ckpt {
            c.arg("--checkpoint")
                .arg(p)
                .args(["--checkpoint-every", &self.every.to_string()]);
        }
        c.process_group(0).stdin(Stdio::null());
        c
    }
}

fn spawn(mut c: Command, log: &Path) -> Result<Child, String> {
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    c.stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("starting airfoil: {e}"))
}

/// Kills a whole job and returns once every process of it is gone: the child's process group
/// (mpirun, or Airfoil alone) and every process descended from it. Open MPI starts each rank in
/// a process group of its own, so a kill of mpirun's group alone left the ranks running: still
/// writing checkpoints while the next job started on the same file (once, its ranks read the
/// file before and after such a write and refused to restart).
fn kill_job(c: &mut Child) {
    // The ranks first, found while mpirun still holds them as its children.
    let job = descendants(c.id());
    for pid in &job {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", c.id())])
        .status();
    let _ = c.wait();
    let deadline = Instant::now() + Duration::from_secs(60);
    while job.iter().any(|&pid| running(pid)) {
        if Instant::now() >= deadline {
            eprintln!("xtask: processes {job:?} of a killed job are still there after 60 s");
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The parent and state of process `pid` (from `/proc/PID/stat`), while it exists.
fn proc_stat(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: the command may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Whether `pid` still runs (a zombie has ended: it only waits to be reaped).
fn running(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(_, state)| state != 'Z')
}

/// Every process descended from `root` (not `root` itself).
fn descendants(root: u32) -> Vec<u32> {
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|pid| proc_stat(pid).map(|(ppid, _)| (pid, ppid)))
                .collect()
        })
        .unwrap_or_default();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    found.remove(0);
    found
}

/// What one row of the table found.
struct Row {
    what: String,
    crashes: usize,
    mid_write: usize,
    runs: usize,
    saved: String,
    equal: String,
}

/// The temporary files of a checkpoint being written (see op2-atomic-write's naming).
fn temporaries(ckpt: &Path) -> Vec<std::ffi::OsString> {
    let name = ckpt.file_name().unwrap_or_default().to_string_lossy();
    let prefix = format!(".{name}.op2-tmp.");
    std::fs::read_dir(ckpt.parent().unwrap_or(Path::new(".")))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name())
                .filter(|n| n.to_string_lossy().starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn read_q(p: &Path) -> Result<Vec<f64>, String> {
    let b = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(b.chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// Whether `a` equals `b` bit for bit, or (`tolerance` > 0) within it relative to `b`'s largest.
fn same(a: &[f64], b: &[f64], tolerance: f64) -> bool {
    if tolerance == 0.0 {
        return a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    }
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tolerance * scale)
}

/// The residual lines (`  iteration  value`) of a run's output.
fn residuals(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 2 && f[0].parse::<usize>().is_ok() && f[1].contains('e')
        })
        .map(String::from)
        .collect()
}

/// "saved X of Y bytes" from a run's checkpoint line.
fn saved_bytes(log: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().find(|l| l.contains("bytes of Dats"))?;
    let after = line.split("it saved ").nth(1)?;
    let mut f = after.split_whitespace();
    let saved = f.next()?.parse().ok()?;
    f.next();
    let all = f.next()?.parse().ok()?;
    Some((saved, all))
}

/// Crashes an Airfoil run on `ranks` `crashes` times, restarts it until it finishes, and
/// compares with the uninterrupted run `want_q` / `want_res`. `startup` is how long a run takes
/// to reach its first iteration, `compute` how long its iterations take.
#[allow(clippy::too_many_arguments)]
fn crash_loop(
    s: &Setup,
    ranks: usize,
    crashes: usize,
    (startup, compute): (Duration, Duration),
    dice: &mut Dice,
    ckpt: &Path,
    want_q: &[f64],
    want_res: &[String],
) -> Result<(Row, Option<(u64, u64)>), String> {
    let label = if ranks == 0 {
        "1 process".to_string()
    } else {
        format!("{ranks} ranks (mpirun)")
    };
    let q = s.dir.join(format!("q-crash-{ranks}"));
    let log = s.dir.join(format!("crash-{ranks}.log"));
    let compute = compute.as_micros() as u64;
    let (mut kills, mut mid_write, mut runs, mut restarted) = (0, 0, 0, 0);
    let mut saved = None;
    let mut equal = true;
    // Rounds from scratch until every crash landed: a run that finishes before its kill (the
    // machine was faster than measured) ends a round, which is checked like the last.
    while kills < crashes {
        let _ = std::fs::remove_file(ckpt);
        let _ = std::fs::remove_file(&q);
        loop {
            runs += 1;
            if runs > 20 * crashes + 50 {
                return Err(format!("{label}: no progress after {runs} runs"));
            }
            let before = temporaries(ckpt);
            let mut c = spawn(s.command(ranks, Some(ckpt), &q), &log)?;
            if kills < crashes {
                // Each run computes for at most 1/22 of the whole computation before it is
                // killed (a checkpoint or two, or none).
                let delay = compute / 60 + dice.below(compute / 22 - compute / 60);
                std::thread::sleep(startup + Duration::from_micros(delay));
                if c.try_wait().map_err(|e| e.to_string())?.is_none() {
                    // A temporary file this run started: it was writing a checkpoint.
                    let now = temporaries(ckpt);
                    mid_write += usize::from(now.iter().any(|t| !before.contains(t)));
                    kill_job(&mut c);
                    kills += 1;
                    continue;
                }
            }
            let status = c.wait().map_err(|e| e.to_string())?;
            if !status.success() {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(format!("{label}: a run failed ({status}):\n{text}"));
            }
            saved = saved.or(saved_bytes(&log));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            restarted += usize::from(text.contains("restarted from"));
            let got = read_q(&q)?;
            equal &= same(&got, want_q, 0.0) && residuals(&log) == want_res;
            break;
        }
    }
    if restarted == 0 {
        return Err(format!(
            "{label}: no finishing run restarted from a checkpoint: the crashes proved nothing \
             (see {})",
            log.display()
        ));
    }
    Ok((
        Row {
            what: label,
            crashes: kills,
            mid_write,
            runs,
            saved: String::new(),
            equal: if equal {
                "yes (bit for bit)".into()
            } else {
                "NO".into()
            },
        },
        saved,
    ))
}

/// `cargo xtask chaos [--crashes N] [--seed S] [--ij I J] [--iterations N] [--every N] [--no-mpi]
/// [--features LIST]`.
pub fn run_chaos(args: &[String]) -> Result<(), String> {
    let mut crashes = 20;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut ij = (400, 200);
    let mut iterations = 600;
    let mut every = 10;
    let mut with_mpi = super::sh_ok("command -v mpirun");
    let mut features: Option<String> = None;
    let mut it = args.iter();
    let num = |v: Option<&String>, what: &str| -> Result<u64, String> {
        v.and_then(|v| v.parse().ok())
            .ok_or(format!("{what} needs a number"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--crashes" => crashes = num(it.next(), "--crashes")? as usize,
            "--seed" => seed = num(it.next(), "--seed")?.max(1),
            "--ij" => {
                ij = (
                    num(it.next(), "--ij")? as usize,
                    num(it.next(), "--ij")? as usize,
                )
            }
            "--iterations" => iterations = num(it.next(), "--iterations")? as usize,
            "--every" => every = num(it.next(), "--every")?.max(1) as usize,
            "--no-mpi" => with_mpi = false,
            // The test command builds Airfoil with these already (no second build).
            "--features" => features = it.next().cloned(),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let features = features.unwrap_or_else(|| if with_mpi { "mpi" } else { "openmp" }.into());
    let exe = build_airfoil(&features)?;
    let dir = root().join("target/chaos");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let s = Setup {
        exe,
        dir: dir.clone(),
        ij,
        iterations,
        every,
    };
    let mut dice = Dice(seed);
    let mut rows = Vec::new();
    let rank_counts: &[usize] = if with_mpi { &[0, 2] } else { &[0] };
    for &ranks in rank_counts {
        // The uninterrupted run, timed, and a run of no iterations: how long starting takes.
        let want = dir.join(format!("q-whole-{ranks}"));
        let log = dir.join(format!("whole-{ranks}.log"));
        let started = Instant::now();
        let status = spawn(s.command(ranks, None, &want), &log)?
            .wait()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!(
                "the uninterrupted run failed; see {}",
                log.display()
            ));
        }
        let whole = started.elapsed();
        let started = Instant::now();
        let mut none = s.command(ranks, None, &dir.join("q-none"));
        none.args(["--iterations", "0"]);
        spawn(none, &dir.join("startup.log"))?
            .wait()
            .map_err(|e| e.to_string())?;
        let startup = started.elapsed();
        let times = (startup, whole.saturating_sub(startup));
        let want_q = read_q(&want)?;
        let want_res = residuals(&log);
        let ckpt = dir.join(format!("airfoil-{ranks}.ckpt"));
        let (mut row, saved) = crash_loop(
            &s, ranks, crashes, times, &mut dice, &ckpt, &want_q, &want_res,
        )?;
        let fraction = |(saved, all): (u64, u64)| {
            format!(
                "{saved} of {all} ({:.0}%)",
                100.0 * saved as f64 / all as f64
            )
        };
        row.saved = saved
            .map(fraction)
            .unwrap_or_else(|| "(none in the last run)".into());
        rows.push(row);
        if ranks == 0 {
            continue;
        }
        // The checkpoint of a run killed half way, restarted on other numbers of ranks.
        let _ = std::fs::remove_file(&ckpt);
        let q = dir.join("q-half");
        let mut c = spawn(s.command(ranks, Some(&ckpt), &q), &dir.join("half.log"))?;
        std::thread::sleep(times.0 + times.1 / 2);
        kill_job(&mut c);
        let kept = std::fs::read(&ckpt).map_err(|e| format!("{}: {e}", ckpt.display()))?;
        for restart in [0usize, 3] {
            let label = if restart == 0 { 1 } else { restart };
            let copy = dir.join(format!("restart-{label}.ckpt"));
            std::fs::write(&copy, &kept).map_err(|e| e.to_string())?;
            let q = dir.join(format!("q-restart-{label}"));
            let log = dir.join(format!("restart-{label}.log"));
            let status = spawn(s.command(restart, Some(&copy), &q), &log)?
                .wait()
                .map_err(|e| e.to_string())?;
            let equal = status.success() && same(&read_q(&q)?, &want_q, 1e-12);
            let restarted = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("restarted from");
            rows.push(Row {
                what: format!("{ranks} ranks killed half way, restarted on {label}"),
                crashes: 1,
                mid_write: 0,
                runs: 2,
                saved: match (restarted, saved_bytes(&log)) {
                    (false, _) => "NOT RESTARTED".into(),
                    (true, Some(s)) => fraction(s),
                    (true, None) => "(none after the restart)".into(),
                },
                equal: if equal && restarted {
                    "yes (within 1e-12)".into()
                } else {
                    "NO".into()
                },
            });
        }
    }
    println!(
        "\nAirfoil {}x{} cells, {iterations} iterations on seq, a checkpoint every {every}:\n",
        ij.0, ij.1
    );
    println!(
        "| run | crashes injected | during a checkpoint write | runs | bytes saved per checkpoint (minimal / all Dats) | results equal |"
    );
    println!("|---|---|---|---|---|---|");
    let mut ok = true;
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.what, r.crashes, r.mid_write, r.runs, r.saved, r.equal
        );
        ok &= r.equal.starts_with("yes");
    }
    if ok {
        Ok(())
    } else {
        Err("some restarted run did not end as the uninterrupted one".into())
    }
}

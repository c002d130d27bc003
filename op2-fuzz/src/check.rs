//! A program run on its target (one process, or thread ranks when the target has them) and
//! against the reference interpreter: the entry points of the fuzzer.

use crate::program::Program;
use crate::reference;
use crate::run::{Target, compare, run_in_one_process};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path as FsPath;

/// Runs `p` on `t` and returns what the host saw, in the reference's order; an op2 error or a
/// panic is the failure's message.
pub fn execute(p: &Program, t: &Target, cache: Option<&FsPath>) -> Result<Vec<Vec<f64>>, String> {
    let run = || {
        #[cfg(feature = "ranks")]
        if let Some(ranks) = t.ranks {
            return crate::ranks::execute_on_ranks(p, t, ranks, cache);
        }
        run_in_one_process(p, t, cache)
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Err(format!("panicked: {msg}"))
        }
    }
}

/// Runs `p` on `t` and on the reference; the differences, or an error or panic, as a message.
pub fn check(p: &Program, t: &Target, cache: Option<&FsPath>) -> Result<(), String> {
    let want = reference::run(p);
    let got = execute(p, t, cache)?;
    compare(&want, &got)
}

//! PETSc as a [`LinearSolver`] (feature `petsc`): the assembled CSR matrix is handed to PETSc's KSP
//! in place (`MatCreateSeqAIJWithArrays`) through a small C shim, configured with the same
//! options as the native solvers, and PETSc's report comes back as a [`SolveReport`].

use crate::csr::CsrRef;
use crate::error::{LaError, Result};
use crate::precond::Preconditioner;
use crate::solve::{
    ConvergedReason, LinearSolver, Method, SolveReport, SolverOptions, check_system,
};
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::{Mutex, OnceLock};

unsafe extern "C" {
    fn op2la_petsc_init() -> c_int;
    fn op2la_petsc_version() -> c_int;
    fn op2la_petsc_failed_call() -> *const c_char;
    fn op2la_petsc_solve(
        n: i64,
        row_ptr: *const i64,
        cols: *const u32,
        vals: *const f64,
        b: *const f64,
        x: *mut f64,
        ksp_type: *const c_char,
        pc_type: *const c_char,
        omega: f64,
        restart: c_int,
        rtol: f64,
        atol: f64,
        dtol: f64,
        maxits: i64,
        nonzero_guess: c_int,
        reason: *mut c_int,
        its: *mut i64,
        history: *mut f64,
        history_len: i64,
        history_count: *mut i64,
    ) -> c_int;
}

/// PETSc is not thread-safe: one call at a time in the process.
static PETSC: Mutex<()> = Mutex::new(());

fn failed(code: c_int) -> LaError {
    // SAFETY: the shim returns a pointer to a static, NUL-terminated string.
    let call = unsafe { CStr::from_ptr(op2la_petsc_failed_call()) }
        .to_string_lossy()
        .into_owned();
    LaError::Petsc { call, code }
}

/// PETSc's KSP and PC behind [`LinearSolver`].
#[derive(Debug, Clone, Copy)]
pub struct Petsc {
    version: (u32, u32, u32),
}

impl Petsc {
    /// Starts PETSc (once per process; MPI too when nothing started it).
    pub fn new() -> Result<Petsc> {
        static STARTED: OnceLock<c_int> = OnceLock::new();
        let _one = PETSC.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: plain C calls without arguments, serialised by the lock.
        let code = *STARTED.get_or_init(|| unsafe { op2la_petsc_init() });
        if code != 0 {
            return Err(failed(code));
        }
        let v = unsafe { op2la_petsc_version() } as u32;
        Ok(Petsc {
            version: (v / 10000, v / 100 % 100, v % 100),
        })
    }

    /// PETSc's version (major, minor, subminor).
    pub fn version(&self) -> (u32, u32, u32) {
        self.version
    }
}

fn reason_of(code: c_int) -> ConvergedReason {
    match code {
        1 | 2 | 8 => ConvergedReason::Rtol,
        3 | 9 => ConvergedReason::Atol,
        -3 => ConvergedReason::DivergedIterations,
        -4 => ConvergedReason::DivergedDtol,
        -8 => ConvergedReason::DivergedIndefinitePreconditioner,
        -9 => ConvergedReason::DivergedNanOrInf,
        -10 => ConvergedReason::DivergedIndefiniteMatrix,
        -11 => ConvergedReason::DivergedPcFailed,
        _ => ConvergedReason::DivergedBreakdown,
    }
}

impl LinearSolver for Petsc {
    fn name(&self) -> &str {
        "petsc"
    }

    fn solve_csr(
        &self,
        a: CsrRef<'_>,
        b: &[f64],
        x: &mut [f64],
        options: &SolverOptions,
        matrix_name: &str,
    ) -> Result<SolveReport> {
        check_system(a, b, x, options, matrix_name)?;
        if let Preconditioner::FieldSplit(_) = options.preconditioner {
            return Err(LaError::Option {
                option: "preconditioner",
                value: "fieldsplit".into(),
                why: "op2-la hands PETSc no field index sets: use the native solver's fieldsplit",
            });
        }
        let restart = match options.method {
            Method::Gmres { restart } => restart,
            _ => 30,
        };
        let omega = match options.preconditioner {
            Preconditioner::Sor { omega } => omega,
            _ => 1.0,
        };
        let ksp = CString::new(options.method.petsc_name()).expect("no NUL");
        let pc = CString::new(options.preconditioner.petsc_name()).expect("no NUL");
        let row_ptr: Vec<i64> = a.row_ptr.iter().map(|&p| p as i64).collect();
        let history_len = options.max_iterations.saturating_add(1).min(1 << 20);
        let mut history = vec![0.0; history_len];
        let (mut reason, mut its, mut count) = (0, 0i64, 0i64);
        let _one = PETSC.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: every pointer is valid for the lengths the shim reads (n + 1 offsets, nnz
        // columns and values, n entries of b and x, history_len norms); PETSc does not keep them
        // after the call; calls are serialised by the lock.
        let code = unsafe {
            op2la_petsc_solve(
                a.rows as i64,
                row_ptr.as_ptr(),
                a.col_idx.as_ptr(),
                a.values.as_ptr(),
                b.as_ptr(),
                x.as_mut_ptr(),
                ksp.as_ptr(),
                pc.as_ptr(),
                omega,
                restart.min(c_int::MAX as usize) as c_int,
                options.rtol,
                options.atol,
                options.dtol,
                options.max_iterations.min(i64::MAX as usize) as i64,
                options.nonzero_initial_guess as c_int,
                &mut reason,
                &mut its,
                history.as_mut_ptr(),
                history_len as i64,
                &mut count,
            )
        };
        if code != 0 {
            return Err(failed(code));
        }
        history.truncate(count.max(0) as usize);
        Ok(SolveReport {
            solver: format!(
                "petsc {} + {}",
                options.method.petsc_name(),
                options.preconditioner.petsc_name()
            ),
            reason: reason_of(reason),
            iterations: its.max(0) as usize,
            residual_history: history,
        })
    }
}

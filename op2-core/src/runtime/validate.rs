//! Checking a `par_loop`'s args before anything is recorded: every arg against the iteration set,
//! its map and data (sets, dims, types, access modes, runtimes), and the kernel's parameters
//! against the args (count, element types, shapes, array bounds).

use crate::model::access::Access;
use crate::model::arg::{Arg, ArgTarget, Via};
use crate::model::carrier::{Carrier, CarrierKind};
use crate::model::dtype::DType;
use crate::model::error::{Op2Error, Result};
use crate::model::kernel::Kernel;
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::{ArgKind, ArgSig};
use std::sync::Arc;

/// Errors unless an object of runtime `runtime_id` belongs to runtime `owner`.
pub(crate) fn own(owner: u64, what: &'static str, name: &str, runtime_id: u64) -> Result<()> {
    if runtime_id != owner {
        return Err(Op2Error::ForeignObject {
            what,
            name: name.into(),
        });
    }
    Ok(())
}

/// Checks arg `i` of a loop of runtime `owner` running `kernel` over `set`; returns its signature
/// and data, adding its map (if any) to the loop's map slots `maps`.
pub(crate) fn check_arg(
    owner: u64,
    kernel: &Kernel,
    set: &Set,
    i: usize,
    arg: &Arg,
    maps: &mut Vec<Map>,
) -> Result<(ArgSig, Arc<Carrier>)> {
    let kname = || kernel.name().to_string();
    if let Some(reason) = &arg.invalid {
        return Err(Op2Error::InvalidArg {
            kernel: kname(),
            arg: i,
            reason: reason.clone(),
        });
    }
    let mut slot = |m: &Map| -> Result<usize> {
        own(owner, "map", m.name(), m.runtime_id())?;
        if m.from() != set {
            return Err(Op2Error::MapFromMismatch {
                kernel: kname(),
                arg: i,
                map: m.name().into(),
                map_from: m.from().name().into(),
                iter_set: set.name().into(),
            });
        }
        if m.has_gaps() {
            return Err(Op2Error::MapWithGaps {
                kernel: kname(),
                arg: i,
                map: m.name().into(),
            });
        }
        Ok(maps.iter().position(|x| x == m).unwrap_or_else(|| {
            maps.push(m.clone());
            maps.len() - 1
        }))
    };
    let (carrier, kind) = match &arg.target {
        ArgTarget::Dat { carrier, via } => {
            own(owner, "dat", &carrier.name, carrier.runtime_id)?;
            let CarrierKind::Dat(dset) = &carrier.kind else {
                unreachable!("dat args are built from Dat handles")
            };
            if matches!(arg.access, Access::Min | Access::Max) {
                return Err(Op2Error::ReductionOnDat {
                    kernel: kname(),
                    arg: i,
                    dat: carrier.name.clone(),
                    access: arg.access,
                });
            }
            let on_target = |m: &Map| -> Result<()> {
                if dset != m.to() {
                    return Err(Op2Error::DatSetMismatch {
                        kernel: kname(),
                        arg: i,
                        dat: carrier.name.clone(),
                        dat_set: dset.name().into(),
                        map: m.name().into(),
                        map_to: m.to().name().into(),
                    });
                }
                Ok(())
            };
            let kind = match via {
                Via::Direct => {
                    if dset != set {
                        return Err(Op2Error::DirectSetMismatch {
                            kernel: kname(),
                            arg: i,
                            dat: carrier.name.clone(),
                            dat_set: dset.name().into(),
                            iter_set: set.name().into(),
                        });
                    }
                    ArgKind::Direct
                }
                Via::Entry(m, idx) => {
                    let map = slot(m)?;
                    on_target(m)?;
                    if *idx < 0 || *idx as usize >= m.arity() {
                        return Err(Op2Error::MapIndexOutOfRange {
                            kernel: kname(),
                            arg: i,
                            map: m.name().into(),
                            index: *idx,
                            arity: m.arity(),
                        });
                    }
                    ArgKind::Indirect {
                        map,
                        arity: m.arity(),
                        index: *idx as usize,
                    }
                }
                Via::Row(m) => {
                    let map = slot(m)?;
                    on_target(m)?;
                    ArgKind::Row {
                        map,
                        arity: m.arity(),
                    }
                }
            };
            (carrier, kind)
        }
        ArgTarget::Global(carrier) => {
            own(owner, "global", &carrier.name, carrier.runtime_id)?;
            if matches!(arg.access, Access::Write | Access::Rw) {
                return Err(Op2Error::GlobalAccess {
                    kernel: kname(),
                    arg: i,
                    global: carrier.name.clone(),
                    access: arg.access,
                });
            }
            (carrier, ArgKind::Global)
        }
        ArgTarget::Const(carrier) => {
            own(owner, "const", &carrier.name, carrier.runtime_id)?;
            if arg.access != Access::Read {
                return Err(Op2Error::ConstWrite {
                    kernel: kname(),
                    arg: i,
                    name: carrier.name.clone(),
                    access: arg.access,
                });
            }
            (carrier, ArgKind::Global)
        }
    };
    ordered(kernel, i, carrier, arg.access)?;
    let dtype = carrier.dtype();
    if let Some((dim, c_type)) = &arg.declared {
        if *dim != carrier.dim {
            return Err(Op2Error::DimMismatch {
                kernel: kname(),
                arg: i,
                object: carrier.name.clone(),
                declared: *dim,
                actual: carrier.dim,
            });
        }
        if DType::from_c_name(c_type) != Some(dtype) {
            return Err(Op2Error::TypeMismatch {
                kernel: kname(),
                arg: i,
                object: carrier.name.clone(),
                declared: c_type.clone(),
                declared_by: "the arg",
                actual: dtype,
            });
        }
    }
    Ok((
        ArgSig {
            kind,
            dtype,
            dim: carrier.dim,
            access: arg.access,
        },
        carrier.clone(),
    ))
}

/// An error unless `access` (of arg `i` of a loop of `kernel`) can reduce `carrier`'s values:
/// MIN and MAX need an order, which complex values have not.
pub(crate) fn ordered(kernel: &Kernel, i: usize, carrier: &Carrier, access: Access) -> Result<()> {
    if carrier.dtype().is_complex() && matches!(access, Access::Min | Access::Max) {
        return Err(Op2Error::UnorderedReduction {
            kernel: kernel.name().into(),
            arg: i,
            object: carrier.name.clone(),
            access,
            dtype: carrier.dtype(),
        });
    }
    Ok(())
}

/// The count a parameter declaring array `bounds` (outermost first, `None` where left out, as in
/// `double b[][4]`) refuses when handed `available` values or pointers, or `None` when it may
/// take them: a declared count larger than what is there is always refused, since the kernel
/// could reach past it (PyOP2's leniency, [`Kernel::without_bound_checks`], covers only
/// smaller ones); a different one when the kernel checks bounds. Left-out bounds count as 1.
pub(crate) fn refused_extent(
    kernel: &Kernel,
    bounds: &[Option<usize>],
    available: usize,
) -> Option<usize> {
    let declared = declared_values(bounds);
    let all_known = bounds.iter().all(Option::is_some);
    let refused =
        declared > available || (all_known && declared != available && kernel.checks_bounds());
    refused.then_some(declared)
}

/// The values a parameter declaring array `bounds` holds (left-out bounds count as 1).
pub(crate) fn declared_values(bounds: &[Option<usize>]) -> usize {
    bounds.iter().map(|b| b.unwrap_or(1)).product()
}

/// An error unless kernel parameter `i` (`p`) has the shape its arg hands it: an array of at
/// most `row`'s arity pointers for a whole row (`row` is `Some(arity)`), else a pointer, or a
/// values array of at most `values` values (`double x[2]`, `double A[3][3]` for nine); see
/// [`refused_extent`] for what "at most" allows.
pub(crate) fn check_shape(
    kernel: &Kernel,
    i: usize,
    p: &crate::model::kernel::KernelParam,
    row: Option<usize>,
    values: usize,
) -> Result<()> {
    let shape = |expected| Op2Error::KernelParamShape {
        kernel: kernel.name().into(),
        arg: i,
        param: p.text.clone(),
        expected,
    };
    let bound = |what, declared, expected| Op2Error::KernelParamBound {
        kernel: kernel.name().into(),
        arg: i,
        param: p.text.clone(),
        what,
        declared,
        expected,
    };
    match (row, p.pointers, &p.bounds[..]) {
        // An array of pointers (`double *x[3]`, `double **x`), one per map entry.
        (Some(arity), 1, [b]) => match refused_extent(kernel, &[*b], arity) {
            Some(n) => Err(bound("pointers", n, arity)),
            None => Ok(()),
        },
        (Some(_), 2, []) => Ok(()),
        (Some(_), ..) => Err(shape("an array of pointers")),
        // A pointer to the values (`double *x`).
        (None, 1, []) => Ok(()),
        // The values as an array: `double x[2]`, or `double A[3][3]` for nine values.
        (None, 0, bounds) if !bounds.is_empty() => match refused_extent(kernel, bounds, values) {
            Some(n) => Err(bound("values", n, values)),
            None => Ok(()),
        },
        (None, ..) => Err(shape("a pointer")),
    }
}

/// Checks the kernel's parameters, when its definition could be read, against the args' signatures.
pub(crate) fn check_kernel_params(
    kernel: &Kernel,
    sigs: &[ArgSig],
    carriers: &[Arc<Carrier>],
) -> Result<()> {
    let Some(params) = kernel.params() else {
        return Ok(());
    };
    if params.len() != sigs.len() {
        return Err(Op2Error::KernelParamCount {
            kernel: kernel.name().into(),
            params: params.len(),
            args: sigs.len(),
        });
    }
    for (i, ((p, s), c)) in params.iter().zip(sigs).zip(carriers).enumerate() {
        check_param(kernel, i, p, s, c)?;
    }
    Ok(())
}

/// Whether `kernel` may read or write parameter `p` ([`KernelParam::used`], or macros given to
/// its compiler, which may name it).
pub(crate) fn uses(kernel: &Kernel, p: &crate::model::kernel::KernelParam) -> bool {
    p.used
        || kernel
            .compile_args()
            .iter()
            .any(|a| a.starts_with("-D") || a.starts_with("-include"))
}

/// Checks kernel parameter `p` (of `kernel`'s parameter `i`) against arg `i`'s signature `s` on
/// carrier `c`: its element type and shape (a pointer, or an array of pointers for a whole row).
pub(crate) fn check_param(
    kernel: &Kernel,
    i: usize,
    p: &crate::model::kernel::KernelParam,
    s: &ArgSig,
    c: &Carrier,
) -> Result<()> {
    // A parameter the kernel never names cannot be misread: its type is not held against the
    // arg's (the call hands every argument over as `void *`).
    if let Some(d) = p.dtype
        && d != s.dtype
        && uses(kernel, p)
    {
        return Err(Op2Error::TypeMismatch {
            kernel: kernel.name().into(),
            arg: i,
            object: c.name.clone(),
            declared: p.text.clone(),
            declared_by: "the kernel parameter",
            actual: s.dtype,
        });
    }
    let row = match s.kind {
        ArgKind::Row { arity, .. } => Some(arity),
        _ => None,
    };
    check_shape(kernel, i, p, row, s.dim)
}

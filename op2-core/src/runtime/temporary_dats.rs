//! Temporary Dats declared and released through the runtime (the `temporaries` subsystem gives
//! them memory and takes it back when their nodes run).

use crate::model::carrier::{Carrier, Dat, TEMPORARY_LIVE, TEMPORARY_RELEASED};
use crate::model::dtype::{HostBuffer, Scalar};
use crate::model::error::{Op2Error, Result};
use crate::model::set::Set;
use crate::model::trace::{DataUse, Pending, section};
use crate::runtime::Runtime;
use crate::runtime::steps::Step;
use std::sync::atomic::Ordering;

/// What a malloc or free node touches: every section of the temporary (so it comes before every
/// loop that uses the temporary, or after). Allocations and releases also run in program order
/// among themselves when forced together ([`Step::order_class`]), which is not a dependency: an
/// allocation never makes an earlier release needed.
fn uses(c: &Carrier) -> (Vec<DataUse>, Vec<DataUse>) {
    (
        vec![],
        vec![DataUse {
            id: c.id,
            sections: section::ALL,
        }],
    )
}

impl Runtime {
    /// Declares a temporary Dat: zero-filled like [`Runtime::decl_dat_zeros`], for values a few
    /// loops pass between them (PyOP2's temporaries). With the `temporaries` optimisation on
    /// (`OP2_LAZY_OPT`), its memory is taken when its first loop runs, from the memory of a
    /// released temporary of the same size when there is one, and
    /// [`Runtime::release_temporary`] gives it back once the loops recorded before the release
    /// have run. Without it, the Dat is allocated now and freed when its last handle and last
    /// loop are gone. On device backends the device holds its data and no memory is reused.
    pub fn decl_temporary<T: Scalar>(&self, set: &Set, dim: usize, name: &str) -> Result<Dat<T>> {
        let dat = if self.shared.config.lazy_opts.temporaries {
            let len = Runtime::values_for(set, dim, name)?;
            let dat =
                self.decl_dat_buffer(set, dim, HostBuffer::unallocated(T::DTYPE, len), name)?;
            let c = dat.carrier().clone();
            c.temporary.store(TEMPORARY_LIVE, Ordering::Release);
            let (reads, writes) = uses(&c);
            self.push_steps(vec![Pending {
                work: Step::Malloc(c),
                reads,
                writes,
            }]);
            if !self.shared.config.lazy {
                self.flush()?;
            }
            dat
        } else {
            let dat = self.decl_dat_zeros(set, dim, name)?;
            dat.carrier()
                .temporary
                .store(TEMPORARY_LIVE, Ordering::Release);
            dat
        };
        Ok(dat)
    }

    /// Releases a temporary Dat ([`Runtime::decl_temporary`]): its memory goes back (to the pool
    /// for the next temporary, with the `temporaries` optimisation) once every loop recorded so
    /// far that uses it has run (without the optimisation, when the last handle to it and the
    /// last loop using it are gone). Using it afterwards, in a loop or on the host, is
    /// [`Op2Error::TemporaryReleased`]. Releasing a Dat that is not a temporary is
    /// [`Op2Error::NotTemporary`]; releasing one twice does nothing more.
    pub fn release_temporary<T: Scalar>(&self, dat: &Dat<T>) -> Result<()> {
        let c = dat.carrier();
        self.own("dat", c.name(), c.runtime_id)?;
        let was = c.temporary.load(Ordering::Acquire);
        if was == TEMPORARY_RELEASED {
            return Ok(());
        }
        if was != TEMPORARY_LIVE {
            return Err(Op2Error::NotTemporary {
                name: c.name().into(),
            });
        }
        c.temporary.store(TEMPORARY_RELEASED, Ordering::Release);
        if !self.shared.config.lazy_opts.temporaries {
            // Its memory goes when the last handle and the last pending loop using it do.
            return Ok(());
        }
        let (reads, writes) = uses(c);
        self.push_steps(vec![Pending {
            work: Step::Free(c.clone()),
            reads,
            writes,
        }]);
        if !self.shared.config.lazy {
            self.flush()?;
        }
        Ok(())
    }
}

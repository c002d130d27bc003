//! Bringing a Dat's halo rows up to date for the host (PyOP2's `data_with_halos`): a loop of
//! the runtime's own reads every row through a map covering the set, so the exchange is the one
//! any loop reading through a map gets, recorded alike on every rank.

use super::Runtime;
use super::extrusion::COVERING;
use super::sync::next_id;
use crate::model::access::Access;
use crate::model::carrier::Dat;
use crate::model::dtype::Scalar;
use crate::model::error::Result;
use crate::model::kernel::Kernel;
use crate::model::map::Map;

impl Runtime {
    /// Brings the halo rows of `dat` (both sections) up to date from their owners, as a loop
    /// reading them through a map would, and runs what is pending. Across ranks every rank
    /// calls it together (it is an exchange); in one process, or for a set without a halo, it
    /// does nothing.
    pub fn refresh_halo<T: Scalar>(&self, dat: &Dat<T>) -> Result<()> {
        let set = dat.set();
        if self.communicator().size() <= 1 || set.halo().is_none() {
            return Ok(());
        }
        // Rows of `arity` entries from each executed element, together every element: row e
        // holds e, e + rows, e + 2 rows, ... (the last clamped to the last element).
        let (rows, total) = (set.exec_size(), set.total_size());
        let arity = total.div_ceil(rows.max(1)).max(1);
        let covering = self.derived((COVERING, set.id(), 0), || {
            let last = total.saturating_sub(1) as i32;
            let values = (0..rows)
                .flat_map(|e| (0..arity).map(move |j| ((e + j * rows) as i32).min(last)))
                .collect();
            Map::new(
                next_id(),
                set,
                set,
                arity,
                values,
                &format!("{}@covering", set.name()),
            )
        })?;
        let ty = T::DTYPE.c_name();
        let name = format!("op2_refresh_halo_{:?}_{arity}", T::DTYPE).to_lowercase();
        let source = format!("void {name}(const {ty} *x[{arity}]) {{ (void)x; }}\n");
        let kernel = self
            .shared
            .written
            .get(source, None, |src| Kernel::internal(&name, src));
        self.par_loop(&kernel, set, [dat.arg_row(&covering, Access::Read)])?;
        self.flush()
    }
}

//! Bringing a Dat's halo rows up to date for the host (PyOP2's `data_with_halos`): a loop of
//! the runtime's own reads the Dat through a map (from each executed element to itself), so
//! the exchange is the one any loop reading through a map gets, recorded alike on every rank.

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
    /// reading it through a map would, and runs what is pending. Across ranks every rank calls
    /// it together (it is an exchange, and every rank records the same loop, halo or not); in
    /// one process it does nothing.
    pub fn refresh_halo<T: Scalar>(&self, dat: &Dat<T>) -> Result<()> {
        if self.communicator().size() <= 1 {
            return Ok(());
        }
        let set = dat.set();
        // Any read through a map exchanges the Dat's whole halo: each executed element to
        // itself is map enough, and its kernel is the same on every rank.
        let to_itself = self.derived((COVERING, set.id(), 0), || {
            let values = (0..set.exec_size() as i32).collect();
            Map::new(
                next_id(),
                set,
                set,
                1,
                values,
                &format!("{}@itself", set.name()),
            )
        })?;
        let ty = T::DTYPE.c_name();
        let name = format!("op2_refresh_halo_{:?}", T::DTYPE).to_lowercase();
        let source = format!("void {name}(const {ty} *x) {{ (void)x; }}\n");
        let kernel = self
            .shared
            .written
            .get(source, None, |src| Kernel::internal(&name, src));
        self.par_loop(&kernel, set, [dat.arg_via(&to_itself, 0, Access::Read)])?;
        self.flush()
    }
}

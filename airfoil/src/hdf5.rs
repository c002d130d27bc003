//! Airfoil's mesh as OP2's `new_grid.h5` (feature `hdf5`): the sets `nodes`, `edges`, `bedges`,
//! `cells`, the maps `pedge`, `pecell`, `pbedge`, `pbecell`, `pcell`, the dats `p_x`, `p_bound`,
//! `p_q`, `p_qold`, `p_adt`, `p_res` and the constants `gam`, `gm1`, `cfl`, `eps`, `mach`, `alpha`,
//! `qinf`, as OP2's `convert_mesh` writes them and its `airfoil_hdf5` reads them.
//!
//! Reading takes the mesh and the constants; the flow starts from `qinf` as OP2's Airfoil starts
//! (a `p_q` in the file, for example a saved state, is not read).

use crate::mesh::{Mesh, MeshError, first_outside};
use crate::solver::Constants;
use op2::hdf5::{H5File, Hdf5Error};
use std::path::Path;

/// The angle of attack OP2's Airfoil records (3 degrees, in single precision); no kernel uses it.
fn alpha() -> f64 {
    f64::from(3.0f32 * 1.0f32.atan() / 45.0f32)
}

/// The set sizes of an Airfoil file: `(nnode, ncell, nedge, nbedge)`.
pub fn sizes(file: &H5File) -> Result<[usize; 4], Hdf5Error> {
    Ok([
        file.set_size("nodes")?,
        file.set_size("cells")?,
        file.set_size("edges")?,
        file.set_size("bedges")?,
    ])
}

impl Mesh {
    /// Reads the mesh from an OP2 Airfoil HDF5 file, checking every shape and every index.
    pub fn read_hdf5(path: &Path) -> Result<Mesh, MeshError> {
        let f = H5File::open(path)?;
        let [nnode, ncell, nedge, nbedge] = sizes(&f)?;
        let m = Mesh {
            x: f.values("p_x", nnode, 2)?,
            cell: f.values("pcell", ncell, 4)?,
            edge: f.values("pedge", nedge, 2)?,
            ecell: f.values("pecell", nedge, 2)?,
            bedge: f.values("pbedge", nbedge, 2)?,
            becell: f.values("pbecell", nbedge, 1)?,
            bound: f.values("p_bound", nbedge, 1)?,
        };
        let file = path.display().to_string();
        for (name, values, limit) in [
            ("pcell", &m.cell, nnode),
            ("pedge", &m.edge, nnode),
            ("pecell", &m.ecell, ncell),
            ("pbedge", &m.bedge, nnode),
            ("pbecell", &m.becell, ncell),
        ] {
            if let Some((entry, v)) = first_outside(values, limit) {
                return Err(MeshError::Index {
                    path: file,
                    map: name.into(),
                    entry,
                    value: i64::from(v),
                    limit,
                });
            }
        }
        Ok(m)
    }

    /// Writes the mesh, the initial flow of `c` (q = qinf, the rest 0) and the constants as OP2's
    /// `new_grid.h5`: an OP2 application reads it with `op_decl_*_hdf5` and `op_get_const_hdf5`.
    pub fn write_hdf5(&self, path: &Path, c: &Constants) -> Result<(), MeshError> {
        let f = H5File::create(path)?;
        f.write_set("nodes", self.nnode())?;
        f.write_set("edges", self.nedge())?;
        f.write_set("bedges", self.nbedge())?;
        f.write_set("cells", self.ncell())?;
        f.write_map_values("pedge", 2, &self.edge)?;
        f.write_map_values("pecell", 2, &self.ecell)?;
        f.write_map_values("pbedge", 2, &self.bedge)?;
        f.write_map_values("pbecell", 1, &self.becell)?;
        f.write_map_values("pcell", 4, &self.cell)?;
        f.write_dat_values("p_bound", 1, &self.bound)?;
        f.write_dat_values("p_x", 2, &self.x)?;
        let q: Vec<f64> = (0..self.ncell()).flat_map(|_| c.qinf).collect();
        f.write_dat_values("p_q", 4, &q)?;
        f.write_dat_values("p_qold", 4, &vec![0.0f64; 4 * self.ncell()])?;
        f.write_dat_values("p_adt", 1, &vec![0.0f64; self.ncell()])?;
        f.write_dat_values("p_res", 4, &vec![0.0f64; 4 * self.ncell()])?;
        for (name, v) in [
            ("gam", c.gam),
            ("gm1", c.gm1),
            ("cfl", c.cfl),
            ("eps", c.eps),
            ("mach", c.mach),
            ("alpha", alpha()),
        ] {
            f.write_const(name, &[v])?;
        }
        f.write_const("qinf", &c.qinf)?;
        f.flush()?;
        Ok(())
    }
}

impl Constants {
    /// The constants an Airfoil HDF5 file holds, or `None` when it has none (a mesh-only file).
    pub fn read_hdf5(path: &Path) -> Result<Option<Constants>, MeshError> {
        let f = H5File::open(path)?;
        if !f.contains("gam") {
            return Ok(None);
        }
        let one = |name: &str| -> Result<f64, Hdf5Error> { Ok(f.const_values(name, 1)?[0]) };
        let q = f.const_values::<f64>("qinf", 4)?;
        Ok(Some(Constants {
            gam: one("gam")?,
            gm1: one("gm1")?,
            cfl: one("cfl")?,
            eps: one("eps")?,
            mach: one("mach")?,
            qinf: [q[0], q[1], q[2], q[3]],
        }))
    }
}

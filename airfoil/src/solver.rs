//! The Airfoil solver on op2-rs: the mesh declared as sets, maps and Dats, the five kernels in C, and
//! the time-stepping loop (OP2-Common's `airfoil.cpp`, double precision).

use crate::mesh::Mesh;
use op2::{Dat, Global, INC, Kernel, MAX, READ, RW, Result, Runtime, Set, WRITE};

/// The flow constants: each the `f32` literal widened to `f64`, as OP2's Airfoil declares them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constants {
    /// Ratio of specific heats.
    pub gam: f64,
    /// `gam - 1`.
    pub gm1: f64,
    /// CFL number.
    pub cfl: f64,
    /// Artificial dissipation.
    pub eps: f64,
    /// Free-stream Mach number.
    pub mach: f64,
    /// Free-stream state (density, momentum x and y, energy).
    pub qinf: [f64; 4],
}

impl Default for Constants {
    fn default() -> Self {
        let gam = 1.4f32 as f64;
        let gm1 = gam - 1.0;
        let mach = 0.4f32 as f64;
        let (p, r) = (1.0, 1.0);
        let u = (gam * p / r).sqrt() * mach;
        let e = p / (r * gm1) + 0.5 * u * u;
        Constants {
            gam,
            gm1,
            cfl: 0.9f32 as f64,
            eps: 0.05f32 as f64,
            mach,
            qinf: [r, r * u, 0.0, r * e],
        }
    }
}

/// `qold = q`.
pub const SAVE_SOLN: &str = "void save_soln(const double *q, double *qold) {
  for (int n = 0; n < 4; n++) qold[n] = q[n];
}";

/// The local time step of a cell.
pub const ADT_CALC: &str = "void adt_calc(const double *x1, const double *x2, const double *x3,
    const double *x4, const double *q, double *adt) {
  double dx, dy, ri, u, v, c;
  ri = 1.0 / q[0];
  u = ri * q[1];
  v = ri * q[2];
  c = sqrt(gam * gm1 * (ri * q[3] - 0.5 * (u * u + v * v)));
  dx = x2[0] - x1[0];
  dy = x2[1] - x1[1];
  *adt = fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  dx = x3[0] - x2[0];
  dy = x3[1] - x2[1];
  *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  dx = x4[0] - x3[0];
  dy = x4[1] - x3[1];
  *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  dx = x1[0] - x4[0];
  dy = x1[1] - x4[1];
  *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  *adt = (*adt) / cfl;
}";

/// The flux across an interior edge, added to one cell and taken from the other.
pub const RES_CALC: &str = "void res_calc(const double *x1, const double *x2, const double *q1,
    const double *q2, const double *adt1, const double *adt2, double *res1, double *res2) {
  double dx, dy, mu, ri, p1, vol1, p2, vol2, f;
  dx = x1[0] - x2[0];
  dy = x1[1] - x2[1];
  ri = 1.0 / q1[0];
  p1 = gm1 * (q1[3] - 0.5 * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
  vol1 = ri * (q1[1] * dy - q1[2] * dx);
  ri = 1.0 / q2[0];
  p2 = gm1 * (q2[3] - 0.5 * ri * (q2[1] * q2[1] + q2[2] * q2[2]));
  vol2 = ri * (q2[1] * dy - q2[2] * dx);
  mu = 0.5 * ((*adt1) + (*adt2)) * eps;
  f = 0.5 * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]);
  res1[0] += f;
  res2[0] -= f;
  f = 0.5 * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy) + mu * (q1[1] - q2[1]);
  res1[1] += f;
  res2[1] -= f;
  f = 0.5 * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx) + mu * (q1[2] - q2[2]);
  res1[2] += f;
  res2[2] -= f;
  f = 0.5 * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3]);
  res1[3] += f;
  res2[3] -= f;
}";

/// The flux across a boundary edge: pressure on the wall, the free stream at the far field.
pub const BRES_CALC: &str = "void bres_calc(const double *x1, const double *x2, const double *q1,
    const double *adt1, double *res1, const int *bound) {
  double dx, dy, mu, ri, p1, vol1, p2, vol2, f;
  dx = x1[0] - x2[0];
  dy = x1[1] - x2[1];
  ri = 1.0 / q1[0];
  p1 = gm1 * (q1[3] - 0.5 * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
  if (*bound == 1) {
    res1[1] += +p1 * dy;
    res1[2] += -p1 * dx;
  } else {
    vol1 = ri * (q1[1] * dy - q1[2] * dx);
    ri = 1.0 / qinf[0];
    p2 = gm1 * (qinf[3] - 0.5 * ri * (qinf[1] * qinf[1] + qinf[2] * qinf[2]));
    vol2 = ri * (qinf[1] * dy - qinf[2] * dx);
    mu = (*adt1) * eps;
    f = 0.5 * (vol1 * q1[0] + vol2 * qinf[0]) + mu * (q1[0] - qinf[0]);
    res1[0] += f;
    f = 0.5 * (vol1 * q1[1] + p1 * dy + vol2 * qinf[1] + p2 * dy) + mu * (q1[1] - qinf[1]);
    res1[1] += f;
    f = 0.5 * (vol1 * q1[2] - p1 * dx + vol2 * qinf[2] - p2 * dx) + mu * (q1[2] - qinf[2]);
    res1[2] += f;
    f = 0.5 * (vol1 * (q1[3] + p1) + vol2 * (qinf[3] + p2)) + mu * (q1[3] - qinf[3]);
    res1[3] += f;
  }
}";

/// The explicit update of a cell, with the residual sum and the largest squared change.
pub const UPDATE: &str = "void update(const double *qold, double *q, double *res,
    const double *adt, double *rms, double *maxerr) {
  double del, adti;
  adti = 1.0 / (*adt);
  for (int n = 0; n < 4; n++) {
    del = adti * res[n];
    q[n] = qold[n] - del;
    res[n] = 0.0;
    *rms += del * del;
    if (del * del > *maxerr) *maxerr = del * del;
  }
}";

/// The five loops' kernel names, in the order a step runs them first.
pub const LOOPS: [&str; 5] = ["save_soln", "adt_calc", "res_calc", "bres_calc", "update"];

/// The Airfoil mesh declared on a runtime (this rank's part of it, across ranks): what
/// [`Airfoil::on`] needs besides the flow.
pub struct DeclaredMesh {
    /// Cells.
    pub cells: Set,
    /// Interior edges.
    pub edges: Set,
    /// Boundary edges.
    pub bedges: Set,
    /// Cell to its four nodes.
    pub pcell: op2::Map,
    /// Edge to its two nodes.
    pub pedge: op2::Map,
    /// Edge to its two cells.
    pub pecell: op2::Map,
    /// Boundary edge to its two nodes.
    pub pbedge: op2::Map,
    /// Boundary edge to its cell.
    pub pbecell: op2::Map,
    /// Node coordinates.
    pub p_x: Dat<f64>,
    /// Boundary kind per boundary edge.
    pub p_bound: Dat<i32>,
    /// Cells in the whole mesh (the residual is an average over all of them).
    pub ncell: usize,
}

/// Airfoil declared on one runtime.
pub struct Airfoil {
    rt: Runtime,
    /// Cells in the whole mesh, on every rank.
    ncell: usize,
    cells: Set,
    edges: Set,
    bedges: Set,
    pcell: op2::Map,
    pedge: op2::Map,
    pecell: op2::Map,
    pbedge: op2::Map,
    pbecell: op2::Map,
    p_x: Dat<f64>,
    p_q: Dat<f64>,
    p_qold: Dat<f64>,
    p_adt: Dat<f64>,
    p_res: Dat<f64>,
    p_bound: Dat<i32>,
    rms: Global<f64>,
    maxerr: Global<f64>,
    kernels: [Kernel; 5],
}

impl Airfoil {
    /// Declares the mesh and the flow on `rt`: q = qinf everywhere, res = 0. The mesh's arrays
    /// are copied; [`Airfoil::from_mesh`] takes them over instead.
    pub fn new(rt: &Runtime, mesh: &Mesh, c: &Constants) -> Result<Self> {
        Self::from_mesh(rt, mesh.clone(), c)
    }

    /// Declares the mesh and the flow on `rt`, the mesh's arrays becoming the Maps' and Dats'
    /// storage (no copy: the mesh is not held twice).
    pub fn from_mesh(rt: &Runtime, mesh: Mesh, c: &Constants) -> Result<Self> {
        let nodes = rt.decl_set(mesh.nnode(), "nodes")?;
        let edges = rt.decl_set(mesh.nedge(), "edges")?;
        let bedges = rt.decl_set(mesh.nbedge(), "bedges")?;
        let cells = rt.decl_set(mesh.ncell(), "cells")?;
        let ncell = mesh.ncell();
        let Mesh {
            x,
            cell,
            edge,
            ecell,
            bedge,
            becell,
            bound,
        } = mesh;
        let mesh = DeclaredMesh {
            pcell: rt.decl_map(&cells, &nodes, 4, cell, "pcell")?,
            pedge: rt.decl_map(&edges, &nodes, 2, edge, "pedge")?,
            pecell: rt.decl_map(&edges, &cells, 2, ecell, "pecell")?,
            pbedge: rt.decl_map(&bedges, &nodes, 2, bedge, "pbedge")?,
            pbecell: rt.decl_map(&bedges, &cells, 1, becell, "pbecell")?,
            p_x: rt.decl_dat(&nodes, 2, x, "p_x")?,
            p_bound: rt.decl_dat(&bedges, 1, bound, "p_bound")?,
            ncell,
            cells,
            edges,
            bedges,
        };
        Self::on(rt, mesh, c)
    }

    /// Declares the flow (q = qinf everywhere, res = 0) and the constants on a mesh already
    /// declared on `rt`: in one process by [`Airfoil::new`], or this rank's part of a partitioned
    /// mesh.
    pub fn on(rt: &Runtime, mesh: DeclaredMesh, c: &Constants) -> Result<Self> {
        let cells = mesh.cells;
        // Every row, halos included (they hold the same initial state as their owners).
        let q: Vec<f64> = (0..cells.total_size()).flat_map(|_| c.qinf).collect();
        rt.decl_const(1, &[c.gam], "gam")?;
        rt.decl_const(1, &[c.gm1], "gm1")?;
        rt.decl_const(1, &[c.cfl], "cfl")?;
        rt.decl_const(1, &[c.eps], "eps")?;
        rt.decl_const(1, &[c.mach], "mach")?;
        rt.decl_const(4, &c.qinf, "qinf")?;
        Ok(Airfoil {
            p_x: mesh.p_x,
            p_q: rt.decl_dat(&cells, 4, q, "p_q")?,
            p_qold: rt.decl_dat_zeros(&cells, 4, "p_qold")?,
            p_adt: rt.decl_dat_zeros(&cells, 1, "p_adt")?,
            p_res: rt.decl_dat_zeros(&cells, 4, "p_res")?,
            p_bound: mesh.p_bound,
            rms: rt.decl_global(1, &[0.0], "rms")?,
            maxerr: rt.decl_global(1, &[0.0], "maxerr")?,
            kernels: [
                Kernel::new("save_soln", SAVE_SOLN)?,
                Kernel::new("adt_calc", ADT_CALC)?,
                Kernel::new("res_calc", RES_CALC)?,
                Kernel::new("bres_calc", BRES_CALC)?,
                Kernel::new("update", UPDATE)?,
            ],
            rt: rt.clone(),
            ncell: mesh.ncell,
            cells,
            edges: mesh.edges,
            bedges: mesh.bedges,
            pcell: mesh.pcell,
            pedge: mesh.pedge,
            pecell: mesh.pecell,
            pbedge: mesh.pbedge,
            pbecell: mesh.pbecell,
        })
    }

    /// One iteration: `save_soln`, then twice `adt_calc`, `res_calc`, `bres_calc`, `update`.
    /// Returns `sqrt(rms / ncell)` of the second update.
    pub fn step(&self) -> Result<f64> {
        let rt = &self.rt;
        let [save, adt, res, bres, upd] = &self.kernels;
        rt.par_loop(
            save,
            &self.cells,
            [self.p_q.arg(READ), self.p_qold.arg(WRITE)],
        )?;
        for _ in 0..2 {
            rt.par_loop(
                adt,
                &self.cells,
                [
                    self.p_x.arg_via(&self.pcell, 0, READ),
                    self.p_x.arg_via(&self.pcell, 1, READ),
                    self.p_x.arg_via(&self.pcell, 2, READ),
                    self.p_x.arg_via(&self.pcell, 3, READ),
                    self.p_q.arg(READ),
                    self.p_adt.arg(WRITE),
                ],
            )?;
            rt.par_loop(
                res,
                &self.edges,
                [
                    self.p_x.arg_via(&self.pedge, 0, READ),
                    self.p_x.arg_via(&self.pedge, 1, READ),
                    self.p_q.arg_via(&self.pecell, 0, READ),
                    self.p_q.arg_via(&self.pecell, 1, READ),
                    self.p_adt.arg_via(&self.pecell, 0, READ),
                    self.p_adt.arg_via(&self.pecell, 1, READ),
                    self.p_res.arg_via(&self.pecell, 0, INC),
                    self.p_res.arg_via(&self.pecell, 1, INC),
                ],
            )?;
            rt.par_loop(
                bres,
                &self.bedges,
                [
                    self.p_x.arg_via(&self.pbedge, 0, READ),
                    self.p_x.arg_via(&self.pbedge, 1, READ),
                    self.p_q.arg_via(&self.pbecell, 0, READ),
                    self.p_adt.arg_via(&self.pbecell, 0, READ),
                    self.p_res.arg_via(&self.pbecell, 0, INC),
                    self.p_bound.arg(READ),
                ],
            )?;
            self.rms.set_value(&[0.0])?;
            rt.par_loop(
                upd,
                &self.cells,
                [
                    self.p_qold.arg(READ),
                    self.p_q.arg(WRITE),
                    self.p_res.arg(RW),
                    self.p_adt.arg(READ),
                    self.rms.arg(INC),
                    self.maxerr.arg(MAX),
                ],
            )?;
        }
        Ok((self.rms.value()?[0] / self.ncell as f64).sqrt())
    }

    /// Back to the initial state (q = qinf, everything else 0), keeping the compiled loops and
    /// plans: for timing runs after a warm-up.
    pub fn reset(&self, c: &Constants) -> Result<()> {
        for (q, v) in self.p_q.data()?.iter_mut().zip(c.qinf.iter().cycle()) {
            *q = *v;
        }
        self.p_qold.data()?.fill(0.0);
        self.p_adt.data()?.fill(0.0);
        self.p_res.data()?.fill(0.0);
        self.rms.set_value(&[0.0])?;
        self.maxerr.set_value(&[0.0])
    }

    /// The flow state `q` (4 per cell; across ranks this rank's rows, halos included).
    pub fn q(&self) -> Result<Vec<f64>> {
        self.p_q.to_vec()
    }

    /// The flow state's Dat (across ranks, `LocalMesh::gather` of op2-mpi collects it in global order).
    pub fn q_dat(&self) -> &Dat<f64> {
        &self.p_q
    }

    /// The node coordinates (2 per node; across ranks this rank's rows, halos included).
    pub fn x_dat(&self) -> &Dat<f64> {
        &self.p_x
    }

    /// The cell-to-node map (across ranks this rank's cells, in local numbering).
    pub fn cell_map(&self) -> &op2::Map {
        &self.pcell
    }

    /// The largest squared update seen so far.
    pub fn max_change(&self) -> Result<f64> {
        Ok(self.maxerr.value()?[0])
    }

    /// The runtime it runs on.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }
}

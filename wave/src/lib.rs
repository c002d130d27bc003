//! Seed 002's running example as a program: an explicit wave equation on the unit square (P1
//! elements, a lumped mass), advanced by the seven loops per step the seed lists, so that the
//! lazy graph (and its optimisations) can be seen and measured on the case it was designed with.
//!
//! With `phi` and `p` the two fields, `K` the P1 stiffness matrix and `M` the lumped mass, a
//! step is Störmer-Verlet: `phi -= dt/2 p; p += M^-1 (dt K phi); phi -= dt/2 p`. It keeps the
//! discrete energy `(p.M p + phi.K phi) / 2` within O(dt^2) of its first value, which
//! [`Wave::energy`] computes: a check a reader can see.

pub mod mesh;

use mesh::{LocalGrid, STENCIL};
use op2::{Const, Dat, INC, Kernel, Map, READ, RW, Result, Runtime, Set, WRITE};

/// The seed's time step.
pub const DT: f64 = 0.001;

/// The kernels, in C as op2 takes them.
pub struct Kernels {
    /// `phi -= dt/2 p` (p READ, phi INC).
    pub phi_expr: Kernel,
    /// A temporary set to zero.
    pub zero: Kernel,
    /// `t1 = dt K phi` at a vertex, from its stencil's coordinates and `phi`.
    pub assemble1: Kernel,
    /// `t2 = M` (the lumped mass) at a vertex.
    pub assemble2: Kernel,
    /// `p += t1 / t2`.
    pub p_expr: Kernel,
    /// The energy's share of one vertex, into a Global.
    pub energy: Kernel,
}

/// The loop over a vertex's six triangles (vertex 0 and neighbours k, k+1 of its stencil,
/// counter-clockwise): `det` is twice the triangle's area, `g*` the gradients of the hat
/// functions times `det`. A neighbour missing at the boundary is the vertex itself, and the
/// triangle has no area.
const TRIANGLES: &str = r#"
  for (int k = 1; k < 7; k++) {
    int l = k == 6 ? 1 : k + 1;
    double x0 = x[0][0], y0 = x[0][1];
    double x1 = x[k][0], y1 = x[k][1];
    double x2 = x[l][0], y2 = x[l][1];
    double det = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0);
    if (det <= 1e-300) continue;
"#;

impl Kernels {
    /// Compiles nothing yet: kernels are checked here and compiled by the first loop.
    pub fn new() -> Result<Kernels> {
        let assemble1 = format!(
            r#"void assemble1(const double *x[{STENCIL}], const double *phi[{STENCIL}], double *t1) {{
  double acc = 0.0;
{TRIANGLES}
    double g0x = y1 - y2, g0y = x2 - x1;
    double g1x = y2 - y0, g1y = x0 - x2;
    double g2x = y0 - y1, g2y = x1 - x0;
    /* K_0j = area * grad(l_0).grad(l_j) = (g0.gj) / (2 det) */
    acc += ((g0x * g0x + g0y * g0y) * phi[0][0]
          + (g0x * g1x + g0y * g1y) * phi[k][0]
          + (g0x * g2x + g0y * g2y) * phi[l][0]) / (2.0 * det);
  }}
  *t1 = dt * acc;
}}"#
        );
        let assemble2 = format!(
            r#"void assemble2(const double *x[{STENCIL}], const double *phi[{STENCIL}], double *t2) {{
  double acc = 0.0;
  (void)phi; /* read as the seed's figures draw it; the lumped mass needs only the mesh */
{TRIANGLES}
    acc += det / 6.0; /* a third of the triangle's area */
  }}
  *t2 = acc;
}}"#
        );
        Ok(Kernels {
            phi_expr: Kernel::new(
                "phi_expr",
                "void phi_expr(const double *p, double *phi) { *phi += -0.5 * dt * *p; }",
            )?,
            zero: Kernel::new("zero", "void zero(double *t) { *t = 0.0; }")?,
            assemble1: Kernel::new("assemble1", &assemble1)?,
            assemble2: Kernel::new("assemble2", &assemble2)?,
            p_expr: Kernel::new(
                "p_expr",
                "void p_expr(const double *t1, const double *t2, double *p) { *p += *t1 / *t2; }",
            )?,
            energy: Kernel::new(
                "energy",
                "void energy(const double *p, const double *phi, const double *kphi, \
                 const double *m, double *e) { *e += 0.5 * (*m * *p * *p + *phi * *kphi / dt); }",
            )?,
        })
    }
}

/// The wave problem declared on a runtime: the vertex set, the stencil map, the coordinates
/// (called `v`, as the seed's loops name what the assemblies read), `p` and `phi`.
pub struct Wave {
    /// The runtime.
    pub rt: Runtime,
    /// This rank's vertices.
    pub vertices: Set,
    /// Each vertex and its neighbours.
    pub stencil: Map,
    /// Coordinates.
    pub v: Dat<f64>,
    /// The first field, `exp(-40 r^2)` about the centre at the start.
    pub p: Dat<f64>,
    /// The second field, zero at the start.
    pub phi: Dat<f64>,
    /// The time step, visible in every kernel as `dt`.
    pub dt: Const<f64>,
    /// The kernels.
    pub k: Kernels,
}

impl Wave {
    /// Declares this rank's strip of the `n` x `n` grid (split among the runtime's ranks).
    pub fn new(rt: &Runtime, n: usize) -> Result<Wave> {
        let comm = rt.communicator();
        let grid = LocalGrid::new(n, comm.size(), comm.rank());
        Wave::from_grid(rt, grid)
    }

    /// Declares a grid this rank built.
    pub fn from_grid(rt: &Runtime, grid: LocalGrid) -> Result<Wave> {
        let vertices = if rt.communicator().size() > 1 {
            rt.decl_set_with_halo(grid.sizes, grid.halo.clone(), "vertices")?
        } else {
            rt.decl_set(grid.len(), "vertices")?
        };
        let stencil = rt.decl_map(&vertices, &vertices, STENCIL, grid.stencil, "stencil")?;
        let p0: Vec<f64> = grid
            .coords
            .chunks(2)
            .map(|c| (-40.0 * ((c[0] - 0.5).powi(2) + (c[1] - 0.5).powi(2))).exp())
            .collect();
        let v = rt.decl_dat(&vertices, 2, grid.coords, "v")?;
        let p = rt.decl_dat(&vertices, 1, p0, "p")?;
        let phi = rt.decl_dat_zeros(&vertices, 1, "phi")?;
        let dt = rt.decl_const(1, &[DT], "dt")?;
        Ok(Wave {
            rt: rt.clone(),
            vertices,
            stencil,
            v,
            p,
            phi,
            dt,
            k: Kernels::new()?,
        })
    }

    /// Records one step: the seed's seven loops, with `t1` and `t2` temporaries.
    pub fn step(&self) -> Result<()> {
        let (rt, s, k) = (&self.rt, &self.vertices, &self.k);
        rt.par_loop(&k.phi_expr, s, [self.p.arg(READ), self.phi.arg(INC)])?;
        let t1 = rt.decl_temporary::<f64>(s, 1, "t1")?;
        rt.par_loop(&k.zero, s, [t1.arg(WRITE)])?;
        rt.par_loop(
            &k.assemble1,
            s,
            [
                self.v.arg_row(&self.stencil, READ),
                self.phi.arg_row(&self.stencil, READ),
                t1.arg(WRITE),
            ],
        )?;
        let t2 = rt.decl_temporary::<f64>(s, 1, "t2")?;
        rt.par_loop(&k.zero, s, [t2.arg(WRITE)])?;
        rt.par_loop(
            &k.assemble2,
            s,
            [
                self.v.arg_row(&self.stencil, READ),
                self.phi.arg_row(&self.stencil, READ),
                t2.arg(WRITE),
            ],
        )?;
        rt.par_loop(&k.p_expr, s, [t1.arg(READ), t2.arg(READ), self.p.arg(RW)])?;
        rt.par_loop(&k.phi_expr, s, [self.p.arg(READ), self.phi.arg(INC)])?;
        rt.release_temporary(&t1)?;
        rt.release_temporary(&t2)?;
        Ok(())
    }

    /// The discrete energy `(p.M p + phi.K phi) / 2` now, summed over ranks (forces what it
    /// needs).
    pub fn energy(&self) -> Result<f64> {
        let (rt, s, k) = (&self.rt, &self.vertices, &self.k);
        let kphi = rt.decl_temporary::<f64>(s, 1, "kphi")?;
        let m = rt.decl_temporary::<f64>(s, 1, "m")?;
        let row = |d: &Dat<f64>| d.arg_row(&self.stencil, READ);
        rt.par_loop(
            &k.assemble1,
            s,
            [row(&self.v), row(&self.phi), kphi.arg(WRITE)],
        )?;
        rt.par_loop(
            &k.assemble2,
            s,
            [row(&self.v), row(&self.phi), m.arg(WRITE)],
        )?;
        let e = rt.decl_global(1, &[0.0f64], "energy")?;
        rt.par_loop(
            &k.energy,
            s,
            [
                self.p.arg(READ),
                self.phi.arg(READ),
                kphi.arg(READ),
                m.arg(READ),
                e.arg(INC),
            ],
        )?;
        rt.release_temporary(&kphi)?;
        rt.release_temporary(&m)?;
        Ok(e.value()?[0])
    }
}

//! Airfoil's five loops hand-written in plain Rust over the same arrays, no library: the baseline
//! `cargo xtask bench` compares op2-rs against, in the same process.

use crate::mesh::Mesh;
use crate::solver::Constants;

/// The plain solver's state.
pub struct Baseline<'m> {
    mesh: &'m Mesh,
    c: Constants,
    q: Vec<f64>,
    qold: Vec<f64>,
    adt: Vec<f64>,
    res: Vec<f64>,
    /// Seconds spent in each loop, in [`crate::solver::LOOPS`] order.
    pub seconds: [f64; 5],
}

impl<'m> Baseline<'m> {
    /// q = qinf everywhere, res = 0.
    pub fn new(mesh: &'m Mesh, c: Constants) -> Self {
        let n = mesh.ncell();
        Baseline {
            mesh,
            c,
            q: (0..n).flat_map(|_| c.qinf).collect(),
            qold: vec![0.0; 4 * n],
            adt: vec![0.0; n],
            res: vec![0.0; 4 * n],
            seconds: [0.0; 5],
        }
    }

    /// The flow state.
    pub fn q(&self) -> &[f64] {
        &self.q
    }

    /// One iteration; returns `sqrt(rms / ncell)`.
    pub fn step(&mut self) -> f64 {
        let t = std::time::Instant::now();
        self.qold.copy_from_slice(&self.q);
        self.seconds[0] += t.elapsed().as_secs_f64();
        let mut rms = 0.0;
        for _ in 0..2 {
            let t = std::time::Instant::now();
            self.adt_calc();
            self.seconds[1] += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            self.res_calc();
            self.seconds[2] += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            self.bres_calc();
            self.seconds[3] += t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            rms = self.update();
            self.seconds[4] += t.elapsed().as_secs_f64();
        }
        (rms / self.mesh.ncell() as f64).sqrt()
    }

    fn adt_calc(&mut self) {
        let Constants { gam, gm1, cfl, .. } = self.c;
        let x = &self.mesh.x;
        for (c, (nodes, q)) in self
            .mesh
            .cell
            .chunks_exact(4)
            .zip(self.q.chunks_exact(4))
            .enumerate()
        {
            let p = |k: usize| {
                let n = nodes[k] as usize;
                (x[2 * n], x[2 * n + 1])
            };
            let ri = 1.0 / q[0];
            let u = ri * q[1];
            let v = ri * q[2];
            let cs = (gam * gm1 * (ri * q[3] - 0.5 * (u * u + v * v))).sqrt();
            let side = |a: (f64, f64), b: (f64, f64)| {
                let (dx, dy) = (b.0 - a.0, b.1 - a.1);
                (u * dy - v * dx).abs() + cs * (dx * dx + dy * dy).sqrt()
            };
            let (x1, x2, x3, x4) = (p(0), p(1), p(2), p(3));
            let mut adt = side(x1, x2);
            adt += side(x2, x3);
            adt += side(x3, x4);
            adt += side(x4, x1);
            self.adt[c] = adt / cfl;
        }
    }

    fn res_calc(&mut self) {
        let Constants { gm1, eps, .. } = self.c;
        let (x, q, adt, res) = (&self.mesh.x, &self.q, &self.adt, &mut self.res);
        for (nodes, cells) in self
            .mesh
            .edge
            .chunks_exact(2)
            .zip(self.mesh.ecell.chunks_exact(2))
        {
            let (n1, n2) = (nodes[0] as usize, nodes[1] as usize);
            let (c1, c2) = (cells[0] as usize, cells[1] as usize);
            let dx = x[2 * n1] - x[2 * n2];
            let dy = x[2 * n1 + 1] - x[2 * n2 + 1];
            let q1 = &q[4 * c1..4 * c1 + 4];
            let q2 = &q[4 * c2..4 * c2 + 4];
            let ri = 1.0 / q1[0];
            let p1 = gm1 * (q1[3] - 0.5 * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
            let vol1 = ri * (q1[1] * dy - q1[2] * dx);
            let ri = 1.0 / q2[0];
            let p2 = gm1 * (q2[3] - 0.5 * ri * (q2[1] * q2[1] + q2[2] * q2[2]));
            let vol2 = ri * (q2[1] * dy - q2[2] * dx);
            let mu = 0.5 * (adt[c1] + adt[c2]) * eps;
            let f = [
                0.5 * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]),
                0.5 * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy) + mu * (q1[1] - q2[1]),
                0.5 * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx) + mu * (q1[2] - q2[2]),
                0.5 * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3]),
            ];
            for n in 0..4 {
                res[4 * c1 + n] += f[n];
                res[4 * c2 + n] -= f[n];
            }
        }
    }

    fn bres_calc(&mut self) {
        let Constants { gm1, eps, qinf, .. } = self.c;
        let (x, q, adt, res) = (&self.mesh.x, &self.q, &self.adt, &mut self.res);
        for ((nodes, &c1), &bound) in self
            .mesh
            .bedge
            .chunks_exact(2)
            .zip(&self.mesh.becell)
            .zip(&self.mesh.bound)
        {
            let (n1, n2, c1) = (nodes[0] as usize, nodes[1] as usize, c1 as usize);
            let dx = x[2 * n1] - x[2 * n2];
            let dy = x[2 * n1 + 1] - x[2 * n2 + 1];
            let q1 = &q[4 * c1..4 * c1 + 4];
            let ri = 1.0 / q1[0];
            let p1 = gm1 * (q1[3] - 0.5 * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
            if bound == 1 {
                res[4 * c1 + 1] += p1 * dy;
                res[4 * c1 + 2] += -p1 * dx;
            } else {
                let vol1 = ri * (q1[1] * dy - q1[2] * dx);
                let ri = 1.0 / qinf[0];
                let p2 = gm1 * (qinf[3] - 0.5 * ri * (qinf[1] * qinf[1] + qinf[2] * qinf[2]));
                let vol2 = ri * (qinf[1] * dy - qinf[2] * dx);
                let mu = adt[c1] * eps;
                let q2 = qinf;
                res[4 * c1] += 0.5 * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]);
                res[4 * c1 + 1] +=
                    0.5 * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy) + mu * (q1[1] - q2[1]);
                res[4 * c1 + 2] +=
                    0.5 * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx) + mu * (q1[2] - q2[2]);
                res[4 * c1 + 3] +=
                    0.5 * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3]);
            }
        }
    }

    fn update(&mut self) -> f64 {
        let mut rms = 0.0;
        for (c, &adt) in self.adt.iter().enumerate() {
            let adti = 1.0 / adt;
            for n in 4 * c..4 * c + 4 {
                let del = adti * self.res[n];
                self.q[n] = self.qold[n] - del;
                self.res[n] = 0.0;
                rms += del * del;
            }
        }
        rms
    }
}

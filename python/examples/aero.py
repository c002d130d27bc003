"""Aero, PyOP2's finite-element demo of OP2's Aero, over op2rs, on a mesh it writes itself.

A potential-flow solver on bilinear quadrilaterals: each outer iteration assembles the element
stiffness matrices (``p_K``, 16 values per cell, declared ``soa=True`` in the mesh file and read
by the kernels through ``OP2_STRIDE``) and the residual, then solves the Newton step with
conjugate gradients made of op2 loops (a matrix-free product through the element matrices,
Dirichlet rows zeroed, global reductions for the dot products) and updates the potential.

The mesh (a structured grid of the unit square, nodes in OP2's HDF5 layout) is written first to
an HDF5 file and read back with PyOP2's ``fromhdf5`` constructors, as the demo read
``FE_grid.h5``. The same computation is then done with NumPy, and the program exits with status
1 unless the residuals, the CG iteration counts and the final potential agree.

    python aero.py [--backend sequential] [--cells 24] [--iterations 6] [--mesh FILE]
"""

import argparse
import math
import os
import sys
import tempfile

import h5py
import numpy as np

from op2rs import op2

G = 0.211324865405187  # the Gauss points of [0, 1]: G and 1 - G
H = 1.0 - G
# Bilinear shape functions of nodes (0,0), (1,0), (0,1), (1,1) at the 2 x 2 Gauss points
# (xi, eta) = (G|H, G|H), point p = 2 * (eta index) + (xi index): values, and derivatives in
# xi (first 16) then eta (last 16), 4 per point.
POINTS = [(G, G), (H, G), (G, H), (H, H)]
NG2 = [f for xi, eta in POINTS for f in ((1 - xi) * (1 - eta), xi * (1 - eta), (1 - xi) * eta, xi * eta)]
NG2_XI = ([d for xi, eta in POINTS for d in (-(1 - eta), 1 - eta, -eta, eta)]
          + [d for xi, eta in POINTS for d in (-(1 - xi), -xi, 1 - xi, xi)])
GAM, MINF = 1.4, 0.1

RES_CALC = """
void res_calc(double **x, double **phim, double *K, double **res) {
  for (int j = 0; j < 16; j++) OP2_STRIDE(K, j) = 0.0;
  for (int i = 0; i < 4; i++) {
    /* Consts are read by name (a pointer to one would not compile for OpenCL, whose
       constants live in their own address space). */
    double dxi[4], deta[4];
    for (int m = 0; m < 4; m++) {
      dxi[m] = Ng2_xi[4 * i + m];
      deta[m] = Ng2_xi[16 + 4 * i + m];
    }
    double x_xi = 0.0, x_eta = 0.0, y_xi = 0.0, y_eta = 0.0;
    for (int m = 0; m < 4; m++) {
      x_xi += dxi[m] * x[m][0];
      x_eta += deta[m] * x[m][0];
      y_xi += dxi[m] * x[m][1];
      y_eta += deta[m] * x[m][1];
    }
    double det = x_xi * y_eta - x_eta * y_xi;
    double N_x[4], N_y[4], u = 0.0, v = 0.0;
    for (int m = 0; m < 4; m++) {
      N_x[m] = (y_eta * dxi[m] - y_xi * deta[m]) / det;
      N_y[m] = (x_xi * deta[m] - x_eta * dxi[m]) / det;
      u += N_x[m] * phim[m][0];
      v += N_y[m] * phim[m][0];
    }
    double wt = wtg2[i] * det;
    double Dk = 1.0 + 0.5 * gm1 * (m2 - (u * u + v * v));
    double rho = pow(Dk, gm1i);
    double rc2 = rho / Dk;
    for (int j = 0; j < 4; j++) res[j][0] += wt * rho * (u * N_x[j] + v * N_y[j]);
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 4; k++)
        OP2_STRIDE(K, 4 * j + k) += wt * rho * (N_x[j] * N_x[k] + N_y[j] * N_y[k])
            - wt * rc2 * (u * N_x[j] + v * N_y[j]) * (u * N_x[k] + v * N_y[k]);
  }
}"""

KERNELS = {
    "dirichlet": "void dirichlet(double *res) { *res = 0.0; }",
    "init_cg": """void init_cg(const double *r, double *c, double *u, double *v, double *p) {
  *c += (*r) * (*r); *p = *r; *u = 0.0; *v = 0.0; }""",
    "spMV": """void spMV(double **v, const double *K, double **p) {
  for (int j = 0; j < 4; j++)
    for (int k = 0; k < 4; k++) v[j][0] += OP2_STRIDE(K, 4 * j + k) * p[k][0]; }""",
    "dotPV": "void dotPV(const double *p, const double *v, double *c) { *c += (*p) * (*v); }",
    "updateUR": """void updateUR(double *u, double *r, const double *p, double *v,
                     const double *alpha) {
  *u += (*alpha) * (*p); *r -= (*alpha) * (*v); *v = 0.0; }""",
    "dotR": "void dotR(const double *r, double *c) { *c += (*r) * (*r); }",
    "updateP": """void updateP(const double *r, double *p, const double *beta) {
  *p = (*beta) * (*p) + (*r); }""",
    "update": """void update(double *phim, double *res, const double *u, double *rms) {
  *phim -= *u; *res = 0.0; *rms += (*u) * (*u); }""",
}


def write_mesh(path, n):
    """An n x n grid of the unit square in OP2's HDF5 layout (as FE_grid.h5 holds Aero's)."""
    side = n + 1
    ij = np.arange(side * side)
    x = np.stack([(ij % side) / n, (ij // side) / n], axis=1)
    x[:, 0] += 0.1 * np.sin(np.pi * x[:, 1]) * x[:, 0] * (1 - x[:, 0])  # not quite square
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="xy")
    i, j = i.ravel(), j.ravel()
    pcell = np.stack([j * side + i, j * side + i + 1, (j + 1) * side + i,
                      (j + 1) * side + i + 1], axis=1)
    onb = (ij % side == 0) | (ij % side == n) | (ij // side == 0) | (ij // side == n)
    bnodes = np.flatnonzero(onb)
    phim = 0.1 * x[:, 0] + 0.05 * np.sin(np.pi * x[:, 0]) * np.sin(np.pi * x[:, 1])
    with h5py.File(path, "w") as f:
        for name, size in (("nodes", side * side), ("cells", n * n), ("bedges", bnodes.size)):
            f[name] = np.array([size], np.int32)
        f["pcell"] = pcell.astype(np.int32)
        f["pbedge"] = bnodes.reshape(-1, 1).astype(np.int32)
        for name, values, kind in (("p_x", x, "double"), ("p_phim", phim, "double"),
                                   ("p_K", np.zeros((n * n, 16)), "double:soa")):
            f[name] = values
            f[name].attrs["type"] = kind
        for name in ("p_resm", "p_V", "p_P", "p_U"):
            f[name] = np.zeros(side * side)
            f[name].attrs["type"] = "double"


def with_op2(path, backend, iterations, maxiter):
    """The demo's loops; returns ([(rms, CG iterations)], final potential)."""
    op2.init(backend=backend)
    for name, dim, value in (("gm1", 1, GAM - 1.0), ("gm1i", 1, 1.0 / (GAM - 1.0)),
                             ("wtg2", 4, [0.25] * 4), ("Ng2", 16, NG2), ("Ng2_xi", 32, NG2_XI),
                             ("minf", 1, MINF), ("m2", 1, MINF ** 2)):
        op2.Const(dim, value, name, dtype=np.double)
    k = {name: op2.Kernel(code, name) for name, code in KERNELS.items()}
    res_calc = op2.Kernel(RES_CALC, "res_calc")
    with h5py.File(path, "r") as f:
        nodes = op2.Set.fromhdf5(f, "nodes")
        bnodes = op2.Set.fromhdf5(f, "bedges")
        cells = op2.Set.fromhdf5(f, "cells")
        pbnodes = op2.Map.fromhdf5(bnodes, nodes, f, "pbedge")
        pcell = op2.Map.fromhdf5(cells, nodes, f, "pcell")
        p_x = op2.Dat.fromhdf5(nodes ** 2, f, "p_x")
        p_phim = op2.Dat.fromhdf5(nodes, f, "p_phim")
        p_resm = op2.Dat.fromhdf5(nodes, f, "p_resm")
        p_K = op2.Dat.fromhdf5(cells ** 16, f, "p_K")
        p_V = op2.Dat.fromhdf5(nodes, f, "p_V")
        p_P = op2.Dat.fromhdf5(nodes, f, "p_P")
        p_U = op2.Dat.fromhdf5(nodes, f, "p_U")
    assert p_K.soa and not p_x.soa
    history = []
    for _ in range(iterations):
        op2.par_loop(res_calc, cells, p_x(op2.READ, pcell), p_phim(op2.READ, pcell),
                     p_K(op2.WRITE), p_resm(op2.INC, pcell))
        op2.par_loop(k["dirichlet"], bnodes, p_resm(op2.WRITE, pbnodes[0]))
        c1 = op2.Global(1, 0.0, name="c1")
        op2.par_loop(k["init_cg"], nodes, p_resm(op2.READ), c1(op2.INC), p_U(op2.WRITE),
                     p_V(op2.WRITE), p_P(op2.WRITE))
        res = math.sqrt(c1.data[0])
        res0, it = 0.1 * res, 0
        while res > res0 and it < maxiter:
            op2.par_loop(k["spMV"], cells, p_V(op2.INC, pcell), p_K(op2.READ),
                         p_P(op2.READ, pcell))
            op2.par_loop(k["dirichlet"], bnodes, p_V(op2.WRITE, pbnodes[0]))
            c2 = op2.Global(1, 0.0, name="c2")
            op2.par_loop(k["dotPV"], nodes, p_P(op2.READ), p_V(op2.READ), c2(op2.INC))
            alpha = op2.Global(1, c1.data[0] / c2.data[0], name="alpha")
            op2.par_loop(k["updateUR"], nodes, p_U(op2.INC), p_resm(op2.INC), p_P(op2.READ),
                         p_V(op2.RW), alpha(op2.READ))
            c3 = op2.Global(1, 0.0, name="c3")
            op2.par_loop(k["dotR"], nodes, p_resm(op2.READ), c3(op2.INC))
            beta = op2.Global(1, c3.data[0] / c1.data[0], name="beta")
            op2.par_loop(k["updateP"], nodes, p_resm(op2.READ), p_P(op2.RW), beta(op2.READ))
            c1.data = c3.data
            res = math.sqrt(c1.data[0])
            it += 1
        rms = op2.Global(1, 0.0, name="rms")
        op2.par_loop(k["update"], nodes, p_phim(op2.RW), p_resm(op2.WRITE), p_U(op2.READ),
                     rms(op2.INC))
        history.append((math.sqrt(rms.data[0]) / math.sqrt(nodes.size), it))
    phim = p_phim.data_ro.copy()
    op2.exit()
    return history, phim


def with_numpy(path, iterations, maxiter):
    """The same computation with NumPy, element arrays at a time."""
    with h5py.File(path, "r") as f:
        x, phim = f["p_x"][()], f["p_phim"][()].copy()
        pcell, bnodes = f["pcell"][()], f["pbedge"][()].ravel()
    gm1, m2 = GAM - 1.0, MINF ** 2
    dxi = np.array(NG2_XI[:16]).reshape(4, 4)
    deta = np.array(NG2_XI[16:]).reshape(4, 4)
    xe = x[pcell]  # cells x 4 nodes x 2
    n = x.shape[0]
    history = []
    for _ in range(iterations):
        pe = phim[pcell]
        K = np.zeros((len(pcell), 4, 4))
        res = np.zeros(n)
        for i in range(4):
            x_xi, x_eta = xe[:, :, 0] @ dxi[i], xe[:, :, 0] @ deta[i]
            y_xi, y_eta = xe[:, :, 1] @ dxi[i], xe[:, :, 1] @ deta[i]
            det = x_xi * y_eta - x_eta * y_xi
            N_x = (np.outer(y_eta, dxi[i]) - np.outer(y_xi, deta[i])) / det[:, None]
            N_y = (np.outer(x_xi, deta[i]) - np.outer(x_eta, dxi[i])) / det[:, None]
            u, v = (N_x * pe).sum(1), (N_y * pe).sum(1)
            wt = 0.25 * det
            Dk = 1.0 + 0.5 * gm1 * (m2 - (u * u + v * v))
            rho = Dk ** (1.0 / gm1)
            rc2 = rho / Dk
            flux = u[:, None] * N_x + v[:, None] * N_y
            np.add.at(res, pcell, (wt * rho)[:, None] * flux)
            K += ((wt * rho)[:, None, None] * (N_x[:, :, None] * N_x[:, None, :]
                                               + N_y[:, :, None] * N_y[:, None, :])
                  - (wt * rc2)[:, None, None] * flux[:, :, None] * flux[:, None, :])
        res[bnodes] = 0.0
        U, P, r = np.zeros(n), res.copy(), res.copy()
        c1 = r @ r
        resid = math.sqrt(c1)
        res0, it = 0.1 * resid, 0
        while resid > res0 and it < maxiter:
            V = np.zeros(n)
            np.add.at(V, pcell, np.einsum("ejk,ek->ej", K, P[pcell]))
            V[bnodes] = 0.0
            alpha = c1 / (P @ V)
            U += alpha * P
            r -= alpha * V
            c3 = r @ r
            P = (c3 / c1) * P + r
            c1 = c3
            resid = math.sqrt(c1)
            it += 1
        phim -= U
        history.append((math.sqrt(U @ U) / math.sqrt(n), it))
    return history, phim


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--cells", type=int, default=24, help="cells along each side")
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--maxiter", type=int, default=200, help="CG iterations at most")
    p.add_argument("--mesh", help="where to write the mesh (default: a temporary file)")
    opt = p.parse_args()
    if opt.mesh:
        return run(opt, opt.mesh)
    # The mesh goes in a folder removed when the run ends.
    with tempfile.TemporaryDirectory(prefix="op2rs-aero-") as folder:
        return run(opt, os.path.join(folder, "FE_grid.h5"))


def run(opt, path):
    """Writes the mesh to ``path``, runs the solve with op2rs and with NumPy, and compares."""
    write_mesh(path, opt.cells)
    got, phim = with_op2(path, opt.backend, opt.iterations, opt.maxiter)
    want, phim_np = with_numpy(path, opt.iterations, opt.maxiter)
    ok = True
    for i, ((rms, its), (rms_np, its_np)) in enumerate(zip(got, want), 1):
        same = its == its_np and math.isclose(rms, rms_np, rel_tol=1e-8, abs_tol=1e-14)
        ok &= same
        print("rms = %10.5e iter: %d%s" % (rms, its, "" if same else
                                           "   <- NumPy: %10.5e iter: %d" % (rms_np, its_np)))
    err = np.max(np.abs(phim - phim_np)) / max(np.max(np.abs(phim_np)), 1e-300)
    ok &= err < 1e-9 and len(got) == opt.iterations
    print("potential: largest relative difference from NumPy %.2e; %s"
          % (err, "matches" if ok else "DIFFERS"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

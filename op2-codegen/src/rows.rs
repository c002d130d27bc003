//! Row transposes for SIMD batches: an indirect arg of 2 or 4 components moves between the Dat and
//! its component-major lane arrays as whole rows (one vector load or store per element), turned
//! around in registers, instead of one scalar load or store per component.
//!
//! Component-major lanes (`g[k][l]`, see `emit_element_loop`) let the kernel work on whole
//! vectors, but filling them one component at a time costs a scalar load and an insert per value:
//! Airfoil's `res_calc` gathers 14 values and adds 8 per edge, and with those done one by one the
//! batches ran no faster than single elements. Loading each element's row whole and transposing
//! the batch with shuffles (8 rows of 4 into 4 vectors of 8, and back for increments) does the
//! same work in about a third of the instructions. The increments keep their order: each lane's
//! row is added to the Dat lane by lane and arg by arg, as before, and a vector add is the same
//! additions component by component, so results keep their bits.
//!
//! The shuffles use `__builtin_shufflevector` (GCC 12 and later, Clang), which the compiler maps
//! to the target's permutes (AVX-512, AVX2, NEON); a compiler without it gets the same
//! transposes as plain loops over the vectors' elements (as does `OP2_CFLAGS=-DOP2_NO_SHUFFLES`,
//! which the tests use to check them).

use crate::batch::{HOST_INLINE, SIMD_BATCH, direct_rows, lanes_kernel, transposable};
use op2_core::{ArgSig, LoopSignature};
use std::fmt::Write;

/// The C type of one row of `a` (a vector of `dim` values), declared by [`emit_row_transposes`].
pub(crate) fn row_type(a: &ArgSig) -> String {
    format!("op2_row{}_{}", a.dim, a.dtype.c_name())
}

/// Gathers lane arrays `g` (`T g[dim][8]`) from the rows at offsets `o` (`int64_t o[8]`) of `base`.
pub(crate) fn gather_call(a: &ArgSig, g: &str, base: &str, o: &str) -> String {
    format!(
        "op2_rows_in{}_{}({g}, {base}, {o});",
        a.dim,
        a.dtype.c_name()
    )
}

/// Turns lane arrays `g` into the rows `v` (`row_type v[8]`), to be added with [`add_call`].
pub(crate) fn rows_call(a: &ArgSig, g: &str, v: &str) -> String {
    format!("op2_rows_out{}_{}({g}, {v});", a.dim, a.dtype.c_name())
}

/// Adds the row `v` into the Dat's row at `p`.
pub(crate) fn add_call(a: &ArgSig, p: &str, v: &str) -> String {
    format!("op2_rows_add{}_{}({p}, {v});", a.dim, a.dtype.c_name())
}

/// Declares the row types and transposes the batched loop of `sig` uses (nothing when SIMD
/// batches are off, or the loop has no [`transposable`] arg). Emitted before the user's code, so
/// that no macro of theirs can reach into it.
pub(crate) fn emit_row_transposes(s: &mut String, sig: &LoopSignature, simd: bool) {
    let Some(lanes) = lanes_kernel(sig).filter(|_| simd) else {
        return;
    };
    let mut seen: Vec<(usize, &str)> = Vec::new();
    for (a, _) in sig
        .args
        .iter()
        .zip(&lanes.strided)
        .filter(|(a, strided)| transposable(a) || (**strided && direct_rows(a)))
    {
        let key = (a.dim, a.dtype.c_name());
        if seen.contains(&key) {
            continue;
        }
        if seen.is_empty() {
            s.push_str(
                "#if defined(__has_builtin) && !defined(OP2_NO_SHUFFLES)\n\
                 #if __has_builtin(__builtin_shufflevector)\n\
                 #define OP2_SHUFFLES 1\n\
                 #endif\n\
                 #endif\n",
            );
        }
        seen.push(key);
        emit_one(s, a.dim, a.dtype.c_name());
    }
    if !seen.is_empty() {
        s.push('\n');
    }
}

/// One `(dim, type)`'s row type, gather, transpose back and row add.
fn emit_one(s: &mut String, d: usize, t: &str) {
    let w = SIMD_BATCH;
    debug_assert_eq!(w, 8, "the shuffles below are spelled for batches of 8");
    let row = format!("op2_row{d}_{t}");
    let wide = format!("op2_lanes{d}_{t}");
    let inline = HOST_INLINE;
    let _ = writeln!(
        s,
        "typedef {t} {row} __attribute__((vector_size({d} * sizeof({t}))));\n\
         static {inline} void op2_rows_add{d}_{t}({t} *op2_p, {row} op2_v) {{\n  \
           {row} op2_d;\n  \
           __builtin_memcpy(&op2_d, op2_p, sizeof op2_d);\n  \
           op2_d += op2_v;\n  \
           __builtin_memcpy(op2_p, &op2_d, sizeof op2_d);\n\
         }}"
    );
    // Gather: 8 rows in, `d` vectors of 8 out.
    let _ = writeln!(
        s,
        "static {inline} void op2_rows_in{d}_{t}({t} op2_g[{d}][{w}], const {t} *op2_base, const int64_t *op2_o) {{\n  \
           {row} op2_r[{w}];\n  \
           for (int op2_l = 0; op2_l < {w}; op2_l++) __builtin_memcpy(&op2_r[op2_l], op2_base + op2_o[op2_l], sizeof op2_r[0]);\n\
         #ifdef OP2_SHUFFLES\n  \
           typedef {t} {wide} __attribute__((vector_size({w} * sizeof({t}))));"
    );
    if d == 4 {
        // Rows l and l + 4 side by side, then 2x2 blocks, then whole components.
        s.push_str(&format!(
            "  {wide} op2_z0 = __builtin_shufflevector(op2_r[0], op2_r[4], 0, 1, 2, 3, 4, 5, 6, 7);\n  \
             {wide} op2_z1 = __builtin_shufflevector(op2_r[1], op2_r[5], 0, 1, 2, 3, 4, 5, 6, 7);\n  \
             {wide} op2_z2 = __builtin_shufflevector(op2_r[2], op2_r[6], 0, 1, 2, 3, 4, 5, 6, 7);\n  \
             {wide} op2_z3 = __builtin_shufflevector(op2_r[3], op2_r[7], 0, 1, 2, 3, 4, 5, 6, 7);\n  \
             {wide} op2_t0 = __builtin_shufflevector(op2_z0, op2_z1, 0, 8, 2, 10, 4, 12, 6, 14);\n  \
             {wide} op2_t1 = __builtin_shufflevector(op2_z0, op2_z1, 1, 9, 3, 11, 5, 13, 7, 15);\n  \
             {wide} op2_t2 = __builtin_shufflevector(op2_z2, op2_z3, 0, 8, 2, 10, 4, 12, 6, 14);\n  \
             {wide} op2_t3 = __builtin_shufflevector(op2_z2, op2_z3, 1, 9, 3, 11, 5, 13, 7, 15);\n  \
             {wide} op2_c[4] = {{\n    \
               __builtin_shufflevector(op2_t0, op2_t2, 0, 1, 8, 9, 4, 5, 12, 13),\n    \
               __builtin_shufflevector(op2_t1, op2_t3, 0, 1, 8, 9, 4, 5, 12, 13),\n    \
               __builtin_shufflevector(op2_t0, op2_t2, 2, 3, 10, 11, 6, 7, 14, 15),\n    \
               __builtin_shufflevector(op2_t1, op2_t3, 2, 3, 10, 11, 6, 7, 14, 15)}};\n"
        ));
    } else {
        // Rows in pairs, then fours, then even and odd values.
        let four = format!("op2_quad2_{t}");
        s.push_str(&format!(
            "  typedef {t} {four} __attribute__((vector_size(4 * sizeof({t}))));\n  \
             {four} op2_p0 = __builtin_shufflevector(op2_r[0], op2_r[1], 0, 1, 2, 3);\n  \
             {four} op2_p1 = __builtin_shufflevector(op2_r[2], op2_r[3], 0, 1, 2, 3);\n  \
             {four} op2_p2 = __builtin_shufflevector(op2_r[4], op2_r[5], 0, 1, 2, 3);\n  \
             {four} op2_p3 = __builtin_shufflevector(op2_r[6], op2_r[7], 0, 1, 2, 3);\n  \
             {wide} op2_a = __builtin_shufflevector(op2_p0, op2_p1, 0, 1, 2, 3, 4, 5, 6, 7);\n  \
             {wide} op2_b = __builtin_shufflevector(op2_p2, op2_p3, 0, 1, 2, 3, 4, 5, 6, 7);\n  \
             {wide} op2_c[2] = {{\n    \
               __builtin_shufflevector(op2_a, op2_b, 0, 2, 4, 6, 8, 10, 12, 14),\n    \
               __builtin_shufflevector(op2_a, op2_b, 1, 3, 5, 7, 9, 11, 13, 15)}};\n"
        ));
    }
    let _ = writeln!(
        s,
        "  for (int op2_k = 0; op2_k < {d}; op2_k++) __builtin_memcpy(op2_g[op2_k], &op2_c[op2_k], sizeof op2_c[0]);\n\
         #else\n  \
           for (int op2_k = 0; op2_k < {d}; op2_k++)\n    \
             for (int op2_l = 0; op2_l < {w}; op2_l++) op2_g[op2_k][op2_l] = op2_r[op2_l][op2_k];\n\
         #endif\n\
         }}"
    );
    // Transpose back: `d` vectors of 8 in, 8 rows out.
    let _ = writeln!(
        s,
        "static {inline} void op2_rows_out{d}_{t}({t} op2_g[{d}][{w}], {row} *op2_r) {{\n\
         #ifdef OP2_SHUFFLES\n  \
           typedef {t} {wide} __attribute__((vector_size({w} * sizeof({t}))));\n  \
           {wide} op2_c[{d}];\n  \
           for (int op2_k = 0; op2_k < {d}; op2_k++) __builtin_memcpy(&op2_c[op2_k], op2_g[op2_k], sizeof op2_c[0]);"
    );
    if d == 4 {
        s.push_str(&format!(
            "  {wide} op2_a0 = __builtin_shufflevector(op2_c[0], op2_c[1], 0, 8, 2, 10, 4, 12, 6, 14);\n  \
             {wide} op2_a1 = __builtin_shufflevector(op2_c[0], op2_c[1], 1, 9, 3, 11, 5, 13, 7, 15);\n  \
             {wide} op2_a2 = __builtin_shufflevector(op2_c[2], op2_c[3], 0, 8, 2, 10, 4, 12, 6, 14);\n  \
             {wide} op2_a3 = __builtin_shufflevector(op2_c[2], op2_c[3], 1, 9, 3, 11, 5, 13, 7, 15);\n  \
             {wide} op2_b02 = __builtin_shufflevector(op2_a0, op2_a2, 0, 1, 8, 9, 2, 3, 10, 11);\n  \
             {wide} op2_b46 = __builtin_shufflevector(op2_a0, op2_a2, 4, 5, 12, 13, 6, 7, 14, 15);\n  \
             {wide} op2_b13 = __builtin_shufflevector(op2_a1, op2_a3, 0, 1, 8, 9, 2, 3, 10, 11);\n  \
             {wide} op2_b57 = __builtin_shufflevector(op2_a1, op2_a3, 4, 5, 12, 13, 6, 7, 14, 15);\n  \
             op2_r[0] = __builtin_shufflevector(op2_b02, op2_b02, 0, 1, 2, 3);\n  \
             op2_r[1] = __builtin_shufflevector(op2_b13, op2_b13, 0, 1, 2, 3);\n  \
             op2_r[2] = __builtin_shufflevector(op2_b02, op2_b02, 4, 5, 6, 7);\n  \
             op2_r[3] = __builtin_shufflevector(op2_b13, op2_b13, 4, 5, 6, 7);\n  \
             op2_r[4] = __builtin_shufflevector(op2_b46, op2_b46, 0, 1, 2, 3);\n  \
             op2_r[5] = __builtin_shufflevector(op2_b57, op2_b57, 0, 1, 2, 3);\n  \
             op2_r[6] = __builtin_shufflevector(op2_b46, op2_b46, 4, 5, 6, 7);\n  \
             op2_r[7] = __builtin_shufflevector(op2_b57, op2_b57, 4, 5, 6, 7);\n"
        ));
    } else {
        s.push_str(&format!(
            "  {wide} op2_a = __builtin_shufflevector(op2_c[0], op2_c[1], 0, 8, 1, 9, 2, 10, 3, 11);\n  \
             {wide} op2_b = __builtin_shufflevector(op2_c[0], op2_c[1], 4, 12, 5, 13, 6, 14, 7, 15);\n  \
             op2_r[0] = __builtin_shufflevector(op2_a, op2_a, 0, 1);\n  \
             op2_r[1] = __builtin_shufflevector(op2_a, op2_a, 2, 3);\n  \
             op2_r[2] = __builtin_shufflevector(op2_a, op2_a, 4, 5);\n  \
             op2_r[3] = __builtin_shufflevector(op2_a, op2_a, 6, 7);\n  \
             op2_r[4] = __builtin_shufflevector(op2_b, op2_b, 0, 1);\n  \
             op2_r[5] = __builtin_shufflevector(op2_b, op2_b, 2, 3);\n  \
             op2_r[6] = __builtin_shufflevector(op2_b, op2_b, 4, 5);\n  \
             op2_r[7] = __builtin_shufflevector(op2_b, op2_b, 6, 7);\n"
        ));
    }
    let _ = writeln!(
        s,
        "#else\n  \
           for (int op2_l = 0; op2_l < {w}; op2_l++)\n    \
             for (int op2_k = 0; op2_k < {d}; op2_k++) op2_r[op2_l][op2_k] = op2_g[op2_k][op2_l];\n\
         #endif\n\
         }}"
    );
}

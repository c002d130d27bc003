/* op2-la's assembly pass on OpenMP's threads (feature `openmp`): the same owner-computes shares as
 * the Rust pass, run by the OpenMP runtime the openmp backend's loops already use, so the pass gets
 * the cores those threads keep while they wait for the next loop (libgomp's workers spin for a
 * while after each region; threads of our own would share a core with them). */
#include <stdint.h>

/* shares: 4 numbers per share (first entry, end of entries, first block entry, end of block
 * entries); slot[k] is block entry k's matrix entry (UINT32_MAX: none). Each share adds (or
 * stores, insert) its block entries that land in its entries, zeroing them when consume. */
void op2la_apply_shares(const uint32_t *slot, double *blocks, double *values,
                        const uint64_t *shares, int nshares, int insert, int consume) {
#pragma omp parallel for num_threads(nshares) schedule(static, 1)
  for (int t = 0; t < nshares; t++) {
    const uint64_t lo = shares[4 * t], span = shares[4 * t + 1] - lo;
    const uint64_t first = shares[4 * t + 2], end = shares[4 * t + 3];
    double *mine = values + lo;
    for (uint64_t k = first; k < end; k++) {
      /* Entries of other shares wrap past span (unsigned arithmetic). */
      const uint64_t i = (uint64_t)slot[k] - lo;
      if (i < span) {
        const double x = blocks[k];
        if (consume) blocks[k] = 0.0;
        if (insert)
          mine[i] = x;
        else
          mine[i] += x;
      }
    }
  }
}

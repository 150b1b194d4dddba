/*
 * test_train_verify.c — regressions from bringing up training (issue 5) in
 * the NeuronCore hardware verifier.
 *
 * A Linear's weight gradient leaves the backward graph as a transposed view:
 * a [256, 256] output written by two 128-partition tiles whose HBM rows are
 * one element apart (partition stride 1) with a free stride of 256. The two
 * stores interleave element by element but never touch the same byte. Their
 * runs (128 x 256 of one element each) exceed what the verifier enumerates,
 * and it used to fall back to "bounding boxes overlap": a false write-after-
 * write error that failed every training graph with a 256-wide Linear. The
 * lattice test (an exact integer check on the two patterns' strides) decides
 * these; real overlaps are still rejected.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_nc_util.h"

#define F32 TRNC_F32

/* Two stores of the transposed tiles [p0, p0 + 128) x [0, cols) of a
 * [rows, cols] output (element (r, c) at c * rows + r), on two DMA queues
 * with no semaphore between them. `shift` moves the second tile's start
 * (in elements): 0 keeps the tiles disjoint. */
static trnc_nc_program *transposed_stores(int rows, int cols, int shift) {
  trnc_nc_program *p = trnc_nc_program_create(NULL);
  trnc_nc_program_add_kernel(p, "k", 2);
  int o = trnc_nc_program_add_buffer(p, "o", TRNC_NC_BUF_OUTPUT, F32, (int64_t)rows * cols * 4, 0);
  trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
  ms.dst = SB(0, 128, 0, F32, 1, S64(1), S64(cols));
  ms.signal[0] = 0;
  ms.nsignal = 1;
  trnc_nc_kernel_append(p, 0, &ms);
  for (int h = 0; h < 2; h++) {
    int p0 = h * 128 + (h ? shift : 0);
    int np = rows - p0 < 128 ? rows - p0 : 128;
    trnc_nc_instr st = I_dma(h, HB(o, (int64_t)p0 * 4, F32, 1, np, 1, S64(rows), S64(cols)),
                             SB(0, np, 0, F32, 1, S64(1), S64(cols)));
    st.wait[0].sem = 0;
    st.wait[0].value = 1;
    st.nwait = 1;
    trnc_nc_kernel_append(p, 0, &st);
  }
  return p;
}

static void test_transposed_tiles_disjoint(void **state) {
  int shapes[][2] = {{256, 256}, {200, 300}, {256, 512}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    trnc_nc_program *p = transposed_stores(shapes[i][0], shapes[i][1], 0);
    nc_expect_ok(p);
    trnc_nc_program_destroy(p);
  }
}

static void test_transposed_tiles_overlap_rejected(void **state) {
  /* the second tile starts 64 rows early: rows [64, 128) written twice */
  trnc_nc_program *p = transposed_stores(256, 256, -64);
  nc_expect_reject(p, "dma1.dma_copy", "missing dependency", "write after write", NULL);
  trnc_nc_program_destroy(p);
  /* one row of overlap (row 127 in both tiles) */
  p = transposed_stores(256, 256, -1);
  nc_expect_reject(p, "missing dependency", "write after write", NULL);
  trnc_nc_program_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transposed_tiles_disjoint),
      cmocka_unit_test(test_transposed_tiles_overlap_rejected),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

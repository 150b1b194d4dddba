/*
 * test_nc_verify.c — the verifier of NeuronCore hardware limits: for each
 * rule, a program that violates exactly that rule is rejected with a
 * message naming the instruction and the limit.
 */
#define _POSIX_C_SOURCE 200809L
#include "test_nc_util.h"

#define F32 TRNC_F32
#define BF16 TRNC_BF16

/* A valid program:
 *  #0 dma0   stationary a[128,128] f32 -> SBUF@0 bf16
 *  #1 dma1   moving b[128,512] f32 -> SBUF@256 bf16
 *  #2 tensor matmul PSUM@0 [128,512] f32
 *  #3 vector tensor_copy PSUM -> SBUF@2048 f32
 *  #4 scalar activation (exp) -> SBUF@4096
 *  #5 gpsimd tensor_tensor add -> SBUF@6144
 *  #6 dma2   SBUF@6144 -> out */
static trnc_nc_program *base(void) {
  nct t;
  nct_init(&t, NULL);
  int a = trnc_nc_program_add_buffer(t.p, "a", TRNC_NC_BUF_INPUT, F32, 128 * 128 * 4, 0);
  int b = trnc_nc_program_add_buffer(t.p, "b", TRNC_NC_BUF_INPUT, F32, 128 * 512 * 4, 0);
  int o = trnc_nc_program_add_buffer(t.p, "out", TRNC_NC_BUF_OUTPUT, F32, 128 * 512 * 4, 0);
  nct_add(&t, I_dma(0, SB(0, 128, 0, BF16, 1, S64(1), S64(128)), HB(a, 0, F32, 128, 128, 1, S64(1), S64(128))));
  nct_add(&t, I_dma(1, SB(0, 128, 256, BF16, 1, S64(1), S64(512)), HB(b, 0, F32, 512, 128, 1, S64(1), S64(512))));
  trnc_nc_instr mm = I(TRNC_NC_OP_MATMUL, TRNC_NC_TENSOR);
  mm.dst = PS(0, 128, 0, F32, 1, S64(1), S64(512));
  mm.src[0] = SB(0, 128, 0, BF16, 1, S64(1), S64(128));
  mm.src[1] = SB(0, 128, 256, BF16, 1, S64(1), S64(512));
  nct_add(&t, mm);
  trnc_nc_instr cp = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
  cp.dst = SB(0, 128, 2048, F32, 1, S64(1), S64(512));
  cp.src[0] = PS(0, 128, 0, F32, 1, S64(1), S64(512));
  nct_add(&t, cp);
  trnc_nc_instr ac = I(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ac.act = TRNC_NC_ACT_EXP;
  ac.imm[0] = 1.0f;
  ac.dst = SB(0, 128, 4096, F32, 1, S64(1), S64(512));
  ac.src[0] = SB(0, 128, 2048, F32, 1, S64(1), S64(512));
  nct_add(&t, ac);
  trnc_nc_instr tt = I(TRNC_NC_OP_TENSOR_TENSOR, TRNC_NC_GPSIMD);
  tt.alu0 = TRNC_NC_ALU_ADD;
  tt.dst = SB(0, 128, 6144, F32, 1, S64(1), S64(512));
  tt.src[0] = SB(0, 128, 2048, F32, 1, S64(1), S64(512));
  tt.src[1] = SB(0, 128, 4096, F32, 1, S64(1), S64(512));
  nct_add(&t, tt);
  nct_add(&t, I_dma(2, HB(o, 0, F32, 512, 128, 1, S64(1), S64(512)), SB(0, 128, 6144, F32, 1, S64(1), S64(512))));
  return t.p;
}

static trnc_nc_instr *ins(trnc_nc_program *p, size_t i) { return trnc_nc_kernel_instr_mut(p, 0, i); }

static void test_base_ok(void **state) {
  trnc_nc_program *p = base();
  nc_expect_ok(p);
  nc_check_roundtrip(p);
  trnc_nc_program_destroy(p);
}

#define REJECT(mutation, ...)              \
  do {                                     \
    trnc_nc_program *p = base();           \
    mutation;                              \
    nc_expect_reject(p, __VA_ARGS__, NULL); \
    trnc_nc_program_destroy(p);            \
  } while (0)

static void test_engine_rules(void **state) {
  REJECT(ins(p, 2)->engine = TRNC_NC_VECTOR, "main#2 vector.matmul", "may not run on vector", "allowed: tensor");
  REJECT(ins(p, 0)->engine = TRNC_NC_SCALAR, "main#0 scalar.dma_copy", "allowed: dma0..dma15");
  REJECT(ins(p, 4)->engine = TRNC_NC_VECTOR, "main#4 vector.activation", "allowed: scalar");
  /* GpSimd never touches PSUM */
  REJECT(ins(p, 3)->engine = TRNC_NC_GPSIMD, "main#3 gpsimd.tensor_copy", "src0: GpSimd cannot access PSUM");
  /* DMA never touches PSUM */
  REJECT(ins(p, 6)->src[0] = PS(0, 128, 0, F32, 1, S64(1), S64(512)), "main#6 dma2.dma_copy",
         "DMA cannot access PSUM");
  /* only TensorE writes PSUM by matmul; TensorE reads SBUF, writes PSUM */
  REJECT(ins(p, 2)->dst = SB(0, 128, 8192, F32, 1, S64(1), S64(512)), "main#2 tensor.matmul",
         "TensorE writes PSUM only");
  REJECT(ins(p, 2)->src[1] = PS(0, 128, 4096, BF16, 1, S64(1), S64(512)), "main#2 tensor.matmul",
         "TensorE reads its inputs from SBUF only");
  /* compute engines do not access HBM */
  REJECT(ins(p, 5)->src[1] = HB(0, 0, F32, 128, 128, 1, S64(1), S64(512)), "main#5 gpsimd.tensor_tensor",
         "only DMA accesses HBM");
  /* not both tensor_tensor inputs in PSUM (VectorE may read PSUM) */
  REJECT((ins(p, 5)->engine = TRNC_NC_VECTOR, ins(p, 5)->src[0] = PS(0, 128, 0, F32, 1, S64(1), S64(512)),
          ins(p, 5)->src[1] = PS(0, 128, 0, F32, 1, S64(1), S64(512))),
         "main#5 vector.tensor_tensor", "may not both be in PSUM");
}

/* The instruction is the diagnostic's node; the message does not repeat it
 * ("node main#2 vector.matmul: main#2 vector.matmul: ..." before). */
static void test_diagnostic_names_instruction_once(void **state) {
  trnc_nc_program *p = base();
  ins(p, 2)->engine = TRNC_NC_VECTOR;
  trnc_diags *d = trnc_diags_create();
  assert_int_equal(trnc_nc_program_verify(p, d), TRNC_ERR_INVALID_GRAPH);
  const trnc_diag *g = trnc_diags_get(d, 0);
  assert_string_equal(g->node, "main#2 vector.matmul");
  assert_null(strstr(g->message, "main#2"));
  assert_non_null(strstr(g->message, "may not run on vector"));
  char *text = trnc_diags_format(d);
  assert_non_null(strstr(text, "node main#2 vector.matmul: "));
  assert_null(strstr(text, "main#2 vector.matmul: main#2"));
  trnc_free(text);
  trnc_diags_destroy(d);
  trnc_nc_program_destroy(p);
}

static void test_partition_rules(void **state) {
  REJECT(ins(p, 3)->dst.partitions = 129, "main#3 vector.tensor_copy", "partition count 129 exceeds 128");
  REJECT((ins(p, 3)->dst.start_partition = 100, ins(p, 3)->dst.partitions = 28, ins(p, 3)->src[0].partitions = 28),
         "main#3 vector.tensor_copy", "dst: start partition 100 not allowed for 28 partitions");
  REJECT((ins(p, 3)->dst.start_partition = 96, ins(p, 3)->dst.partitions = 33, ins(p, 3)->src[0].partitions = 33),
         "main#3 vector.tensor_copy", "dst: partitions [96, 129) outside 0..128");
  REJECT((ins(p, 3)->dst.start_partition = 32, ins(p, 3)->dst.partitions = 40, ins(p, 3)->src[0].partitions = 40),
         "main#3", "start partition 32 not allowed for 40 partitions");
  REJECT((ins(p, 3)->dst.start_partition = 64, ins(p, 3)->dst.partitions = 64, ins(p, 3)->src[0].partitions = 64,
          ins(p, 3)->src[0].start_partition = 32),
         "main#3", "src0: start partition 32 not allowed for 64 partitions");
  REJECT(ins(p, 5)->src[1].partitions = 127, "main#5 gpsimd.tensor_tensor", "src1 is [127, 512]",
         "must match");
}

static void test_capacity_rules(void **state) {
  REJECT(ins(p, 4)->dst.offset = 224 * 1024 - 1024, "main#4 scalar.activation",
         "outside SBUF capacity of 229376 bytes per partition (trn2)");
  REJECT((ins(p, 4)->dst.offset = 1024, ins(p, 4)->dst.free[0].stride = -1), "main#4",
         "dst: bytes [-1020, 1028) outside SBUF"); /* 1024 - 511*4 */
  REJECT(ins(p, 3)->dst.offset = 2050, "main#3", "byte offset 2050 not aligned to the f32 element size 4");
  /* PSUM: 2 KiB banks, 16 KiB per partition */
  REJECT((ins(p, 2)->dst.offset = 1024, ins(p, 3)->src[0].offset = 1024), "main#2 tensor.matmul",
         "cross a bank boundary (banks are 2048 bytes per partition)");
  REJECT((ins(p, 2)->dst.offset = 16384, ins(p, 3)->src[0].offset = 16384), "main#2 tensor.matmul",
         "outside PSUM capacity of 16384 bytes per partition");
  /* HBM buffer bounds */
  REJECT(ins(p, 1)->src[0].offset = 4, "main#1 dma1.dma_copy", "out of bounds of HBM buffer 'b'");
  REJECT(ins(p, 6)->dst.buffer = 7, "main#6", "HBM buffer index 7 out of range");
  REJECT(ins(p, 6)->dst.buffer = 1, "main#6", "writes input buffer 'b'");
}

static void test_matmul_rules(void **state) {
  REJECT((ins(p, 2)->src[0].partitions = 129), "main#2 tensor.matmul", "partition count 129 exceeds 128");
  REJECT((ins(p, 2)->src[1].free[0].count = 513, ins(p, 1)->dst.free[0].count = 513), "main#2 tensor.matmul",
         "moving free size N=513 exceeds 512 (trn2)");
  REJECT((ins(p, 2)->src[0].free[0].count = 130), "main#2 tensor.matmul", "stationary free size M=130 exceeds 128");
  REJECT((ins(p, 2)->src[1].partitions = 64), "main#2 tensor.matmul", "must be the same (K)");
  REJECT((ins(p, 2)->src[1].dtype = F32, ins(p, 1)->dst.dtype = F32), "main#2 tensor.matmul",
         "dtype pairing bf16 x f32 not supported");
  REJECT((ins(p, 2)->dst.dtype = BF16, ins(p, 3)->src[0].dtype = BF16), "main#2 tensor.matmul",
         "dst dtype must be f32");
  REJECT(ins(p, 2)->dst.partitions = 64, "main#2 tensor.matmul", "expected [M=128, N=512]");
  REJECT(ins(p, 2)->mode = 2, "main#2", "acc must be 0 or 1");
}

static void test_operand_rules(void **state) {
  REJECT(memset(&ins(p, 2)->src[1], 0, sizeof(trnc_nc_ap)), "main#2 tensor.matmul", "missing operand src1");
  REJECT(ins(p, 3)->src[1] = SB(0, 128, 0, F32, 1, S64(1), S64(512)), "main#3", "tensor_copy takes no operand src1");
  REJECT(ins(p, 3)->dst.dtype = TRNC_I64, "main#3", "dtype 7 is not a NeuronCore type");
  REJECT(ins(p, 6)->src[0].free[0].count = 500, "main#6 dma2.dma_copy", "dst has 65536 elements but src0 has 64000");
  REJECT((ins(p, 3)->op = TRNC_NC_OP_TENSOR_REDUCE, ins(p, 3)->mode = 3), "main#3 vector.tensor_reduce",
         "axes=3: must reduce 1..1");
  REJECT((ins(p, 0)->mode = TRNC_NC_DMA_GATHER), "main#0 dma0.dma_copy", "index tile) must be SBUF i32 [128, 1]");
  REJECT(ins(p, 4)->act = 200, "main#4", "activation function 200 out of range");
  /* NKI's DMA transpose is 2-byte only: an fp32 source is refused */
  REJECT((ins(p, 0)->mode = TRNC_NC_DMA_TRANSPOSE), "main#0 dma0.dma_copy",
         "a DMA transpose moves 2-byte elements only (src0 f32, dst bf16)");
}

/* Two queues touching the same SBUF bytes; `sync` adds the semaphore. */
static trnc_nc_program *race_prog(bool sync, bool war) {
  trnc_nc_program *p = trnc_nc_program_create(NULL);
  trnc_nc_program_add_kernel(p, "k", 2);
  int x = trnc_nc_program_add_buffer(p, "x", TRNC_NC_BUF_INPUT, F32, 4 * 8 * 4, 0);
  trnc_nc_instr ld = I_dma(0, SB(0, 4, 0, F32, 1, S64(1), S64(8)), HB(x, 0, F32, 8, 4, 1, S64(1), S64(8)));
  ld.signal[0] = 0;
  ld.nsignal = 1;
  trnc_nc_instr ex = I(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
  ex.dst = SB(0, 4, 64, F32, 1, S64(1), S64(8));
  ex.src[0] = SB(0, 4, 0, F32, 1, S64(1), S64(8));
  ex.signal[0] = 1;
  ex.nsignal = 1;
  if (sync) {
    ex.wait[0].sem = 0;
    ex.wait[0].value = 1;
    ex.nwait = 1;
  }
  trnc_nc_kernel_append(p, 0, &ld);
  trnc_nc_kernel_append(p, 0, &ex);
  if (war) { /* dma3 overwrites the activation input without waiting for it */
    trnc_nc_instr ow = I_dma(3, SB(0, 4, 0, F32, 1, S64(1), S64(8)), HB(x, 0, F32, 8, 4, 1, S64(1), S64(8)));
    ow.wait[0].sem = 0;
    ow.wait[0].value = 1;
    ow.nwait = 1;
    trnc_nc_kernel_append(p, 0, &ow);
  }
  return p;
}

static void test_dependency_rules(void **state) {
  trnc_nc_program *p = race_prog(true, false);
  nc_expect_ok(p);
  nc_check_roundtrip(p);
  trnc_nc_program_destroy(p);
  p = race_prog(false, false);
  nc_expect_reject(p, "k#1 scalar.activation", "missing dependency", "k#0 dma0.dma_copy", "read after write", NULL);
  trnc_nc_program_destroy(p);
  p = race_prog(true, true);
  nc_expect_reject(p, "k#2 dma3.dma_copy", "missing dependency", "k#1 scalar.activation", "write after read", NULL);
  trnc_nc_program_destroy(p);
}

/* Stores of disjoint HBM rows from two queues need no semaphore (exact row
 * test, not bounding boxes); overlapping rows do. */
static void test_hbm_rows(void **state) {
  for (int clash = 0; clash < 2; clash++) {
    trnc_nc_program *p = trnc_nc_program_create(NULL);
    trnc_nc_program_add_kernel(p, "k", 2);
    int o = trnc_nc_program_add_buffer(p, "o", TRNC_NC_BUF_OUTPUT, F32, 8 * 16 * 4, 0);
    trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    ms.dst = SB(0, 8, 0, F32, 1, S64(1), S64(8));
    ms.signal[0] = 0;
    ms.nsignal = 1;
    trnc_nc_kernel_append(p, 0, &ms);
    for (int h = 0; h < 2; h++) { /* left and right halves of each 16-wide row */
      trnc_nc_instr st = I_dma(h, HB(o, (clash ? 4 : 8) * 4 * h, F32, 16, 8, 1, S64(1), S64(8)),
                               SB(0, 8, 0, F32, 1, S64(1), S64(8)));
      st.wait[0].sem = 0;
      st.wait[0].value = 1;
      st.nwait = 1;
      trnc_nc_kernel_append(p, 0, &st);
    }
    if (clash)
      nc_expect_reject(p, "k#2 dma1.dma_copy", "missing dependency", "k#1 dma0.dma_copy", "write after write", NULL);
    else
      nc_expect_ok(p);
    trnc_nc_program_destroy(p);
  }
}

/* Regression: two DMA stores that interleave (each writes every other block
 * of columns of a [4, 16] tile: partitions along columns, free along rows)
 * have overlapping bounding boxes but no common byte; only a real overlap
 * needs a semaphore. */
static void test_hbm_interleaved_columns(void **state) {
  for (int clash = 0; clash < 2; clash++) {
    trnc_nc_program *p = trnc_nc_program_create(NULL);
    trnc_nc_program_add_kernel(p, "k", 2);
    int o = trnc_nc_program_add_buffer(p, "o", TRNC_NC_BUF_OUTPUT, F32, 4 * 16 * 4, 0);
    trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    ms.dst = SB(0, 8, 0, F32, 1, S64(1), S64(4));
    ms.signal[0] = 0;
    ms.nsignal = 1;
    trnc_nc_kernel_append(p, 0, &ms);
    for (int h = 0; h < 2; h++) { /* columns [0, 8) and [8, 16) (clash: [4, 12)) */
      trnc_nc_instr st = I_dma(h, HB(o, (clash ? 4 : 8) * 4 * h, F32, 1, 8, 1, S64(16), S64(4)),
                               SB(0, 8, 0, F32, 1, S64(1), S64(4)));
      st.wait[0].sem = 0;
      st.wait[0].value = 1;
      st.nwait = 1;
      trnc_nc_kernel_append(p, 0, &st);
    }
    if (clash)
      nc_expect_reject(p, "k#2 dma1.dma_copy", "missing dependency", "write after write", NULL);
    else
      nc_expect_ok(p);
    trnc_nc_program_destroy(p);
  }
}


/* ---- the race check against a pairwise reference ------------------------- */

/* A reference of the dependency rule: instruction i happens before j when
 * a chain of queue-order and semaphore edges leads from i to j (the edges of
 * these programs go from earlier to later listed instructions, so ancestor
 * sets fill in list order); two operands conflict when one writes and their
 * SBUF bounding boxes or exact HBM bytes intersect. */
typedef struct rprog {
  trnc_nc_instr in[48];
  int n;
} rprog;

static uint32_t rnd(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static bool ref_overlap(const trnc_nc_ap *a, const trnc_nc_ap *b) {
  if (a->mem != b->mem || !a->mem) return false;
  if (a->mem == TRNC_NC_MEM_HBM) {
    if (a->buffer != b->buffer) return false;
    for (int pa = 0; pa < a->partitions; pa++)
      for (int64_t fa = 0; fa < a->free[0].count; fa++)
        for (int pb = 0; pb < b->partitions; pb++)
          for (int64_t fb = 0; fb < b->free[0].count; fb++)
            if (a->offset + 4 * (pa * a->partition_stride + fa * a->free[0].stride) ==
                b->offset + 4 * (pb * b->partition_stride + fb * b->free[0].stride))
              return true;
    return false;
  }
  int64_t alo = a->offset, ahi = a->offset + 4 * a->free[0].count;
  int64_t blo = b->offset, bhi = b->offset + 4 * b->free[0].count;
  return a->start_partition < b->start_partition + b->partitions &&
         b->start_partition < a->start_partition + a->partitions && alo < bhi && blo < ahi;
}

static bool ref_race(const rprog *r) {
  uint64_t anc[48] = {0};
  int lastq[TRNC_NC_ENGINE_COUNT];
  for (int e = 0; e < TRNC_NC_ENGINE_COUNT; e++) lastq[e] = -1;
  int nth[TRNC_NC_ENGINE_COUNT][48], cnt[TRNC_NC_ENGINE_COUNT] = {0};
  for (int j = 0; j < r->n; j++) {
    const trnc_nc_instr *in = &r->in[j];
    int q = in->engine;
    if (lastq[q] >= 0) anc[j] |= anc[lastq[q]] | (1ull << lastq[q]);
    for (int w = 0; w < in->nwait; w++) {
      int pr = nth[in->wait[w].sem][in->wait[w].value - 1];
      anc[j] |= anc[pr] | (1ull << pr);
    }
    lastq[q] = j;
    nth[q][cnt[q]++] = j;
  }
  for (int j = 0; j < r->n; j++)
    for (int i = 0; i < j; i++) {
      if (r->in[i].engine == r->in[j].engine || (anc[j] >> i & 1)) continue;
      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
          const trnc_nc_ap *x = a ? &r->in[i].src[a - 1] : &r->in[i].dst;
          const trnc_nc_ap *y = b ? &r->in[j].src[b - 1] : &r->in[j].dst;
          if ((a == 0 || b == 0) && ref_overlap(x, y)) return true;
        }
    }
  return false;
}

static trnc_nc_ap rnd_sbuf(uint32_t *s, bool dma) {
  static const int parts[3] = {32, 64, 128};
  int np = parts[rnd(s) % 3];
  int start = np == 128 ? 0 : np == 64 ? 64 * (int)(rnd(s) % 2) : 32 * (int)(rnd(s) % 4);
  if (dma) {
    np = 1 + (int)(rnd(s) % 128);
    start = (int)(rnd(s) % (uint32_t)(129 - np));
  }
  return SB(start, np, 64 * (int64_t)(rnd(s) % 12), F32, 1, S64(1), S64(16));
}

/* Random programs over four queues and a few tiles: each instruction
 * waits for up to two earlier instructions of other queues. */
static void test_race_matches_pairwise(void **state) {
  (void)state;
  uint32_t seed = 12345;
  int rejected = 0, accepted = 0;
  for (int iter = 0; iter < 1000; iter++) {
    rprog r;
    memset(&r, 0, sizeof r);
    r.n = 2 + (int)(rnd(&seed) % 14);
    static const int engines[5] = {TRNC_NC_VECTOR, TRNC_NC_SCALAR, TRNC_NC_GPSIMD, TRNC_NC_DMA0, TRNC_NC_DMA0 + 1};
    int cnt[TRNC_NC_ENGINE_COUNT] = {0};
    /* #0 writes every byte the others read (the uninitialised-read rule) */
    r.in[0] = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    r.in[0].dst = SB(0, 128, 0, F32, 1, S64(1), S64(256));
    for (int i = 0; i < r.n; i++) {
      trnc_nc_instr *in = &r.in[i];
      if (i > 0) {
        int e = engines[rnd(&seed) % 5];
        bool dma = e >= TRNC_NC_DMA0;
        if (dma && rnd(&seed) % 2) { /* a store of a [rows, 4] block of a [8, 16] f32 output */
          int rows = 1 + (int)(rnd(&seed) % 7);
          *in = I_dma(e - TRNC_NC_DMA0, HB(1, 4 * (int64_t)(rnd(&seed) % 13), F32, 16, rows, 1,
                                           S64(1 + rnd(&seed) % 2), S64(4)),
                      SB(0, rows, 0, F32, 1, S64(1), S64(4)));
        } else {
          *in = I(dma ? TRNC_NC_OP_DMA_COPY : TRNC_NC_OP_TENSOR_COPY, e);
          in->dst = rnd_sbuf(&seed, dma);
          in->src[0] = in->dst;
          in->src[0].offset = 64 * (int64_t)(rnd(&seed) % 12);
        }
        if (e != TRNC_NC_VECTOR) { /* after the memset */
          in->wait[0] = (trnc_nc_wait){TRNC_NC_VECTOR, 1};
          in->nwait = 1;
        }
        for (int w = 0, nw = (int)(rnd(&seed) % 4); w < nw && in->nwait < TRNC_NC_MAX_WAIT; w++) {
          int qe = engines[rnd(&seed) % 5];
          if (qe == e || !cnt[qe]) continue;
          bool dup = false;
          for (int k = 0; k < in->nwait; k++) dup |= in->wait[k].sem == qe;
          if (dup) continue;
          in->wait[in->nwait].sem = (uint16_t)qe;
          in->wait[in->nwait].value = 1 + rnd(&seed) % (uint32_t)cnt[qe];
          in->nwait++;
        }
      }
      in->signal[0] = in->engine;
      in->nsignal = 1;
      cnt[in->engine]++;
    }
    trnc_nc_program *p = trnc_nc_program_create(NULL);
    trnc_nc_program_add_kernel(p, "k", TRNC_NC_ENGINE_COUNT);
    trnc_nc_program_add_buffer(p, "x", TRNC_NC_BUF_INPUT, F32, 64, 0);
    trnc_nc_program_add_buffer(p, "o", TRNC_NC_BUF_OUTPUT, F32, 8 * 16 * 4, 0);
    for (int i = 0; i < r.n; i++) assert_int_equal(trnc_nc_kernel_append(p, 0, &r.in[i]), TRNC_OK);
    bool race = ref_race(&r);
    if (race) {
      nc_expect_reject(p, "missing dependency", NULL);
      rejected++;
    } else {
      nc_expect_ok(p);
      accepted++;
    }
    trnc_nc_program_destroy(p);
  }
  /* both outcomes are common, so the comparison means something */
  print_message("race check vs pairwise: %d rejected, %d accepted\n", rejected, accepted);
  assert_true(rejected > 100 && accepted > 100);
}

/* A write that races with a read several thousand instructions before it
 * (a queue far ahead of another) is found; the reader's queue is not the
 * last to read the bytes. */
static void test_race_far_apart(void **state) {
  (void)state;
  for (int sync = 0; sync < 2; sync++) {
    trnc_nc_program *p = trnc_nc_program_create(NULL);
    trnc_nc_program_add_kernel(p, "k", TRNC_NC_ENGINE_COUNT);
    trnc_nc_instr ms = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    ms.dst = SB(0, 128, 0, F32, 1, S64(1), S64(64));
    ms.signal[0] = TRNC_NC_VECTOR;
    ms.nsignal = 1;
    trnc_nc_kernel_append(p, 0, &ms);
    /* scalar reads bytes [0, 64) (waits for the memset) */
    trnc_nc_instr rd = I(TRNC_NC_OP_ACTIVATION, TRNC_NC_SCALAR);
    rd.dst = SB(0, 128, 1024, F32, 1, S64(1), S64(16));
    rd.src[0] = SB(0, 128, 0, F32, 1, S64(1), S64(16));
    rd.wait[0] = (trnc_nc_wait){TRNC_NC_VECTOR, 1};
    rd.nwait = 1;
    rd.signal[0] = TRNC_NC_SCALAR;
    rd.nsignal = 1;
    trnc_nc_kernel_append(p, 0, &rd);
    /* 4000 gpsimd copies of other bytes, then gpsimd reads [0, 64) too */
    for (int i = 0; i < 4001; i++) {
      trnc_nc_instr cp = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_GPSIMD);
      cp.dst = SB(0, 128, 2048 + 64 * (i % 8), F32, 1, S64(1), S64(16));
      cp.src[0] = SB(0, 128, i == 4000 ? 0 : 128, F32, 1, S64(1), S64(16));
      if (i == 0) {
        cp.wait[0] = (trnc_nc_wait){TRNC_NC_VECTOR, 1};
        cp.nwait = 1;
      }
      cp.signal[0] = TRNC_NC_GPSIMD;
      cp.nsignal = 1;
      trnc_nc_kernel_append(p, 0, &cp);
    }
    /* dma0 overwrites [0, 64) after the gpsimd reads; it must also wait for scalar */
    trnc_nc_instr ow = I_dma(0, SB(0, 128, 0, F32, 1, S64(1), S64(16)), SB(0, 128, 128, F32, 1, S64(1), S64(16)));
    ow.wait[0] = (trnc_nc_wait){TRNC_NC_GPSIMD, 4001};
    ow.nwait = 1;
    if (sync) {
      ow.wait[1] = (trnc_nc_wait){TRNC_NC_SCALAR, 1};
      ow.nwait = 2;
    }
    trnc_nc_kernel_append(p, 0, &ow);
    if (sync) nc_expect_ok(p);
    else nc_expect_reject(p, "k#4003 dma0.dma_copy", "missing dependency", "k#1 scalar.activation",
                          "write after read", NULL);
    trnc_nc_program_destroy(p);
  }
}

/* The uninitialised-read rule over partitions and bytes: partitions [64, 96)
 * of the second half of a row never written; a read of everything names
 * partition 64, a read of the written parts passes. */
static void test_uninitialised_partition_named(void **state) {
  (void)state;
  for (int whole = 0; whole < 2; whole++) {
    nct t;
    nct_init(&t, NULL);
    trnc_nc_instr a = I(TRNC_NC_OP_MEMSET, TRNC_NC_VECTOR);
    a.dst = SB(0, 64, 0, F32, 1, S64(1), S64(100));
    nct_add(&t, a);
    a.dst = SB(96, 32, 0, F32, 1, S64(1), S64(100));
    nct_add(&t, a);
    a.dst = SB(64, 32, 0, F32, 1, S64(1), S64(50)); /* bytes [0, 200) of partitions [64, 96) */
    nct_add(&t, a);
    trnc_nc_instr rd = I(TRNC_NC_OP_TENSOR_COPY, TRNC_NC_VECTOR);
    rd.dst = SB(0, 128, 1024, F32, 1, S64(1), S64(whole ? 100 : 50));
    rd.src[0] = SB(0, 128, 0, F32, 1, S64(1), S64(whole ? 100 : 50));
    nct_add(&t, rd);
    if (whole) nc_expect_reject(t.p, "main#3 vector.tensor_copy", "src0 reads SBUF partition 64", "never written", NULL);
    else nc_expect_ok(t.p);
    trnc_nc_program_destroy(t.p);
  }
}

static void test_uninitialised_read(void **state) {
  REJECT(ins(p, 4)->src[0].offset = 10240, "main#4 scalar.activation", "src0 reads SBUF partition 0",
         "never written");
  /* accumulate into a PSUM bank nothing wrote */
  REJECT(ins(p, 2)->mode = 1, "main#2 tensor.matmul", "dst (accumulate) reads PSUM partition 0", "never written");
}

static void test_semaphore_rules(void **state) {
  REJECT(ins(p, 3)->wait[0].value = 2, "main#3", "waits for s2>=2 but s2 is signalled only 1 times (deadlock)");
  REJECT(ins(p, 3)->wait[0].sem = 300, "main#3", "waits on semaphore s300, kernel has 256");
  REJECT(ins(p, 4)->signal[0] = 3, "main#4", "semaphore s3 is signalled by vector and scalar");
  /* a wait on a later instruction of the same queue */
  REJECT((ins(p, 0)->wait[0].sem = 1, ins(p, 0)->wait[0].value = 1, ins(p, 0)->nwait = 1, ins(p, 1)->engine = TRNC_NC_DMA0),
         "main#0 dma0.dma_copy", "signalled later by its own queue (deadlock)");
  /* a cycle across two queues */
  REJECT((ins(p, 1)->nwait = 1, ins(p, 1)->wait[0].sem = 2, ins(p, 1)->wait[0].value = 1), "deadlock");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base_ok),          cmocka_unit_test(test_engine_rules),
      cmocka_unit_test(test_diagnostic_names_instruction_once),
      cmocka_unit_test(test_partition_rules),  cmocka_unit_test(test_capacity_rules),
      cmocka_unit_test(test_matmul_rules),     cmocka_unit_test(test_operand_rules),
      cmocka_unit_test(test_dependency_rules), cmocka_unit_test(test_uninitialised_read),
      cmocka_unit_test(test_semaphore_rules), cmocka_unit_test(test_hbm_rows), cmocka_unit_test(test_hbm_interleaved_columns),
      cmocka_unit_test(test_race_matches_pairwise), cmocka_unit_test(test_race_far_apart),
      cmocka_unit_test(test_uninitialised_partition_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * nc_internal.h — internals of the NeuronCore program shared by the
 * contract layer (builder, printer, parser, serializer, verifier, schedule,
 * cost model) and runtime/ (simulator). Not part of the public API.
 */
#ifndef TRNC_CODEGEN_NC_INTERNAL_H
#define TRNC_CODEGEN_NC_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/diag.h"
#include "trnc/neuroncore.h"

typedef struct nc_kernel {
  char *name;
  trnc_nc_collective *cc; /* a collective step (no instructions), else NULL */
  int nsem;
  trnc_nc_instr *instrs;
  size_t n, cap;
} nc_kernel;

struct trnc_nc_program {
  const trnc_nc_target *target;
  trnc_nc_buffer *bufs;
  size_t nbufs, capb;
  nc_kernel *kernels;
  size_t nkernels, capk;
  int64_t scratch;
};

/* Operand slots and parameters an opcode uses. */
enum {
  NC_SLOT_DST = 1 << 0,
  NC_SLOT_DST2 = 1 << 1,
  NC_SLOT_SRC0 = 1 << 2,
  NC_SLOT_SRC1 = 1 << 3,
  NC_SLOT_SRC2 = 1 << 4,
};
enum {
  NC_PAR_ALU0 = 1 << 0,
  NC_PAR_ALU1 = 1 << 1,
  NC_PAR_ACT = 1 << 2,
  NC_PAR_MODE = 1 << 3,
  NC_PAR_IMM0 = 1 << 4,
  NC_PAR_IMM1 = 1 << 5,
  NC_PAR_IMM2 = 1 << 6,
  NC_PAR_AFF = 1 << 7,
};

typedef struct nc_opinfo {
  const char *name;
  uint32_t engines;  /* mask of 1 << engine */
  uint8_t slots;     /* operand slots the opcode may use */
  uint8_t required;  /* operand slots it must use */
  uint8_t params;    /* NC_PAR_* */
  const char *mode_key; /* asm key of `mode` ("mode", "acc", "axes") or NULL */
} nc_opinfo;

extern const nc_opinfo nc_opinfo_table[TRNC_NC_OP_COUNT];

#define NC_DMA_MASK (((1u << TRNC_NC_NUM_DMA_QUEUES) - 1u) << TRNC_NC_DMA0)

static inline bool nc_is_dma(int engine) {
  return engine >= TRNC_NC_DMA0 && engine < TRNC_NC_ENGINE_COUNT;
}

/* Access-pattern helpers. */
int64_t nc_ap_elems(const trnc_nc_ap *ap); /* partitions * free elems */
/* Byte extent of one partition's elements relative to the AP base:
 * [*lo, *hi). Returns false on overflow. */
bool nc_ap_extent(const trnc_nc_ap *ap, int64_t *lo, int64_t *hi);
/* Pointer of operand slot s (0 dst, 1 dst2, 2..4 src0..2) of an instruction. */
const trnc_nc_ap *nc_slot(const trnc_nc_instr *in, int s);
trnc_nc_ap *nc_slot_mut(trnc_nc_instr *in, int s);
extern const char *const nc_slot_names[5];

/* "main#12 tensor.matmul" into buf. */
const char *nc_where(const trnc_nc_program *p, size_t k, size_t i, char *buf, size_t n);

/* Dependency schedule of one kernel: a topological order of its
 * instructions that respects queue order and semaphore waits. For each
 * instruction i, producer[i*MAX_WAIT + w] = index of the instruction whose
 * signal satisfies wait w (or SIZE_MAX). Returns TRNC_OK, or
 * TRNC_ERR_INVALID_GRAPH with diagnostics (bad semaphore, deadlock). */
typedef struct nc_schedule {
  size_t n;
  size_t *order;     /* n entries */
  size_t *producer;  /* n * TRNC_NC_MAX_WAIT entries */
} nc_schedule;
trnc_status nc_schedule_build(const trnc_nc_program *p, size_t k, nc_schedule *s,
                              trnc_diags *diags);
void nc_schedule_free(nc_schedule *s);

/* One verifier error diagnostic at `where` (an instruction or step). */
void nc_verify_error(trnc_diags *diags, const char *where, const char *fmt, va_list ap);

/* The collective-step rules of trnc_nc_program_verify (verify_cc.c): one
 * error diagnostic per violation, counted into *errors. */
void nc_verify_collectives(const trnc_nc_program *p, trnc_diags *diags, size_t *errors);

/* The dependency (race) rule of trnc_nc_program_verify for kernel k over
 * its schedule s (verify_race.c): one error diagnostic per racing pair (at
 * most 16), counted into *errors; O(n log n) in the kernel's operands. */
void nc_verify_races(const trnc_nc_program *p, size_t k, const nc_schedule *s, trnc_diags *diags,
                     size_t *errors);

/* Interconnect time of one collective START, seconds (rules in cost.c). */
double nc_collective_time(const trnc_nc_target *t, const trnc_nc_collective *cc);

/* fp32 bit helpers */
static inline uint32_t nc_f2u(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  return v.u;
}
static inline float nc_u2f(uint32_t u) {
  union { float f; uint32_t u; } v;
  v.u = u;
  return v.f;
}
static inline uint16_t nc_f32_to_bf16(float f) {
  uint32_t u = nc_f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float nc_bf16_to_f32(uint16_t h) { return nc_u2f((uint32_t)h << 16); }

/** How many times trnc_nc_program_verify has run on the calling thread
 *  (for tests: a fresh compile verifies its program exactly once). */
size_t trnc_nc_verify_count(void);

#endif

/*
 * fuzz_import.c — libFuzzer target for the fx.proto deserializer.
 *
 * Any bytes go through the pipeline's first stages (trnc_pipeline_run:
 * import, then legality scan, legalization and verifier, in the order trnc
 * runs them for users); whatever a stage accepts must also survive the
 * printer, the hash and the summary. ASan/UBSan (and LSan at exit) turn any
 * crash, overflow or leak into a finding.
 *
 * Built by `make test-fuzz` (clang-16, -DTRNC_FUZZ=ON); corpus: the .pb files in tests/golden/.
 */
#include <stddef.h>
#include <stdint.h>

#include "trnc/trnc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Small caps keep each run fast; the caps themselves are part of what is tested. */
  trnc_import_limits lim = {.max_bytes = 1u << 20, .max_nodes = 1u << 14, .max_allocs = 1u << 20};
  trnc_diags *d = trnc_diags_create();
  if (!d) return 0;
  trnc_pipeline p = {.bytes = data, .len = size, .limits = &lim};
  if (trnc_pipeline_run(&p, TRNC_STAGE_IMPORT, d) == TRNC_OK) {
    trnc_graph_summary sum;
    trnc_graph_get_summary(p.graph, &sum);
    char *text = trnc_graph_print(p.graph);
    trnc_free(text);
    uint8_t h[16];
    trnc_graph_hash(p.graph, h);
    if (trnc_pipeline_run(&p, TRNC_STAGE_VERIFY, d) == TRNC_OK) {
      text = trnc_graph_print(p.graph);
      trnc_free(text);
      trnc_graph_hash(p.graph, h);
    }
  }
  char *msgs = trnc_diags_format(d);
  trnc_free(msgs);
  trnc_graph_destroy(p.graph);
  trnc_diags_destroy(d);
  return 0;
}

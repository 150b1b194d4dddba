/*
 * fuzz_import.c — libFuzzer target for the fx.proto deserializer.
 *
 * Any bytes go through trnc_graph_import(); whatever it accepts must also
 * survive every stage that reads an imported graph before lowering (legality
 * scan, legalization passes, verifier, printer, hash). ASan/UBSan (and LSan
 * at exit) turn any crash, overflow or leak into a finding.
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
  trnc_graph *g = NULL;
  if (trnc_graph_import(data, size, &lim, &g, d) == TRNC_OK) {
    trnc_graph_summary sum;
    trnc_graph_get_summary(g, &sum);
    (void)trnc_graph_check_lowerable(g, d);
    char *text = trnc_graph_print(g);
    trnc_free(text);
    uint8_t h[16];
    trnc_graph_hash(g, h);
    if (trnc_graph_legalize(g, d) == TRNC_OK) {
      (void)trnc_graph_verify(g, d);
      text = trnc_graph_print(g);
      trnc_free(text);
      trnc_graph_hash(g, h);
    }
  }
  char *msgs = trnc_diags_format(d);
  trnc_free(msgs);
  trnc_graph_destroy(g);
  trnc_diags_destroy(d);
  return 0;
}

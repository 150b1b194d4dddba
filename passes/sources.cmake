list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/pipeline.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/util.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/legalize_f64.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decompose.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_attention.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_ops.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_norm.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_sort.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_moe.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_index.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/decomp_scan.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/simplify.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/fold.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/cse.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/dce.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/overlap.c)

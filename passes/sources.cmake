list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/pipeline.c
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/legalize_f64.c)

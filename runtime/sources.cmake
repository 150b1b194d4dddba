# runtime/: NeuronCore functional simulator.
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/nc_sim.c)
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/exec.c
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/llvm.c)

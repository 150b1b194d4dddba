# runtime/: the NeuronCore interpreter, the host backend (LLVM JIT), the
# engine choice between them, and artifact runs.
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/nc_sim.c
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/engine.c
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/host_llvm.c
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/host_gemm.c)
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/exec.c
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/llvm.c)

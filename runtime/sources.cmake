# runtime/: NeuronCore functional simulator and cost model.
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/nc_sim.c
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/nc_cost.c)
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/exec.c)

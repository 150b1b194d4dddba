# codegen/neuroncore/: the NeuronCore contract (target tables, instruction set,
# program format, verifier and schedule, cost model, the compiled artifact:
# its memory, bindings and bytes).
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/target.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/isa.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/program.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/asm.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/serialize.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/verify.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/verify_cc.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/verify_race.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/cost.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/artifact.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/neuroncore/artifact_serialize.c)
list(APPEND TRNC_PROTOS codegen/neuroncore/program.proto codegen/neuroncore/artifact.proto)
# codegen/: the emitter (IR -> NeuronCore program).
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/lower.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/lw_core.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/kir.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/rules.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/special.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/special_fn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/polynomial.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/build.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/gather.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/accum.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/data.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/emit.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/matmul.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/conv.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/emit_conv.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/emit_collective.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/attention.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/kir/attention_bw.c
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/families.c)
# codegen/: the driver (the order of the pipeline stages, trnc_pipeline_run).
list(APPEND TRNC_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/codegen/driver.c)

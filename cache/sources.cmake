# cache/: key derivation, entry files, the on-disk store (the artifact's bytes
# come from its owner, codegen/neuroncore/artifact_serialize.c).
list(APPEND TRNC_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/cache/key.c
  ${CMAKE_CURRENT_SOURCE_DIR}/cache/entry.c
  ${CMAKE_CURRENT_SOURCE_DIR}/cache/store.c)

# The compiler build id (part of every cache key): a hash of every source
# file of the stages that decide what an artifact contains. Paths are
# relative, so the id depends on file contents only (same sources, same id,
# wherever the tree is).
file(GLOB_RECURSE _trnc_bid_files CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
  ${CMAKE_CURRENT_SOURCE_DIR}/ir/*.c ${CMAKE_CURRENT_SOURCE_DIR}/ir/*.h
  ${CMAKE_CURRENT_SOURCE_DIR}/ir/*.def
  ${CMAKE_CURRENT_SOURCE_DIR}/frontend/*.c ${CMAKE_CURRENT_SOURCE_DIR}/frontend/*.h
  ${CMAKE_CURRENT_SOURCE_DIR}/frontend/*.proto
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/*.c ${CMAKE_CURRENT_SOURCE_DIR}/passes/*.h
  ${CMAKE_CURRENT_SOURCE_DIR}/passes/*.def
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/*.c ${CMAKE_CURRENT_SOURCE_DIR}/codegen/*.h
  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/*.def ${CMAKE_CURRENT_SOURCE_DIR}/codegen/*.proto
  ${CMAKE_CURRENT_SOURCE_DIR}/cache/*.c ${CMAKE_CURRENT_SOURCE_DIR}/cache/*.h
  ${CMAKE_CURRENT_SOURCE_DIR}/include/trnc/*.h)
list(SORT _trnc_bid_files)
string(REPLACE ";" "\n" _trnc_bid_text "${_trnc_bid_files}")
file(MAKE_DIRECTORY ${TRNC_GEN}/cache)
file(WRITE ${TRNC_GEN}/cache/build_id_inputs.txt.tmp "${_trnc_bid_text}\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different
  ${TRNC_GEN}/cache/build_id_inputs.txt.tmp ${TRNC_GEN}/cache/build_id_inputs.txt)
list(TRANSFORM _trnc_bid_files PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
add_custom_command(OUTPUT ${TRNC_GEN}/cache/build_id.c
  COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}
          -DLIST=${TRNC_GEN}/cache/build_id_inputs.txt -DOUT=${TRNC_GEN}/cache/build_id.c
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cache/build_id.cmake
  DEPENDS ${_trnc_bid_files} ${TRNC_GEN}/cache/build_id_inputs.txt
          ${CMAKE_CURRENT_SOURCE_DIR}/cache/build_id.cmake
  COMMENT "trnc compiler build id")
list(APPEND TRNC_SOURCES ${TRNC_GEN}/cache/build_id.c)

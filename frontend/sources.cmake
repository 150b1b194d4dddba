# frontend/: fx.proto reader (the protobuf-c sources are added by CMakeLists.txt).
list(APPEND TRNC_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frontend/import.c)

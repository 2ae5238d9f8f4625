# stdlib_sources.cmake — builds lib/*.tile into libtilec as C strings
# (runtime/stdlib_internal.h), for the C entry points of include/tilec/stdlib.h.
# Included from the top-level CMakeLists.txt after tilec_objs is defined.
file(GLOB TILEC_STDLIB_TILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/*.tile)
set(TILEC_STDLIB_C ${CMAKE_BINARY_DIR}/generated/stdlib_sources.c)
string(REPLACE ";" "|" _tilec_stdlib_list "${TILEC_STDLIB_TILES}")
add_custom_command(
  OUTPUT ${TILEC_STDLIB_C}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${TILEC_STDLIB_C} "-DSOURCES=${_tilec_stdlib_list}"
          -P ${CMAKE_SOURCE_DIR}/cmake/embed_tile_sources.cmake
  DEPENDS ${TILEC_STDLIB_TILES} ${CMAKE_SOURCE_DIR}/cmake/embed_tile_sources.cmake
  COMMENT "Embedding lib/*.tile into libtilec"
  VERBATIM)
target_sources(tilec_objs PRIVATE ${TILEC_STDLIB_C})

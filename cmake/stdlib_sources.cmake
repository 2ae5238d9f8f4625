# stdlib_sources.cmake — builds lib/*.tile into libtilec as C strings
# (stdlib/stdlib_internal.h), for the C entry points of include/tilec/stdlib.h,
# and the AOT launchers' loader as text.
# Included from the top-level CMakeLists.txt after tilec_objs is defined.
file(GLOB TILEC_STDLIB_TILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lib/*.tile)
set(TILEC_STDLIB_C ${CMAKE_BINARY_DIR}/generated/stdlib_sources.c)
string(REPLACE ";" "|" _tilec_stdlib_list "${TILEC_STDLIB_TILES}")
add_custom_command(
  OUTPUT ${TILEC_STDLIB_C}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${TILEC_STDLIB_C} "-DSOURCES=${_tilec_stdlib_list}"
          -P ${CMAKE_SOURCE_DIR}/cmake/embed_tile_sources.cmake
  DEPENDS ${TILEC_STDLIB_TILES} ${CMAKE_SOURCE_DIR}/cmake/embed_tile_sources.cmake ${CMAKE_SOURCE_DIR}/cmake/embed_common.cmake
  COMMENT "Embedding lib/*.tile into libtilec"
  VERBATIM)
target_sources(tilec_objs PRIVATE ${TILEC_STDLIB_C})

# The AOT launchers' loader (driver/aot/loader.c), as text for driver/aot.c.
set(TILEC_AOT_LOADER_C ${CMAKE_BINARY_DIR}/generated/aot_loader_text.c)
add_custom_command(
  OUTPUT ${TILEC_AOT_LOADER_C}
  COMMAND ${CMAKE_COMMAND} -DINPUT=${CMAKE_SOURCE_DIR}/driver/aot/loader.c -DOUTPUT=${TILEC_AOT_LOADER_C}
          -DSYMBOL=cg_aot_loader_text -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/driver/aot/loader.c ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake ${CMAKE_SOURCE_DIR}/cmake/embed_common.cmake
  COMMENT "Embedding driver/aot/loader.c into libtilec"
  VERBATIM)
target_sources(tilec_objs PRIVATE ${TILEC_AOT_LOADER_C})

# The standard library's tuning table (lib/tuning.tsv: tc_autotune's
# choices for the library's kernels, per GPU), as text for stdlib/tuning.c.
set(TILEC_TUNING_C ${CMAKE_BINARY_DIR}/generated/stdlib_tuning_text.c)
add_custom_command(
  OUTPUT ${TILEC_TUNING_C}
  COMMAND ${CMAKE_COMMAND} -DINPUT=${CMAKE_SOURCE_DIR}/lib/tuning.tsv -DOUTPUT=${TILEC_TUNING_C}
          -DSYMBOL=rt_stdlib_tuning_text -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/lib/tuning.tsv ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake ${CMAKE_SOURCE_DIR}/cmake/embed_common.cmake
  COMMENT "Embedding lib/tuning.tsv into libtilec"
  VERBATIM)
target_sources(tilec_objs PRIVATE ${TILEC_TUNING_C})

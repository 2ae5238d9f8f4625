# embed_common.cmake — what the embedding scripts (embed_tile_sources.cmake,
# embed_text.cmake) share.
#
# tilec_hex_bytes: a file's bytes as C initializers, 24 a line
# ("0x2f, 0x2f, ..."), each line after the first indented by four spaces,
# with a trailing comma; and its size.
function(tilec_hex_bytes file out_hex out_size)
  string(REPEAT "[0-9a-f][0-9a-f]" 24 _line_of_bytes)
  file(READ "${file}" _hex HEX)
  file(SIZE "${file}" _size)
  string(REGEX REPLACE "(${_line_of_bytes})" "\\1\n" _hex "${_hex}")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _hex "${_hex}")
  string(REPLACE "\n" "\n    " _hex "${_hex}")
  set(${out_hex} "${_hex}" PARENT_SCOPE)
  set(${out_size} "${_size}" PARENT_SCOPE)
endfunction()

# tilec_write_if_changed: writes the text unless the file already holds it,
# so that an unchanged input does not relink libtilec.
function(tilec_write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" _old)
    if(_old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()

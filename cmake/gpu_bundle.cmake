# gpu_bundle.cmake — bench/launch_overhead, and what a GPU run needs,
# installed into one folder that travels to the GPU machine:
#
#   cmake --build BUILD --target gpu-bundle
#
# which installs tilec itself (the default component) and then the
# component gpu-bundle, which a plain `cmake --install` leaves out:
#
#   gpu-bundle/lib/libtilec.so*          LLVM inside (TILEC_LLVM_STATIC=ON): needs only libc, libstdc++, libz, libzstd
#   gpu-bundle/bin/tilec, tilec-opt
#   gpu-bundle/tests/gpu/run.sh          the one script to run there (tests/gpu/README.md)
#   gpu-bundle/tests/gpu/test_*          the GPU tests
#   gpu-bundle/bench/*.py, launch_overhead, tune, RESULTS.md   the benchmarks, their Triton baselines
#                                        (baselines.py) and the library's tuner (docs/autotune.md)
#   gpu-bundle/examples/*                the examples, which run.sh runs too, and libllama_layer.so
#                                        (examples/llama_layer.c as a library, for bench/llama_layer.py)
#   gpu-bundle/include, share/tilec      headers, the library's .tile files, the docs
#
# Every program finds libtilec through a relative RPATH ($ORIGIN/...), so the
# folder works wherever it lands. The `gpu-bundle` target rebuilds it from
# scratch with stripped binaries and checks it (cmake/check_bundle.cmake):
# size under 40 MB, no shared library outside the allowed set, no absolute
# RPATH.

add_executable(bench_launch_overhead ${CMAKE_SOURCE_DIR}/bench/launch_overhead.c)
target_link_libraries(bench_launch_overhead PRIVATE tilec ${CMAKE_DL_LIBS})
set_target_properties(bench_launch_overhead PROPERTIES OUTPUT_NAME launch_overhead
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench INSTALL_RPATH "$ORIGIN/../lib")
# on a GPU, tc_launch must cost at most 1.2x a bare cuLaunchKernel
add_test(NAME bench.launch_overhead COMMAND bench_launch_overhead 10000 --max-ratio 1.2)
set_tests_properties(bench.launch_overhead PROPERTIES SKIP_RETURN_CODE 77
                     ENVIRONMENT "TILEC_CACHE_DIR=${CMAKE_BINARY_DIR}/bench/tilec-cache")

# bench/tune: tunes the library's matmul and attention, and measures the cost model
add_executable(bench_tune ${CMAKE_SOURCE_DIR}/bench/tune.c)
target_link_libraries(bench_tune PRIVATE tilec m)
target_include_directories(bench_tune PRIVATE ${CMAKE_SOURCE_DIR}/examples) # f16.h
set_target_properties(bench_tune PROPERTIES OUTPUT_NAME tune RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench
                      INSTALL_RPATH "$ORIGIN/../lib")

set(_bundle_targets tilec tilec-bin tilec-opt bench_launch_overhead bench_tune)
foreach(t test_softmax test_rmsnorm test_layernorm test_swiglu test_rope test_cross_entropy test_adamw test_features test_fp8 test_scan test_matmul test_attention test_attention_bwd
          test_attention_kvcache test_lineinfo test_random_debug)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION tests/gpu COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
    list(APPEND _bundle_targets ${t})
  endif()
endforeach()
install(PROGRAMS ${CMAKE_SOURCE_DIR}/tests/gpu/run.sh DESTINATION tests/gpu COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/tests/gpu/README.md DESTINATION tests/gpu COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
install(TARGETS bench_launch_overhead bench_tune RUNTIME DESTINATION bench COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/bench/compile_time.sh ${CMAKE_SOURCE_DIR}/bench/ncu_profile.sh
                 ${CMAKE_SOURCE_DIR}/bench/rowsplit.sh DESTINATION bench
        COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
file(GLOB _bench_scripts CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/*.py)
install(FILES ${_bench_scripts} ${CMAKE_SOURCE_DIR}/bench/RESULTS.md ${CMAKE_SOURCE_DIR}/bench/tilec_paths.sh
        DESTINATION bench COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
foreach(t jit_softmax stdlib_rmsnorm stdlib_attention llama_layer aot_softmax)
  if(TARGET ${t})
    set_target_properties(${t} PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
    install(TARGETS ${t} RUNTIME DESTINATION examples COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
    list(APPEND _bundle_targets ${t})
  endif()
endforeach()
# examples/libllama_layer.so: the layer of examples/llama_layer.c as a library, for bench/llama_layer.py
if(TARGET llama_layer_lib)
  set_target_properties(llama_layer_lib PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
  install(TARGETS llama_layer_lib LIBRARY DESTINATION examples COMPONENT gpu-bundle EXCLUDE_FROM_ALL)
  list(APPEND _bundle_targets llama_layer_lib)
endif()

set(TILEC_BUNDLE_DIR ${CMAKE_SOURCE_DIR}/gpu-bundle CACHE PATH "Where the gpu-bundle target installs")
add_custom_target(gpu-bundle
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${TILEC_BUNDLE_DIR}
  COMMAND ${CMAKE_COMMAND} --install ${CMAKE_BINARY_DIR} --prefix ${TILEC_BUNDLE_DIR} --strip
  COMMAND ${CMAKE_COMMAND} --install ${CMAKE_BINARY_DIR} --prefix ${TILEC_BUNDLE_DIR} --strip --component gpu-bundle
  COMMAND ${CMAKE_COMMAND} -DBUNDLE=${TILEC_BUNDLE_DIR} -P ${CMAKE_SOURCE_DIR}/cmake/check_bundle.cmake
  COMMENT "Installing the GPU bundle into ${TILEC_BUNDLE_DIR}"
  USES_TERMINAL VERBATIM)
add_dependencies(gpu-bundle ${_bundle_targets})

# The same programs under the fake libcuda of tests/gpu/fake_libcuda.c, so
# that CTest runs them end to end on machines without a GPU.
if(TARGET fake_libcuda)
  set(_fake_env "LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/tests/gpu/fake-driver"
                "TILEC_CACHE_DIR=${CMAKE_BINARY_DIR}/tests/gpu/fake-cache")
  add_test(NAME bench.fake.launch_overhead COMMAND bench_launch_overhead 1000)
  set_tests_properties(bench.fake.launch_overhead PROPERTIES ENVIRONMENT "${_fake_env}" LABELS fake-driver)
  if(TARGET stdlib_rmsnorm)
    add_test(NAME example.fake.stdlib_rmsnorm COMMAND stdlib_rmsnorm 300 1000)
    set_tests_properties(example.fake.stdlib_rmsnorm PROPERTIES ENVIRONMENT "${_fake_env}" LABELS fake-driver)
  endif()
endif()

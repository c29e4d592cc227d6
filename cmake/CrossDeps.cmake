# Dependencies for cross builds (cmake/toolchains/*.cmake set FGEMMA_CROSS_DEPS): the host's Debian
# packages hold x86-64 libraries, so
#   - nlohmann-json and CLI11 are header-only: their host headers are copied into the build tree
#     (only them, so the cross compiler never sees the rest of the host's /usr/include);
#   - Highway is compiled for its static target only (HWY_COMPILE_ONLY_STATIC: NEON on armhf and
#     aarch64, the scalar fallback without NEON, SSE2-level on i386), with stand-ins for the few
#     libhwy functions the engine calls (cmake/hwy_static_stubs.cpp), so no libhwy is needed;
#   - GoogleTest is built from the Debian sources in /usr/src/googletest.
set(_host_inc "${CMAKE_BINARY_DIR}/host-headers")
foreach(dir hwy nlohmann CLI)
  if(NOT EXISTS "/usr/include/${dir}")
    message(FATAL_ERROR "/usr/include/${dir} missing: run scripts/install-deps.sh")
  endif()
  file(COPY "/usr/include/${dir}" DESTINATION "${_host_inc}")
endforeach()

add_library(fgemma_cross_json INTERFACE)
target_include_directories(fgemma_cross_json SYSTEM INTERFACE "${_host_inc}")
add_library(nlohmann_json::nlohmann_json ALIAS fgemma_cross_json)
add_library(CLI11::CLI11 ALIAS fgemma_cross_json)

add_library(fgemma_cross_hwy STATIC "${PROJECT_SOURCE_DIR}/cmake/hwy_static_stubs.cpp")
target_include_directories(fgemma_cross_hwy SYSTEM PUBLIC "${_host_inc}")
target_compile_definitions(fgemma_cross_hwy PUBLIC HWY_COMPILE_ONLY_STATIC=1)
add_library(hwy::hwy ALIAS fgemma_cross_hwy)

if(NOT FGEMMA_BUILD_TESTS)  # an app's build (e.g. the Android NDK) needs no GoogleTest
  return()
endif()
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(BUILD_GMOCK ON CACHE BOOL "" FORCE)
add_subdirectory(/usr/src/googletest "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL)
# (googletest's CMakeLists defines the GTest::gtest, GTest::gtest_main, GTest::gmock aliases.)

# The public surface: libfgemma.so (the C API of include/fgemma/fgemma.h; everything else hidden by
# a version script), its install rules and package files, the HTTP server library behind
# `fgemma serve`, and the tests that need these targets.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
# Cross builds (FGEMMA_CROSS_DEPS) test the engine, the C API and the CLI; the HTTP server needs the
# target's cpp-httplib and OpenSSL, which the host's Debian packages do not provide.
if(NOT FGEMMA_CROSS_DEPS)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()

# The shim sources are compiled again here with default visibility on FGEMMA_API only; the engine
# comes from fgemma_core (PIC) and is not exported.
file(GLOB fgemma_capi_sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/capi/*.cpp")
add_library(fgemma_shared SHARED ${fgemma_capi_sources})
set_target_properties(fgemma_shared PROPERTIES
  OUTPUT_NAME fgemma
  C_VISIBILITY_PRESET hidden
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/fgemma.map")
# An APK packs lib*.so files only and Android's loader finds a library by its file name: no versioned
# SONAME there (FGEMMA_UNVERSIONED_SONAME shows the same on any toolchain).
option(FGEMMA_UNVERSIONED_SONAME "libfgemma.so without a versioned SONAME (Android)" ${ANDROID})
# The SONAME's number is the C ABI's major (raised when a change breaks binaries linked before); the
# file carries it and the project's minor and patch: libfgemma.so.1 -> libfgemma.so.1.1.0, never a
# file whose major disagrees with its SONAME (bindings/install/check_soname.sh checks it).
set(FGEMMA_SOVERSION 1)
if(NOT FGEMMA_UNVERSIONED_SONAME)
  set_target_properties(fgemma_shared PROPERTIES
    VERSION ${FGEMMA_SOVERSION}.${PROJECT_VERSION_MINOR}.${PROJECT_VERSION_PATCH} SOVERSION ${FGEMMA_SOVERSION})
endif()
target_compile_definitions(fgemma_shared PRIVATE FGEMMA_BUILDING_LIBRARY)
target_include_directories(fgemma_shared
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  PRIVATE "${PROJECT_BINARY_DIR}/layers/capi")  # the capi layer's view (cmake/FgemmaLayers.cmake)
target_link_libraries(fgemma_shared PRIVATE fgemma_capi)  # not fgemma_core: that one shows all of src/
target_link_options(fgemma_shared PRIVATE "-Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/fgemma.map")
add_library(fgemma::fgemma ALIAS fgemma_shared)

install(TARGETS fgemma_shared EXPORT fgemmaTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES "${PROJECT_SOURCE_DIR}/include/fgemma/fgemma.h" "${PROJECT_SOURCE_DIR}/include/fgemma/fgemma.hpp"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fgemma)
if(TARGET fgemma)  # the CLI (FGEMMA_BUILD_TOOLS; off in the fuzz preset)
  install(TARGETS fgemma RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT fgemmaTargets NAMESPACE fgemma:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fgemma)
# The exported target is fgemma::fgemma_shared; give it the documented name too.
set_target_properties(fgemma_shared PROPERTIES EXPORT_NAME fgemma)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/fgemmaConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/fgemmaConfig.cmake" INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fgemma)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/fgemmaConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/fgemmaConfig.cmake" "${PROJECT_BINARY_DIR}/fgemmaConfigVersion.cmake"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fgemma)
# The way up from <libdir>/pkgconfig to the prefix: it depends only on the relative libdir, not on
# the prefix chosen at install time.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "fgemma.pc: CMAKE_INSTALL_LIBDIR must be relative to the prefix, got ${CMAKE_INSTALL_LIBDIR}")
endif()
file(RELATIVE_PATH FGEMMA_PC_PREFIX_FROM_PCDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file("${CMAKE_CURRENT_LIST_DIR}/fgemma.pc.in" "${PROJECT_BINARY_DIR}/fgemma.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/fgemma.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# HTTP server (OpenAI-compatible), linked into the CLI (`fgemma serve`) and the server tests: the
# layer above the runtime (cmake/FgemmaLayers.cmake).
if(EXISTS "${PROJECT_SOURCE_DIR}/src/server" AND NOT FGEMMA_CROSS_DEPS)
  fgemma_layer(server DEPS runtime chat model tokenizer util LINK PkgConfig::HTTPLIB
               PCH <httplib.h> <nlohmann/json.hpp> ${FGEMMA_PCH_STD})
  target_include_directories(fgemma_server INTERFACE "${PROJECT_SOURCE_DIR}/src")
  if(TARGET fgemma)
    target_link_libraries(fgemma PRIVATE fgemma_server)
  endif()
  if(TARGET fgemma_server_tests)
    target_link_libraries(fgemma_server_tests PRIVATE fgemma_server)
  endif()
  if(TARGET fgemma_load_tests)
    target_link_libraries(fgemma_load_tests PRIVATE fgemma_server)
  endif()
  if(TARGET fgemma_real_tests)  # the cartridge served to an OpenAI client
    target_link_libraries(fgemma_real_tests PRIVATE fgemma_server)
  endif()
endif()

if(FGEMMA_BUILD_TESTS)
  # The C11 flow test: compiled as C against the public header and the shared library only.
  add_executable(fgemma_capi_flow "${PROJECT_SOURCE_DIR}/tests/capi/capi_flow.c")
  set_target_properties(fgemma_capi_flow PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(fgemma_capi_flow PRIVATE -Wall -Werror -pedantic)
  target_link_libraries(fgemma_capi_flow PRIVATE fgemma_shared)
  if(FGEMMA_SANITIZE AND CMAKE_C_COMPILER_ID MATCHES "Clang")
    # The library's UBSan checks of C++ (vptr, function types) live in a runtime clang's C driver
    # leaves out: under clang's sanitizers the C program is linked by the C++ driver.
    set_target_properties(fgemma_capi_flow PROPERTIES LINKER_LANGUAGE CXX)
  endif()
  add_test(NAME capi_flow COMMAND fgemma_capi_flow "${FGEMMA_SHARED_DIR}/fixtures" "${PROJECT_BINARY_DIR}")
  set_tests_properties(capi_flow PROPERTIES LABELS capi TIMEOUT 600)

  if(NOT TARGET GTest::gtest_main)  # imported in tests/ (directory scope); cross builds make it globally
    find_package(GTest REQUIRED)
  endif()
  include(GoogleTest)
  # The C++ API (fgemma.hpp) over the shared library's exported C API. Not a tests/<dir> glob
  # target: those link fgemma_core, whose copy of the C API would be used instead of libfgemma.so's.
  add_executable(fgemma_capi_cpp_tests "${PROJECT_SOURCE_DIR}/tests/capi/shared/cpp_api_test.cpp"
                                       "${PROJECT_SOURCE_DIR}/tests/test_support.cpp")
  set_target_properties(fgemma_capi_cpp_tests PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
  target_include_directories(fgemma_capi_cpp_tests PRIVATE "${PROJECT_SOURCE_DIR}/tests" "${PROJECT_SOURCE_DIR}/src")
  target_compile_options(fgemma_capi_cpp_tests PRIVATE -Wall -Wextra -Wpedantic -Werror ${FGEMMA_FRONT_END_OPTIONS} ${FGEMMA_TEST_OPTIONS})
  target_compile_definitions(fgemma_capi_cpp_tests PRIVATE
    FGEMMA_SHARED_DIR="${FGEMMA_SHARED_DIR}"
    FGEMMA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FGEMMA_CLI_PATH="$<TARGET_FILE:fgemma>"
    FGEMMA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  target_link_libraries(fgemma_capi_cpp_tests PRIVATE fgemma_shared GTest::gtest_main nlohmann_json::nlohmann_json
                                                      ${CMAKE_DL_LIBS})
  if(CMAKE_CROSSCOMPILING)
    add_test(NAME fgemma_capi_cpp_tests COMMAND fgemma_capi_cpp_tests)
    set_tests_properties(fgemma_capi_cpp_tests PROPERTIES LABELS capi)
  else()
    gtest_discover_tests(fgemma_capi_cpp_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS capi)
  endif()
endif()

# One static library per folder of src/ (a layer), compiled against only what it may include.
#
# fgemma_layer(NAME [DEPS layer...] [LINK target...] [PCH header...]) makes fgemma_NAME from src/NAME/*.cpp. Its
# sources see a view of src/ under the build tree that holds links to NAME and to the closure of its
# DEPS, and nothing else: a lower layer that includes a header of a higher (or unrelated) one fails
# to compile. The layers' graph is written once, in src/CMakeLists.txt; tests/layering checks that
# every include outside a layer's closure is refused.
include_guard(GLOBAL)

function(fgemma_layer name)
  cmake_parse_arguments(L "" "" "DEPS;LINK;PCH" ${ARGN})
  set(closure ${name})
  foreach(dep IN LISTS L_DEPS)
    get_property(dep_closure GLOBAL PROPERTY FGEMMA_LAYER_CLOSURE_${dep})
    if(NOT dep_closure)
      message(FATAL_ERROR "layer ${name} depends on ${dep}, which is not defined before it")
    endif()
    list(APPEND closure ${dep_closure})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY FGEMMA_LAYER_CLOSURE_${name} ${closure})
  set_property(GLOBAL APPEND PROPERTY FGEMMA_LAYERS ${name})

  set(view "${PROJECT_BINARY_DIR}/layers/${name}")
  file(REMOVE_RECURSE "${view}")
  file(MAKE_DIRECTORY "${view}")
  foreach(layer IN LISTS closure)
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/src/${layer}" "${view}/${layer}" SYMBOLIC)
  endforeach()

  file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/src/${name}/*.cpp")
  add_library(fgemma_${name} STATIC ${sources})
  # PRIVATE: a layer's view does not leak to the layers above it (each has its own).
  target_include_directories(fgemma_${name} PRIVATE "${view}")
  foreach(dep IN LISTS L_DEPS)
    target_link_libraries(fgemma_${name} PUBLIC fgemma_${dep})
  endforeach()
  target_link_libraries(fgemma_${name} PUBLIC Threads::Threads nlohmann_json::nlohmann_json ${L_LINK})
  target_compile_options(fgemma_${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(FGEMMA_PCH AND L_PCH)  # third-party headers of its own (the server's cpp-httplib)
    target_precompile_headers(fgemma_${name} PRIVATE ${L_PCH})
  elseif(FGEMMA_PCH)
    get_property(pch_owner GLOBAL PROPERTY FGEMMA_LAYER_PCH_OWNER)
    if(pch_owner)
      target_precompile_headers(fgemma_${name} REUSE_FROM ${pch_owner})
    else()
      target_precompile_headers(fgemma_${name} PRIVATE <nlohmann/json.hpp> ${FGEMMA_PCH_STD})
      set_property(GLOBAL PROPERTY FGEMMA_LAYER_PCH_OWNER fgemma_${name})
    endif()
  endif()
endfunction()

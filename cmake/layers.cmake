# The library as layers (docs/design.md §7): one object library per folder of src/, each
# compiled so that it can include only itself and the layers below it. Includes are written
# "layer/file.hpp" against src/, so src/ itself cannot be on a layer's include path; instead
# every layer gets build/layers/<layer>/, a directory of symbolic links to just the folders
# it may include, and a wrong-direction include is "file not found" from the compiler.
#
#   grove_layer(NAME [BELOW layer...])  the layers NAME builds on, directly; the ones they
#                                       build on come along (a layer may include any layer
#                                       beneath it).
# Layers are declared bottom-up; GROVE_LAYERS lists them in that order.

set(GROVE_LAYERS "")
set(GROVE_LAYER_ROOT ${CMAKE_BINARY_DIR}/layers)

function(grove_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 LAYER "" "" "BELOW")
  set(visible ${name})
  foreach(below ${LAYER_BELOW})
    if(NOT below IN_LIST GROVE_LAYERS)
      message(FATAL_ERROR "layer ${name} builds on ${below}, which is not declared below it")
    endif()
    list(APPEND visible ${GROVE_LAYER_VISIBLE_${below}})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  set(GROVE_LAYER_VISIBLE_${name} ${visible} PARENT_SCOPE)

  # The include view: rebuilt on every configure so that a dependency removed here is gone.
  set(view ${GROVE_LAYER_ROOT}/${name})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view})
  foreach(layer ${visible})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${layer} ${view}/${layer} SYMBOLIC)
  endforeach()

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp)
  add_library(grove_${name} OBJECT ${sources})
  set_target_properties(grove_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(grove_${name} PRIVATE ${GROVE_WARNINGS})
  target_include_directories(grove_${name}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${view} ${XXHASH_INCLUDE_DIR})
  # fmt in header-only mode: its code is compiled into grove's objects, so libgrove.a and
  # libgrove.so are self-contained and the installed package does not depend on fmt.
  target_link_libraries(grove_${name} PRIVATE fmt::fmt-header-only Threads::Threads OpenSSL::Crypto)
  foreach(below ${LAYER_BELOW})
    target_link_libraries(grove_${name} PUBLIC grove_${below})
  endforeach()

  set(GROVE_LAYERS ${GROVE_LAYERS} ${name} PARENT_SCOPE)
endfunction()

# A file compiled as if it were part of `layer` (its include view and flags), for the tests
# that prove the views: target `target`, not built by default.
function(grove_layer_probe target layer source)
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${source})
  target_compile_options(${target} PRIVATE ${GROVE_WARNINGS})
  target_include_directories(${target} PRIVATE ${GROVE_LAYER_ROOT}/${layer} ${CMAKE_SOURCE_DIR}/include
                                               ${XXHASH_INCLUDE_DIR})
  target_link_libraries(${target} PRIVATE fmt::fmt-header-only)
endfunction()

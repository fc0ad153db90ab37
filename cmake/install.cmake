# Install rules and packaging: what `cmake --install` (make install) puts where.
#
# Why here and not in CMakeLists.txt: the top-level file describes what grove is built from;
# this one describes what a user of the library gets. Installed:
#   include/grove/*.h, *.hpp       the public headers (version.hpp included: nothing is generated)
#   lib/libgrove.so*, libgrove.a   the shared (grove::grove) and static (grove::grove_static)
#                                  library. fmt is compiled in (header-only mode), so consumers
#                                  need only the C++ runtime, threads and OpenSSL's libcrypto
#   bin/grove                      the command-line tool
#   lib/cmake/grove/               the CMake package: find_package(grove) with a version file
#   lib/pkgconfig/grove.pc         for pkg-config users (C programs, Makefiles)
# The package is relocatable: neither the CMake files nor grove.pc embed the install prefix, so
# `cmake --install build --prefix DIR` works for any DIR chosen after configuring.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(GROVE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/grove
    CACHE STRING "Where the CMake package files of grove are installed (relative to the prefix)")

# The build tree uses the same names as an installed package, so code can move between them.
if(NOT TARGET grove::grove_static)
  add_library(grove::grove_static ALIAS grove_static)
endif()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/grove/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/grove
        COMPONENT development
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

install(TARGETS grove grove_static
        EXPORT groveTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT runtime
                NAMELINK_COMPONENT development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS grove_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

install(EXPORT groveTargets
        NAMESPACE grove::
        DESTINATION ${GROVE_INSTALL_CMAKEDIR}
        COMPONENT development)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/groveConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/groveConfig.cmake
                              INSTALL_DESTINATION ${GROVE_INSTALL_CMAKEDIR})
# Before 1.0 a minor release may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/groveConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/groveConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/groveConfigVersion.cmake
        DESTINATION ${GROVE_INSTALL_CMAKEDIR}
        COMPONENT development)

# grove.pc locates the prefix from its own directory (${pcfiledir}), so it stays correct
# when the prefix is chosen at install time.
file(RELATIVE_PATH GROVE_PC_PREFIX_FROM_PCFILEDIR
     /grove-prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /grove-prefix)
string(REGEX REPLACE "/$" "" GROVE_PC_PREFIX_FROM_PCFILEDIR "${GROVE_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/grove.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/grove.pc
               @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/grove.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)

# `cmake --build build --target package` (make package): a relocatable tarball of the above.
set(CPACK_PACKAGE_NAME grove)
set(CPACK_PACKAGE_VENDOR "grove")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR TGZ)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/install/")
set(CPACK_PACKAGE_FILE_NAME grove-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR})
include(CPack)

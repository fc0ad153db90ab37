// grove's version. This header is the one place it is written: CMakeLists.txt reads the
// project version from it, so the headers under include/ work without a build tree.
#pragma once

#define GROVE_VERSION_MAJOR 0
#define GROVE_VERSION_MINOR 1
#define GROVE_VERSION_PATCH 0
/// Single integer as returned by groveGetVersion: major * 10000 + minor * 100 + patch.
#define GROVE_VERSION_CODE \
  (GROVE_VERSION_MAJOR * 10000 + GROVE_VERSION_MINOR * 100 + GROVE_VERSION_PATCH)
#define GROVE_VERSION_STRING "0.1.0"

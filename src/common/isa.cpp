#include "common/isa.hpp"

#include <string>

#include "grove/error.hpp"

namespace grove::common {

const char* toString(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

void throwIsaNotRunning(Isa isa, const char* what) {
  throw Error(ErrorCode::kInvalidArgument,
              std::string(what) + ": isa " + toString(isa) +
                  " is not supported by this build or CPU; expected one for which "
                  "common::isaRuns() is true");
}

bool isaRuns(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return true;
#if GROVE_X86_VARIANTS
    case Isa::kAvx2:
      return __builtin_cpu_supports("x86-64-v3");
    case Isa::kAvx512:
      return __builtin_cpu_supports("x86-64-v4");
#else
    case Isa::kAvx2:
    case Isa::kAvx512:
      return false;
#endif
  }
  return false;
}

}  // namespace grove::common

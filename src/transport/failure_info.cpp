// FailureInfo crosses process boundaries (shared memory, the TCP abort frame): whatever a
// transport publishes or reads back goes through sanitizeFailure, so a cause is always
// short, printable text whatever the peer wrote.
#include <algorithm>

#include "transport/transport.hpp"

namespace grove::transport {

FailureInfo sanitizeFailure(FailureInfo info) {
  if (info.cause.size() > FailureInfo::kMaxCauseBytes) {
    info.cause.resize(FailureInfo::kMaxCauseBytes);
  }
  std::replace_if(
      info.cause.begin(), info.cause.end(),
      [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e;
      },
      '?');
  return info;
}

}  // namespace grove::transport

// libFuzzer target for the TCP store's request decoder (bootstrap/tcp_store_wire.hpp), run
// as the server runs it: requests back to back on one connection until the bytes end or one
// is malformed. Checks that every accepted length respects the limits, that an incomplete
// request never asks to reserve more than a maximal request, and that a decoded request
// re-encodes to exactly the bytes it came from.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store_wire.hpp"

namespace {

namespace wire = grove::bootstrap::wire;
using Outcome = wire::DecodedRequest::Outcome;

void require(bool condition) {
  if (!condition) std::abort();
}

void run(std::string_view in, size_t maxKey, size_t maxValue) {
  const size_t largest = wire::kRequestPrefixBytes + maxKey + 8 + maxValue;
  while (true) {
    wire::DecodedRequest request = wire::decodeRequest(in, maxKey, maxValue);
    switch (request.outcome) {
      case Outcome::kMalformed:
        require(!request.error.empty());
        return;
      case Outcome::kIncomplete:
        require(request.frameBytes == 0 || request.frameBytes > in.size());
        require(request.frameBytes <= largest);
        return;
      case Outcome::kComplete: {
        require(request.op >= wire::kSet && request.op <= wire::kLastOp);
        require(request.frameBytes <= in.size() && request.frameBytes <= largest);
        require(request.key.size() <= maxKey && request.value.size() <= maxValue);
        if (request.op == wire::kGet || request.op == wire::kCheck || request.op == wire::kErase) {
          require(request.value.empty());
        }
        if (request.op == wire::kAdd) require(request.value.size() == 8);
        std::string again;
        again += static_cast<char>(request.op);
        wire::putU32(again, static_cast<uint32_t>(request.key.size()));
        again += request.key;
        wire::putU64(again, request.value.size());
        again += request.value;
        require(again == in.substr(0, request.frameBytes));
        // Every proper prefix of a complete request is incomplete, never malformed.
        if (request.frameBytes < 64) {
          for (size_t n = 0; n < request.frameBytes; ++n) {
            require(wire::decodeRequest(in.substr(0, n), maxKey, maxValue).outcome ==
                    Outcome::kIncomplete);
          }
        }
        in.remove_prefix(request.frameBytes);
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The server's limits, then small ones so that the fuzzer reaches the limit checks.
  run(in, grove::bootstrap::kMaxKeyBytes, grove::bootstrap::kMaxValueBytes);
  run(in, 16, 64);
  return 0;
}

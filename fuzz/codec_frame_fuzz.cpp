// libFuzzer target for the codec's decoder (codec/codec.hpp). The decoder promises never to
// crash, read outside the frame or write outside the output on any bytes, and to fail with a
// "codec: " message; whatever it accepts must encode again (with the frame's block size) to
// a frame that decodes to the very same elements.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/codec.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

// Frames may declare any count; an output buffer is only allocated up to this many bytes.
constexpr uint64_t kMaxOutputBytes = 1 << 22;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static grove::codec::Workspace workspace;
  auto header = grove::codec::readHeader(data, size);
  if (!header) {
    require(header.message().rfind("codec: ", 0) == 0);
    return 0;
  }
  const size_t elementSize = grove::dataTypeSize(header->type);
  if (header->count > kMaxOutputBytes / elementSize) return 0;
  const auto count = static_cast<size_t>(header->count);
  std::vector<uint8_t> out(count * elementSize);
  const grove::Status status =
      grove::codec::decode(data, size, out.data(), count, header->type, workspace);
  if (!status.ok()) {
    require(status.message().rfind("codec: ", 0) == 0);
    return 0;
  }
  const size_t blockBytes = static_cast<size_t>(header->blockElements) * elementSize;
  std::vector<uint8_t> frame(grove::codec::maxEncodedBytes(count, header->type, blockBytes));
  auto coded = grove::codec::encode(out.data(), count, header->type, frame.data(), frame.size(),
                                    workspace, blockBytes);
  require(coded.ok());
  std::vector<uint8_t> again(out.size());
  require(grove::codec::decode(frame.data(), *coded, again.data(), count, header->type, workspace)
              .ok());
  require(again == out);
  return 0;
}

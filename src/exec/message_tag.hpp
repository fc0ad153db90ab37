// Naming, comparing and checksumming the tags that travel with every message (MessageTag,
// transport/fifo.hpp), so that a rank receiving a message of another call says what both
// sides called, and GROVE_CHECKSUM can prove that a payload arrived as it was sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.hpp"
#include "grove/error.hpp"
#include "plan/call_shape.hpp"
#include "transport/fifo.hpp"

namespace grove::exec {

using transport::MessageTag;

/// MessageTag::collective of the exchange GROVE_CHECK=1 makes before each collective.
inline constexpr uint8_t kSignatureCheck = 0xFF;

/// The tag of the messages of collective number `call` (1, 2, ...; 0 for send/recv) of
/// `shape`: the shape's fields as the wire carries them. The algorithm is added once chosen.
MessageTag tagOf(const plan::CallShape& shape, uint64_t call);

/// The 32-bit name hash carried in MessageTag::algorithm (FNV-1a; never 0 for a name).
uint32_t algorithmTag(std::string_view name);

/// Makes `names` known to describeTag, which otherwise prints an algorithm's hash: the
/// algorithms live in a layer above this one (algo/registry.hpp), so the layer that knows both
/// (core) hands their names down. Idempotent; safe to call from any thread.
void nameAlgorithms(const std::vector<std::string_view>& names);

/// "allreduce, collective #3 (count 1024 float32 sum, algorithm ring)" (#3: the third
/// collective call on the communicator; send/recv calls are not counted), from the tag alone (an
/// algorithm hash that names no algorithm given to nameAlgorithms is printed in hex).
std::string describeTag(const MessageTag& tag);

/// Why a message tagged `theirs` from rank `peer` cannot belong to this rank's call `mine`:
/// names the first field that differs and both calls.
std::string describeMismatch(const MessageTag& mine, const MessageTag& theirs, int peer);

/// The tag to send with a payload: `tag`, plus the payload's checksum when `checksum`.
inline MessageTag stamped(MessageTag tag, bool checksum, const void* data, size_t bytes);

/// Checks a message received from rank `peer` on `lane` against this rank's call `mine`: ok
/// when it belongs to the call (only compared when `compare`) and its checksum, if it carries
/// one, matches; else why, as kInvalidUsage (the calls differ) or kSystemError (the payload
/// was corrupted on the way).
Status checkReceived(const MessageTag& mine, const MessageTag& theirs, const void* data,
                     size_t bytes, int peer, int lane, bool compare = true);

/// Checksum of a payload (the low 32 bits of XXH3-64: hardware-speed, catches any single
/// corrupted word and all but 2^-32 of other corruptions).
uint32_t payloadChecksum(const void* data, size_t bytes);

inline MessageTag stamped(MessageTag tag, bool checksum, const void* data, size_t bytes) {
  if (checksum) {
    tag.flags |= MessageTag::kHasChecksum;
    tag.checksum = payloadChecksum(data, bytes);
  }
  return tag;
}

}  // namespace grove::exec

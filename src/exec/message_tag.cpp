#include "exec/message_tag.hpp"

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <mutex>
#include <unordered_map>

#include "grove/types.hpp"
#include "plan/plan.hpp"

namespace grove::exec {
namespace {

std::string collectiveName(uint8_t collective) {
  if (collective == kSignatureCheck) return "signature check (GROVE_CHECK=1)";
  if (collective < plan::kCollectiveCount) {
    return std::string(plan::toString(static_cast<plan::Collective>(collective)));
  }
  return fmt::format("unknown collective {}", collective);
}

std::string typeName(uint8_t type) {
  if (type < kDataTypeCount) return std::string(toString(static_cast<DataType>(type)));
  return fmt::format("type {}", type);
}

/// The names given to nameAlgorithms, by tag. Read only to describe a tag (an error or trace
/// path), so a lock costs nothing that matters.
struct AlgorithmNames {
  std::mutex mutex;
  std::unordered_map<uint32_t, std::string> byTag;
};

AlgorithmNames& algorithmNames() {
  static AlgorithmNames names;
  return names;
}

std::string algorithmName(uint32_t tag) {
  if (tag == 0) return "none";
  AlgorithmNames& names = algorithmNames();
  std::lock_guard<std::mutex> lock(names.mutex);
  if (auto found = names.byTag.find(tag); found != names.byTag.end()) return found->second;
  return fmt::format("{:#010x}", tag);
}

}  // namespace

MessageTag tagOf(const plan::CallShape& shape, uint64_t call) {
  MessageTag tag;
  tag.call = call;
  tag.count = shape.count;
  tag.root = shape.root;
  tag.collective = static_cast<uint8_t>(shape.collective);
  tag.type = static_cast<uint8_t>(shape.type);
  tag.op = shape.reduces() ? static_cast<uint8_t>(shape.op) : 0;
  return tag;
}

uint32_t algorithmTag(std::string_view name) {
  uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return hash == 0 ? 1 : hash;
}

void nameAlgorithms(const std::vector<std::string_view>& names) {
  AlgorithmNames& table = algorithmNames();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (std::string_view name : names) table.byTag.emplace(algorithmTag(name), name);
}

std::string describeTag(const MessageTag& tag) {
  const bool p2p = tag.collective == static_cast<uint8_t>(plan::Collective::kSendRecv);
  std::string out = p2p ? std::string("send/recv") : collectiveName(tag.collective);
  if (!p2p) out += fmt::format(", collective #{}", tag.call);
  out += fmt::format(" (count {} {}", tag.count, typeName(tag.type));
  if (plan::reduces(static_cast<plan::Collective>(tag.collective)) && tag.op < kReduceOpCount) {
    out += fmt::format(" {}", toString(static_cast<ReduceOp>(tag.op)));
  }
  if (tag.root >= 0) out += fmt::format(", root {}", tag.root);
  if (!p2p) out += fmt::format(", algorithm {}", algorithmName(tag.algorithm));
  return out + ")";
}

std::string describeMismatch(const MessageTag& mine, const MessageTag& theirs, int peer) {
  const char* what = mine.collective != theirs.collective ? "collective"
                     : mine.call != theirs.call           ? "call number"
                     : mine.count != theirs.count         ? "count"
                     : mine.type != theirs.type           ? "type"
                     : mine.op != theirs.op               ? "operator"
                     : mine.root != theirs.root           ? "root"
                                                          : "algorithm";
  std::string hint = mine.algorithm != theirs.algorithm && what == std::string_view("algorithm")
                         ? " (is GROVE_ALGO the same on every rank?)"
                         : "";
  return fmt::format(
      "calls differ between ranks ({} differs{}): rank {} sent a message of its {}, this rank "
      "is in {}",
      what, hint, peer, describeTag(theirs), describeTag(mine));
}

Status checkReceived(const MessageTag& mine, const MessageTag& theirs, const void* data,
                     size_t bytes, int peer, int lane, bool compare) {
  if (compare && !theirs.sameCall(mine)) {
    return Status::failure(ErrorCode::kInvalidUsage, describeMismatch(mine, theirs, peer));
  }
  if ((theirs.flags & MessageTag::kHasChecksum) != 0) {
    if (uint32_t sum = payloadChecksum(data, bytes); sum != theirs.checksum) {
      return Status::failure(
          ErrorCode::kSystemError,
          fmt::format("corrupted {}message on the link from rank {} (lane {}): {} bytes whose "
                      "checksum is {:#010x}, rank {} sent {:#010x} (GROVE_CHECKSUM)",
                      (theirs.flags & MessageTag::kCompressed) != 0 ? "compressed " : "", peer,
                      lane, bytes, sum, peer, theirs.checksum));
    }
  }
  return {};
}

uint32_t payloadChecksum(const void* data, size_t bytes) {
  return static_cast<uint32_t>(XXH3_64bits(data, bytes));
}

}  // namespace grove::exec

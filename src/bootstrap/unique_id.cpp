// Encoding and strict decoding of the unique id's contents (layout in unique_id.hpp).
#include "bootstrap/unique_id.hpp"

#include <fmt/format.h>

#include <cstring>

#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

constexpr char kMagic[4] = {'G', 'R', 'V', 'U'};
constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 14;
constexpr size_t kChecksumAt = 10;
constexpr size_t kPayloadBytes = kUniqueIdBytes - kHeaderBytes;

uint32_t checksum(const unsigned char* id) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    unsigned char byte = (i >= kChecksumAt && i < kChecksumAt + 4) ? 0 : id[i];
    hash = (hash ^ byte) * 16777619u;
  }
  return hash;
}

}  // namespace

void encodeUniqueId(const IdContents& contents, char out[kUniqueIdBytes]) {
  if (contents.host.empty() || contents.port == 0 ||
      contents.host.size() + contents.secret.size() > kPayloadBytes || contents.host.size() > 255 ||
      contents.secret.size() > 255) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("unique id: host '{}' (length {}), port {} and a secret of {} bytes "
                            "do not fit (expected a non-empty host, a port in 1..65535 and "
                            "host plus secret of at most {} bytes)",
                            contents.host, contents.host.size(), contents.port,
                            contents.secret.size(), kPayloadBytes));
  }
  auto* id = reinterpret_cast<unsigned char*>(out);
  std::memset(id, 0, kUniqueIdBytes);
  std::memcpy(id, kMagic, sizeof(kMagic));
  id[4] = kVersion;
  id[5] = static_cast<unsigned char>(contents.host.size());
  id[6] = static_cast<unsigned char>(contents.secret.size());
  id[8] = static_cast<unsigned char>(contents.port & 0xff);
  id[9] = static_cast<unsigned char>(contents.port >> 8);
  std::memcpy(id + kHeaderBytes, contents.host.data(), contents.host.size());
  std::memcpy(id + kHeaderBytes + contents.host.size(), contents.secret.data(),
              contents.secret.size());
  uint32_t sum = checksum(id);
  for (int i = 0; i < 4; ++i) id[kChecksumAt + i] = static_cast<unsigned char>(sum >> (8 * i));
}

std::optional<IdContents> decodeUniqueId(const char in[kUniqueIdBytes]) {
  const auto* id = reinterpret_cast<const unsigned char*>(in);
  if (std::memcmp(id, kMagic, sizeof(kMagic)) != 0 || id[4] != kVersion || id[7] != 0) {
    return std::nullopt;
  }
  const size_t hostBytes = id[5];
  const size_t secretBytes = id[6];
  const uint16_t port = static_cast<uint16_t>(id[8] | (id[9] << 8));
  if (hostBytes == 0 || port == 0 || hostBytes + secretBytes > kPayloadBytes) return std::nullopt;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= uint32_t{id[kChecksumAt + i]} << (8 * i);
  if (stored != checksum(id)) return std::nullopt;
  for (size_t i = kHeaderBytes + hostBytes + secretBytes; i < kUniqueIdBytes; ++i) {
    if (id[i] != 0) return std::nullopt;
  }
  const char* payload = in + kHeaderBytes;
  if (std::memchr(payload, '\0', hostBytes) != nullptr) return std::nullopt;
  return IdContents{std::string(payload, hostBytes), port,
                    std::string(payload + hostBytes, secretBytes)};
}

}  // namespace grove::bootstrap

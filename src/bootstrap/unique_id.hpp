// What a grove unique id (the 128 opaque bytes of groveGetUniqueId, NCCL's ncclUniqueId)
// carries for a multi-process job: where the rendezvous store listens and the job secret.
//
// Why a format with magic, version and checksum: ids travel through user code (MPI_Bcast,
// files, environment variables); a truncated, stale or corrupted id must be recognised as
// such ("not a grove id") instead of sending ranks to a wrong address.
//
// Layout (little-endian): "GRVU" | version u8 (1) | host length u8 | secret length u8 |
// 0 u8 | port u16 | FNV-1a-32 checksum of the 128 bytes with this field zeroed | host |
// secret | zero padding. Host and secret together fit in 114 bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace grove::bootstrap {

inline constexpr size_t kUniqueIdBytes = 128;

struct IdContents {
  std::string host;    ///< Host name or address (IPv6 without brackets) of the store.
  uint16_t port = 0;   ///< Port of the store, 1..65535.
  std::string secret;  ///< Job secret (randomSecret(): 16 random bytes as 32 hex characters).
};

/// Writes `contents` into `out`. Throws grove::Error(kInvalidArgument) when the host is
/// empty, the port is 0 or host and secret do not fit.
void encodeUniqueId(const IdContents& contents, char out[kUniqueIdBytes]);

/// The contents of `in`, or nullopt when it is not a valid id of this version (wrong magic,
/// version, lengths, checksum or non-zero padding).
std::optional<IdContents> decodeUniqueId(const char in[kUniqueIdBytes]);

}  // namespace grove::bootstrap

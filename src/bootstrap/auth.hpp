// Mutual challenge-response authentication of a freshly connected socket with the job
// secret (HMAC-SHA256), used by the store and by the TCP transport. A peer that does not
// know the secret learns nothing about it and is refused on both sides with a clear error.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace grove::bootstrap {

/// HMAC-SHA256 of `message` under `key` (32 raw bytes).
std::string hmacSha256(std::string_view key, std::string_view message);

/// Runs the handshake on the blocking (or non-blocking: the function polls) socket `fd`.
/// `role` names this side in messages (e.g. "store server", "tcp transport rank 3").
/// Both sides send a random nonce, each answers the other's nonce with
/// HMAC(secret, nonce || own role tag), and each verifies the answer in constant time.
/// An empty secret on both sides still runs the handshake (proving both are grove).
/// Throws grove::Error(kInvalidUsage, "... refused: the peer does not know the job secret
/// (GROVE_SECRET)") on mismatch, kTimeout past `deadline`, kSystemError on socket errors.
/// The secret never appears in any message.
void authenticate(int fd, std::string_view secret, bool isServer, std::string_view role,
                  std::chrono::steady_clock::time_point deadline);

}  // namespace grove::bootstrap

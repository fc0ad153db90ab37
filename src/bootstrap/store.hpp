// The rendezvous store: a small key-value service every rank of a job can reach, used to
// exchange addresses and segment names while communicators are created.
//
// Implementations: TcpStore (a server run by rank 0 or by `grove store --port P`; every
// connection authenticated with the job secret) and FileStore (a directory on a shared file
// system). Keys are short strings; values are byte strings of at most kMaxValueBytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/store.hpp"

namespace grove::bootstrap {

/// Largest value the stores accept (anything larger is rejected before allocation).
inline constexpr size_t kMaxValueBytes = 16 * 1024 * 1024;
/// Longest key the stores accept.
inline constexpr size_t kMaxKeyBytes = 1024;

/// The interface is public (grove/store.hpp): frameworks bring their own stores.
using Store = grove::Store;

}  // namespace grove::bootstrap

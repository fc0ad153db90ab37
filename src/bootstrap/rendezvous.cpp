#include "bootstrap/rendezvous.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "bootstrap/tcp_store.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {

using Clock = std::chrono::steady_clock;

Rendezvous::Rendezvous(Store& store, std::string prefix, int rank, int size,
                       std::chrono::milliseconds timeout, std::chrono::milliseconds silence)
    : store_(store),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      liveness_(store, prefix_, rank, size, silence) {}

std::string Rendezvous::await(const std::string& key, const std::string& what) {
  return poll(key, what, false);
}

std::string Rendezvous::awaitStore(const std::string& key, const std::string& what) {
  return poll(key, what, true);
}

std::string Rendezvous::poll(const std::string& key, const std::string& what, bool redial) {
  const std::string full = prefix_ + key;
  const std::string failure = prefix_ + "failed";
  const std::string refusedKey(kRefusedConnectionsKey);
  const auto deadline = net::Clock::now() + timeout_;
  auto pause = std::chrono::microseconds(200);
  std::string lastError;
  while (true) {
    // Poll with `check` (one cheap round trip) rather than a blocking get, so a failure
    // published by another rank is noticed while waiting.
    try {
      if (store_.check(full)) return store_.get(full, timeout_);
      if (store_.check(failure)) {
        throw Error(ErrorCode::kRemoteError, fmt::format("grove init (rank {} of {}): {}", rank_,
                                                         size_, store_.get(failure, timeout_)));
      }
      const std::string silent = liveness_.tick(InitLiveness::Clock::now());
      if (!silent.empty()) {
        publish(silent);
        throw Error(ErrorCode::kRemoteError,
                    fmt::format("grove init (rank {} of {}): {}", rank_, size_, silent));
      }
    } catch (const Error& error) {
      // A refused secret, a bad address or a published failure is final; a store that is
      // not up (yet, or any more) is only when the caller does not redial.
      if (!redial || error.code() == ErrorCode::kInvalidUsage ||
          error.code() == ErrorCode::kInvalidArgument || error.code() == ErrorCode::kRemoteError) {
        throw;
      }
      lastError = error.what();
    }
    if (net::Clock::now() >= deadline) {
      std::string why =
          lastError.empty() ? std::string() : fmt::format(" (last store error: {})", lastError);
      if (lastError.empty() && store_.check(refusedKey)) {
        why = fmt::format("; the store refused: {}", store_.get(refusedKey, timeout_));
      }
      throw Error(
          ErrorCode::kTimeout,
          fmt::format("grove init (rank {} of {}): {} did not arrive within {} s{}", rank_, size_,
                      what, std::chrono::duration_cast<std::chrono::seconds>(timeout_).count(),
                      why));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20'000));
  }
}

void Rendezvous::barrier(const std::string& name, bool last) {
  store_.set(fmt::format("{}{}/{}", prefix_, name, rank_), "1");
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    try {
      await(fmt::format("{}/{}", name, q), fmt::format("rank {}", q));
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kTimeout) throw;
      throw Error(ErrorCode::kTimeout,
                  fmt::format("{} (ranks missing at '{}': {})", error.what(), name, missing(name)));
    }
  }
  // Leave nothing behind: a job that splits thousands of times must not grow its store. A
  // rank counts itself out once it has read every arrival; the last one out knows nobody
  // reads the keys any more and erases them.
  // The barrier has passed: a store gone by now (its host, done with init, exited) costs
  // only the cleanup, never the communicator.
  const std::string departed = fmt::format("{}{}/departed", prefix_, name);
  try {
    if (store_.add(departed, 1) == size_) {
      for (int q = 0; q < size_; ++q) store_.erase(fmt::format("{}{}/{}", prefix_, name, q));
      store_.erase(departed);
      if (last) liveness_.erase();
    }
  } catch (const Error&) {
  }
}

void Rendezvous::publishFailure(const std::string& reason) noexcept {
  publish(fmt::format("rank {} failed: {}", rank_, reason));
}

void Rendezvous::publish(const std::string& account) noexcept {
  try {
    const std::string failure = prefix_ + "failed";
    if (!store_.check(failure)) store_.set(failure, account);
  } catch (...) {
  }
}

std::string Rendezvous::missing(const std::string& key) {
  std::string list;
  for (int q = 0; q < size_; ++q) {
    if (!store_.check(fmt::format("{}{}/{}", prefix_, key, q))) {
      list += (list.empty() ? "" : ", ") + std::to_string(q);
    }
  }
  return list.empty() ? "none" : list;
}

}  // namespace grove::bootstrap

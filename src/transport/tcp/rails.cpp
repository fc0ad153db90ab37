// The rails of a TCP connection (see rails.hpp): splitting frames, moving pieces, weights.
#include "transport/tcp/rails.hpp"

#include <fmt/format.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace grove::transport::tcp {
namespace {

/// Bytes a socket holds that its peer's host has not acknowledged yet.
int64_t backlogOf(int fd) {
  int bytes = 0;
  return fd >= 0 && ::ioctl(fd, SIOCOUTQ, &bytes) == 0 ? std::max(bytes, 0) : 0;
}

}  // namespace

std::array<uint32_t, kMaxRails - 1> splitFrame(uint64_t bytes,
                                               const std::array<double, kMaxRails>& weights) {
  std::array<uint32_t, kMaxRails - 1> shares{};
  if (bytes < kStripeMinBytes) return shares;
  double total = 0;
  for (double weight : weights) total += std::max(weight, 0.0);
  if (total <= 0 || total == std::max(weights[0], 0.0)) return shares;
  // The largest multiple of the grain a u32 share holds.
  constexpr uint64_t kMaxShare = std::numeric_limits<uint32_t>::max() / kStripeGrain * kStripeGrain;
  for (int rail = 1; rail < kMaxRails; ++rail) {
    const double fraction = std::max(weights[rail], 0.0) / total;
    // The shares' fractions sum to at most 1 and each is rounded down: they never exceed
    // `bytes` together.
    uint64_t share = static_cast<uint64_t>(static_cast<double>(bytes) * fraction);
    share = std::min(share / kStripeGrain * kStripeGrain, kMaxShare);
    shares[rail - 1] = static_cast<uint32_t>(share);
  }
  return shares;
}

Rails::Rails(int limit) : limit_(std::clamp(limit, 1, kMaxRails)) {}

bool Rails::attach(int rail, net::UniqueFd socket) {
  if (rail < 1 || rail >= limit_ || rails_[rail].socket.valid()) return false;
  rails_[rail].socket = std::move(socket);
  return true;
}

std::array<double, kMaxRails> Rails::weights() const {
  std::array<double, kMaxRails> weights{};
  for (int rail = 0; rail < limit_; ++rail) {
    const Rail& r = rails_[rail];
    if (rail > 0 && (!r.socket.valid() || r.ended)) continue;
    weights[rail] = r.weight;
  }
  return weights;
}

uint64_t Rails::planSend(const char* payload, uint64_t bytes, uint32_t* railBytes, int primaryFd) {
  std::memset(railBytes, 0, sizeof(uint32_t) * (kMaxRails - 1));
  // The pieces of the previous frame are all done; small frames leave them so.
  if (limit_ == 1 || bytes < kStripeMinBytes) return bytes;
  // No rail (yet, or the peer has fewer interfaces): no backlogs to read.
  bool anyRail = false;
  for (int rail = 1; rail < limit_; ++rail)
    anyRail = anyRail || (attached(rail) && !rails_[rail].ended);
  if (!anyRail) return bytes;
  balanceBacklogs(primaryFd);
  const std::array<uint32_t, kMaxRails - 1> shares = splitFrame(bytes, weights());
  uint64_t railTotal = 0;
  for (uint32_t share : shares) railTotal += share;
  if (railTotal == 0) return bytes;
  piecesLeft_ = 1;  // the primary's
  rails_[0].blockedSince = {};
  rails_[0].total += bytes - railTotal;
  uint64_t offset = bytes - railTotal;
  for (int rail = 1; rail < kMaxRails; ++rail) {
    Rail& r = rails_[rail];
    r.offset = offset;
    r.bytes = shares[rail - 1];
    r.done = 0;
    r.source = payload;
    r.total += r.bytes;
    r.blockedSince = {};
    if (r.bytes > 0) ++piecesLeft_;
    railBytes[rail - 1] = shares[rail - 1];
    offset += r.bytes;
  }
  return bytes - railTotal;
}

void Rails::blocked(int rail) {
  if (piecesLeft_ > 0 && rails_[rail].blockedSince == Clock::time_point{}) {
    rails_[rail].blockedSince = Clock::now();
  }
}

void Rails::pieceDone(int rail) {
  if (piecesLeft_ == 0) return;
  Rail& done = rails_[rail];
  done.waited = done.blockedSince == Clock::time_point{} ? Clock::duration{}
                                                         : Clock::now() - done.blockedSince;
  if (--piecesLeft_ > 0) return;
  int least = -1;
  int most = -1;
  for (int r = 0; r < limit_; ++r) {
    if (r > 0 && rails_[r].bytes == 0) continue;
    if (least < 0 || rails_[r].waited < rails_[least].waited) least = r;
    if (most < 0 || rails_[r].waited > rails_[most].waited) most = r;
  }
  if (least != most && rails_[most].waited - rails_[least].waited > kLagSlack) shift(most, least);
}

void Rails::balanceBacklogs(int primaryFd) {
  // A backlog in the socket's own units: bytes per share of the weight, which is what its
  // drain takes when the weights match the links.
  std::array<double, kMaxRails> behind{};
  int least = -1;
  int most = -1;
  for (int r = 0; r < limit_; ++r) {
    if (r > 0 && (!rails_[r].socket.valid() || rails_[r].ended)) continue;
    behind[r] = static_cast<double>(backlogOf(r == 0 ? primaryFd : rails_[r].socket.get())) /
                rails_[r].weight;
    if (least < 0 || behind[r] < behind[least]) least = r;
    if (most < 0 || behind[r] > behind[most]) most = r;
  }
  if (least != most && behind[most] - behind[least] > kBacklogSlack) shift(most, least);
}

void Rails::shift(int from, int to) {
  rails_[from].weight *= 1 - kWeightStep;
  rails_[to].weight *= 1 + kWeightStep;
  double largest = 0;
  for (int r = 0; r < limit_; ++r) largest = std::max(largest, rails_[r].weight);
  for (int r = 0; r < limit_; ++r) {
    rails_[r].weight = std::max(rails_[r].weight / largest, 1 / kMinShareDivisor);
  }
}

size_t Rails::pumpWrites(std::string* error) {
  size_t moved = 0;
  for (int rail = 1; rail < limit_; ++rail) {
    Rail& r = rails_[rail];
    while (r.done < r.bytes && r.writable) {
      const size_t wanted = r.bytes - r.done;
      ssize_t sent = ::send(r.socket.get(), r.source + r.offset + r.done, wanted, MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          r.writable = false;
          blocked(rail);
        } else if (errno != EINTR) {
          *error = fmt::format("rail {}: {}", rail, std::strerror(errno));
          return moved;
        }
        continue;
      }
      r.done += static_cast<uint64_t>(sent);
      moved += static_cast<size_t>(sent);
      // A short write filled the socket's buffer: wait for EPOLLOUT.
      if (static_cast<size_t>(sent) < wanted) {
        r.writable = false;
        blocked(rail);
      }
      if (r.done == r.bytes) pieceDone(rail);
    }
  }
  return moved;
}

std::string Rails::summary() const {
  std::string out;
  for (int rail = 0; rail < limit_; ++rail) {
    const Rail& r = rails_[rail];
    if (rail > 0 && !r.socket.valid()) continue;
    out += fmt::format("{}rail {}: {:.1f} MiB of striped frames, weight {:.2f}",
                       out.empty() ? "" : "; ", rail, static_cast<double>(r.total) / (1 << 20),
                       r.weight);
  }
  return out;
}

bool Rails::writesDone() const {
  for (int rail = 1; rail < limit_; ++rail) {
    if (rails_[rail].done < rails_[rail].bytes) return false;
  }
  return true;
}

void Rails::shutdownWrites() {
  for (int rail = 1; rail < limit_; ++rail) {
    if (rails_[rail].socket.valid()) ::shutdown(rails_[rail].socket.get(), SHUT_WR);
  }
}

size_t Rails::unacknowledgedBytes() const {
  size_t total = 0;
  for (int rail = 1; rail < limit_; ++rail) {
    if (rails_[rail].socket.valid())
      total += static_cast<size_t>(backlogOf(rails_[rail].socket.get()));
  }
  return total;
}

bool Rails::planReceive(const uint32_t* railBytes, uint64_t primaryBytes) {
  uint64_t offset = primaryBytes;
  for (int rail = 1; rail < kMaxRails; ++rail) {
    Rail& r = rails_[rail];
    r.offset = offset;
    r.bytes = railBytes[rail - 1];
    r.done = 0;
    // checkFrameHeader refused shares beyond the limit; an ended rail brings nothing more.
    if (r.bytes > 0 && (rail >= limit_ || r.ended)) return false;
    offset += r.bytes;
  }
  return true;
}

size_t Rails::pumpReads(char* slot, char* discard, size_t discardBytes, std::string* error) {
  size_t moved = 0;
  for (int rail = 1; rail < limit_; ++rail) {
    Rail& r = rails_[rail];
    // A rail not attached yet is still in its handshake on this side: its bytes wait.
    while (r.done < r.bytes && r.readable && r.socket.valid()) {
      const size_t rest = r.bytes - r.done;
      const size_t wanted = slot != nullptr ? rest : std::min(rest, discardBytes);
      char* into = slot != nullptr ? slot + r.offset + r.done : discard;
      ssize_t got = ::recv(r.socket.get(), into, wanted, 0);
      if (got < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          r.readable = false;
        } else if (errno != EINTR) {
          *error = fmt::format("rail {}: {}", rail, std::strerror(errno));
          return moved;
        }
        continue;
      }
      if (got == 0) {
        r.ended = true;
        *error = fmt::format("rail {}: closed with {} bytes of a frame still to come", rail, rest);
        return moved;
      }
      r.done += static_cast<uint64_t>(got);
      moved += static_cast<size_t>(got);
      // A short read emptied the socket; not once the peer's end closed (no new edge comes).
      if (static_cast<size_t>(got) < wanted && !r.hangup) r.readable = false;
    }
  }
  return moved;
}

bool Rails::readsDone() const {
  for (int rail = 1; rail < limit_; ++rail) {
    if (rails_[rail].done < rails_[rail].bytes) return false;
  }
  return true;
}

}  // namespace grove::transport::tcp

// Private to the shm transport: the layout of its segments' first pages and ShmDomain's
// state, shared by shm_domain.cpp (lifetime, failures) and shm_connect.cpp (connecting).
// The protocol is described at the top of shm_domain.cpp and in docs/transports.md.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "transport/shm/shm_domain.hpp"
#include "transport/shm/shm_segment.hpp"
#include "transport/transport.hpp"  // FailureInfo

namespace grove::transport {
namespace shm {

constexpr size_t kPageBytes = 4096;
constexpr uint64_t kNodeMagic = 0x47524f56454e4f44;  // ASCII "GROVENOD"
constexpr uint64_t kFifoMagic = 0x47524f5645464946;  // ASCII "GROVEFIF"

// The first page of a node segment. Zero-filled by ftruncate; written by its owner only
// (except `attached`, bumped by peers, and the doorbell, rung by peers).
struct NodeHeader {
  Doorbell bell;
  alignas(64) std::atomic<uint32_t> ready;
  std::atomic<uint32_t> failed;
  std::atomic<uint32_t> closed;  // destroyed cleanly: its process may exit, not a failure
  std::atomic<uint32_t> attached;
  std::atomic<int32_t> pid;
  uint64_t pidNamespace;  // pidNamespaceId() of the owner: peers elsewhere cannot use `pid`
  uint64_t magic;
  // Why the owner failed (FailureInfo), written once before `failed` is raised: the first
  // abort() claims the fields, fills them and then sets `failureWritten` (release). Peers
  // read them only after seeing `failureWritten` and range-check every field.
  std::atomic<uint32_t> failureClaimed;
  std::atomic<uint32_t> failureWritten;
  int32_t failureOrigin;
  uint32_t failureUsageError;  // FailureInfo::usageError
  uint32_t failureCauseBytes;
  char failureCause[FailureInfo::kMaxCauseBytes];
  // Where this header lies in its owner's address space: a peer reads the owner's `pid`
  // there with process_vm_readv to learn whether it may read the owner's memory at all.
  uint64_t ownerAddress;
  // Advanced every kHeartbeatInterval by the owner process's heartbeat thread (see
  // shm_heartbeat.hpp): standing still while peers wait means the process is stopped.
  std::atomic<uint64_t> heartbeat;
};
static_assert(sizeof(NodeHeader) <= kPageBytes);

// The first page of a FIFO segment; the FIFO's memory follows at kPageBytes.
struct FifoHeader {
  std::atomic<uint32_t> ready;
  std::atomic<uint32_t> attached;
  uint64_t magic;
  uint64_t slotBytes;
  uint64_t depth;
  // The creator's process, like NodeHeader's: what reapAbandonedSegments() checks.
  int32_t ownerPid;
  uint64_t ownerPidNamespace;
};
static_assert(sizeof(FifoHeader) <= kPageBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) close(fd);
  }
};

// One FIFO this rank holds a view of.
struct Connection {
  ~Connection() {
    // The peer never attached (or we failed half way): nobody else will unlink the name.
    if (created && (header == nullptr || header->attached.load() < 2)) {
      unlinkSegment(name);
    }
  }
  std::string name;  // empty for a FIFO to this rank itself (private memory)
  bool created = false;
  Mapping mapping;
  FifoHeader* header = nullptr;
  std::unique_ptr<Fifo> fifo;
};

}  // namespace shm

struct ShmDomain::Impl {
  explicit Impl(ShmOptions opts);
  ~Impl();

  void lingerForUnreadMessages();
  void checkPeer(int peer, int lane, const char* call) const;
  Fifo& fifo(int src, int dst, int lane);
  shm::NodeHeader& peerNode(int peer);
  std::unique_ptr<shm::Connection> connectSelf();
  std::unique_ptr<shm::Connection> connectPeer(int src, int dst, int lane);
  [[noreturn]] void throwTimeout(int peer, const std::string& name, const char* what) const;

  ShmOptions options;
  int localCount = 0;
  std::vector<bool> isLocal;
  std::string nodeName;
  shm::Mapping nodeMapping;
  shm::NodeHeader* node = nullptr;
  std::vector<shm::Mapping> peerMappings;                  // by rank
  std::unique_ptr<std::atomic<shm::NodeHeader*>[]> peers;  // by rank; null until mapped
  std::unique_ptr<std::atomic<bool>[]> gone;               // by rank: process found dead
  std::vector<char> watchPid;  // by rank: the peer's pid means something in this namespace
  uint64_t pidNamespace = 0;
  mutable std::atomic<int64_t> nextPidCheckNs{0};
  // By rank, for the heartbeat check (rank thread): the counter last seen and when it last
  // moved (steady ns), and when this rank last checked (a longer gap starts a new wait).
  std::unique_ptr<std::atomic<uint64_t>[]> lastBeat;
  std::unique_ptr<std::atomic<int64_t>[]> lastBeatMovedNs;
  std::unique_ptr<std::atomic<bool>[]> silent;  // by rank: its heartbeat stood still too long
  mutable std::atomic<int64_t> lastBeatCheckNs{0};
  bool heartbeatRegistered = false;
  std::map<std::tuple<int, int, int>, std::unique_ptr<shm::Connection>> fifos;
};

}  // namespace grove::transport

// How a rank of a multi-process job reads its local peers' memory (transport/peer_memory.hpp):
// grove allocations are mapped through /proc/<pid>/fd/<fd> and cached, other memory is read
// with process_vm_readv.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "transport/peer_memory.hpp"
#include "transport/shm/shm_domain.hpp"

namespace grove::transport {

class ProcessPeerMemory final : public PeerMemory {
 public:
  /// For a communicator of `size` ranks all on this host, reached through `shm` (nullptr
  /// when there is a single rank).
  ProcessPeerMemory(int rank, int size, ShmDomain* shm);
  ~ProcessPeerMemory() override;
  ProcessPeerMemory(const ProcessPeerMemory&) = delete;
  ProcessPeerMemory& operator=(const ProcessPeerMemory&) = delete;

  bool canReadAllPeers() override;
  bool mapsAnyMemory() const override { return false; }
  const char* map(int peer, const BufferDescriptor& buffer) override;
  bool read(int peer, uint64_t address, void* to, size_t bytes) override;
  const std::string& readFailure() const override { return readFailure_; }

 private:
  struct Mapped {
    char* base = nullptr;
    size_t bytes = 0;
    uint64_t lastUse = 0;
  };
  /// Unmaps the least recently used mappings beyond the cache's bound.
  void evict();

  int rank_;
  ShmDomain* shm_;
  std::vector<pid_t> pids_;  ///< By rank, filled by canReadAllPeers().
  std::string readFailure_;
  int readable_ = -1;  ///< canReadAllPeers()'s answer once known (-1: not yet).
  std::map<std::pair<int, uint64_t>, Mapped> mapped_;  ///< By (peer, allocation id).
  uint64_t uses_ = 0;
};

}  // namespace grove::transport

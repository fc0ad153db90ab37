// reapAbandonedSegments: the segments of jobs whose every rank died. A survivor removes what a
// dead peer created (removeRankSegments), and `grove run` removes its job's names after the
// job; but when all ranks die and no launcher cleans up (mpirun, srun, torchrun, by hand),
// nobody is left to do it. So each new job's first local rank looks at every grove segment,
// reads who created it from its first page (node and FIFO headers both record the creator's
// pid and pid namespace) and removes those whose creator no longer runs.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "transport/shm/shm_domain.hpp"
#include "transport/shm/shm_domain_impl.hpp"

namespace grove::transport {
namespace {

// The creator recorded in the segment `name` (in /dev/shm, without the '/'): its pid when it
// is a grove node or FIFO segment of this pid namespace, else 0.
pid_t creatorOf(const std::string& name, uint64_t pidNamespace) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  shm::FdCloser closer{fd};
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) < shm::kPageBytes) return 0;
  void* page = mmap(nullptr, shm::kPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) return 0;
  pid_t creator = 0;
  const auto* node = static_cast<const shm::NodeHeader*>(page);
  const auto* fifo = static_cast<const shm::FifoHeader*>(page);
  // `ready` is raised after the header is written: a segment still being set up is skipped.
  if (node->magic == shm::kNodeMagic && node->ready.load(std::memory_order_acquire) != 0 &&
      node->pidNamespace == pidNamespace) {
    creator = node->pid.load(std::memory_order_relaxed);
  } else if (fifo->magic == shm::kFifoMagic && fifo->ready.load(std::memory_order_acquire) != 0 &&
             fifo->ownerPidNamespace == pidNamespace) {
    creator = fifo->ownerPid;
  }
  munmap(page, shm::kPageBytes);
  return creator;
}

}  // namespace

int reapAbandonedSegments() {
  const uint64_t pidNamespace = shm::pidNamespaceId();
  if (pidNamespace == 0) return 0;  // Pids cannot be trusted to mean this namespace's.
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  int removed = 0;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind("grove-", 0) != 0) continue;
    const pid_t creator = creatorOf(name, pidNamespace);
    if (creator > 0 && creator != getpid() && shm::processGone(creator)) {
      shm::unlinkSegment("/" + name);
      ++removed;
    }
  }
  closedir(dir);
  return removed;
}

}  // namespace grove::transport

// System-call layer of the shm transport: segment names, exclusive creation, pre-faulted
// mappings, deadline polling, peer liveness and the job cleanup helper (see
// shm_segment.hpp and docs/transports.md).
#include "transport/shm/shm_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "grove/error.hpp"
#include "transport/shm/shm_domain.hpp"

namespace grove::transport {
namespace shm {
namespace {

constexpr size_t kMaxJobIdLength = 128;

[[noreturn]] void throwSystem(const std::string& what, const std::string& name, int error) {
  throw Error(ErrorCode::kSystemError,
              "shared memory: " + what + " " + name + ": " + std::strerror(error));
}

// Consumes a run of decimal digits at the front of `text`; false when there is none.
bool eatDigits(std::string_view& text) {
  size_t n = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
  if (n == 0) return false;
  text.remove_prefix(n);
  return true;
}

bool eatChar(std::string_view& text, char c) {
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  return true;
}

}  // namespace

void checkJobId(std::string_view jobId) {
  bool printable = std::all_of(jobId.begin(), jobId.end(),
                               [](char c) { return c > ' ' && c < 127 && c != '/'; });
  if (jobId.empty() || jobId.size() > kMaxJobIdLength || !printable) {
    throw Error(ErrorCode::kInvalidArgument,
                "shared memory: job id '" + std::string(jobId) +
                    "' is invalid; expected 1 to 128 printable characters without '/' or "
                    "spaces");
  }
}

std::string nodeSegmentName(std::string_view jobId, int rank) {
  return "/grove-" + std::string(jobId) + "-n" + std::to_string(rank);
}

std::string fifoSegmentName(std::string_view jobId, int src, int dst, int lane) {
  return "/grove-" + std::string(jobId) + "-f" + std::to_string(src) + "-" + std::to_string(dst) +
         "-" + std::to_string(lane);
}

bool isJobSegment(std::string_view entry, std::string_view jobId) {
  std::string prefix = "grove-" + std::string(jobId) + "-";
  if (entry.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = entry.substr(prefix.size());
  if (eatChar(rest, 'n')) return eatDigits(rest) && rest.empty();
  return eatChar(rest, 'f') && eatDigits(rest) && eatChar(rest, '-') && eatDigits(rest) &&
         eatChar(rest, '-') && eatDigits(rest) && rest.empty();
}

int createSegment(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return -1;
    throwSystem("cannot create", name, errno);
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int error = errno;
    close(fd);
    unlinkSegment(name);
    throwSystem("cannot size (" + std::to_string(bytes) + " bytes)", name, error);
  }
  return fd;
}

int openSegment(const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    throwSystem("cannot open", name, errno);
  }
  return fd;
}

size_t segmentSize(int fd, const std::string& name) {
  struct stat st {};
  if (fstat(fd, &st) != 0) throwSystem("cannot stat", name, errno);
  return static_cast<size_t>(st.st_size);
}

void unlinkSegment(const std::string& name) noexcept { shm_unlink(name.c_str()); }

Mapping::~Mapping() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

Mapping::Mapping(Mapping&& other) noexcept : base_(other.base_), bytes_(other.bytes_) {
  other.base_ = nullptr;
  other.bytes_ = 0;
}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, bytes_);
    base_ = other.base_;
    bytes_ = other.bytes_;
    other.base_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

Mapping Mapping::anonymous(size_t bytes, bool populate) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (base == MAP_FAILED) throwSystem("cannot map", std::to_string(bytes) + " bytes", errno);
  return Mapping(base, bytes);
}

Mapping Mapping::shared(int fd, size_t bytes, const std::string& name) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) throwSystem("cannot map", name, errno);
  return Mapping(base, bytes);
}

void Mapping::overlay(int fd, const std::string& name) {
  void* base =
      mmap(base_, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE | MAP_FIXED, fd, 0);
  if (base == MAP_FAILED) throwSystem("cannot map", name, errno);
}

Backoff::Backoff(std::chrono::milliseconds timeout)
    : deadline_(std::chrono::steady_clock::now() + timeout) {}

void Backoff::pause() {
  std::this_thread::sleep_for(pause_);
  pause_ = std::min(pause_ * 2, std::chrono::microseconds(5000));
}

uint64_t pidNamespaceId() {
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

bool processGone(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A killed process stays a zombie until its parent reaps it, and kill() still finds it.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  char buffer[512];
  ssize_t n = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (n <= 0) return false;
  buffer[n] = '\0';
  // "pid (comm) S ...": the state follows the last ')' (comm may contain parentheses).
  const char* paren = std::strrchr(buffer, ')');
  if (paren == nullptr || paren[1] != ' ') return false;
  char state = paren[2];
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace shm

void removeJobSegments(std::string_view jobId) {
  shm::checkJobId(jobId);
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    if (shm::isJobSegment(entry->d_name, jobId)) {
      shm::unlinkSegment("/" + std::string(entry->d_name));
    }
  }
  closedir(dir);
}

void removeRankSegments(std::string_view jobId, int rank) {
  shm::unlinkSegment(shm::nodeSegmentName(jobId, rank));
  const std::string prefix = "grove-" + std::string(jobId) + "-f";
  const std::string asSource = std::to_string(rank) + "-";
  const std::string asDestination = "-" + std::to_string(rank) + "-";
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    std::string_view name(entry->d_name);
    if (!shm::isJobSegment(name, jobId) || name.substr(0, prefix.size()) != prefix) continue;
    // The rest is "<src>-<dst>-<lane>".
    std::string_view rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (rest.substr(0, asSource.size()) == asSource ||
        (dash != std::string_view::npos &&
         rest.substr(dash, asDestination.size()) == asDestination)) {
      shm::unlinkSegment("/" + std::string(name));
    }
  }
  closedir(dir);
}

}  // namespace grove::transport

// `grove run`'s system helpers: port, random hex, environments, /dev/shm clean-up.
#include "run_env.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "grove/error.hpp"

namespace grove::tools::run {
namespace {

[[noreturn]] void throwSystem(const std::string& what, int error) {
  throw Error(ErrorCode::kSystemError, what + ": " + std::strerror(error));
}

}  // namespace

uint16_t findFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throwSystem("cannot create a socket to find a free port", errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    throwSystem("cannot bind a socket on 127.0.0.1 to find a free port", error);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string randomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t filled = 0;
  while (filled < bytes) {
    const ssize_t got = ::getrandom(raw.data() + filled, bytes - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throwSystem("getrandom failed", errno);
    }
    filled += static_cast<size_t>(got);
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes);
  for (unsigned char c : raw) {
    hex.push_back(kDigits[c >> 4]);
    hex.push_back(kDigits[c & 0xf]);
  }
  return hex;
}

std::vector<std::string> mergeEnvironment(
    const char* const* base, const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::set<std::string> replaced;
  for (const auto& entry : overrides) replaced.insert(entry.first);
  std::vector<std::string> result;
  for (const char* const* item = base; item != nullptr && *item != nullptr; ++item) {
    const char* equals = std::strchr(*item, '=');
    const std::string name = equals != nullptr ? std::string(*item, equals) : std::string(*item);
    if (replaced.count(name) == 0) result.emplace_back(*item);
  }
  for (const auto& [name, value] : overrides) result.push_back(name + "=" + value);
  return result;
}

int removeJobSegments(const std::string& jobId, const std::string& directory) {
  if (jobId.empty()) return 0;
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return 0;
  const std::string prefix = "grove-" + jobId + "-";
  std::vector<std::string> doomed;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strncmp(entry->d_name, prefix.c_str(), prefix.size()) == 0) {
      doomed.emplace_back(entry->d_name);
    }
  }
  ::closedir(dir);
  int removed = 0;
  for (const std::string& name : doomed) {
    if (::unlink((directory + "/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace grove::tools::run

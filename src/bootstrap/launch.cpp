// detectLaunch: which launcher started this process, read from its environment variables.
//
// Each launcher is a row of variable names; the first whose rank variable is present wins,
// in the order of launch.hpp (explicit GROVE_* first, so a user can always override what a
// launcher says). Values are parsed strictly: a variable that is present but malformed is an
// error naming it, never silently ignored, because a wrong rank means a hang later.
#include "bootstrap/launch.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "common/socket.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

struct Launcher {
  const char* source;
  const char* rank;
  const char* size;
  const char* localRank;
  const char* localSize;
};

constexpr Launcher kLaunchers[] = {
    {"grove", "GROVE_RANK", "GROVE_WORLD_SIZE", "GROVE_LOCAL_RANK", "GROVE_LOCAL_SIZE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

using Getenv = std::function<const char*(const char*)>;

const char* lookup(const Getenv& getenv, const char* name) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// Parses `value` of variable `name` as an integer in [min, max].
int parseInt(const char* name, std::string_view value, long min, long max,
             std::string_view expected) {
  long number = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || number < min ||
      number > max) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}='{}' is not valid (expected {})", name, value, expected));
  }
  return static_cast<int>(number);
}

// SLURM_NTASKS_PER_NODE is "4", or "4(x2)" when every node runs 4, or "4(x2),3" when nodes
// differ; only the uniform forms give this host's count, the others leave it unknown (0).
int parseSlurmTasksPerNode(const char* name, std::string_view value) {
  size_t paren = value.find('(');
  if (value.find(',') != std::string_view::npos) return 0;
  if (paren != std::string_view::npos) {
    if (value.back() != ')' || value.substr(paren, 2) != "(x") {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{}='{}' is not valid (expected N or N(xM))", name, value));
    }
    value = value.substr(0, paren);
  }
  return parseInt(name, value, 1, 1 << 30, "a positive integer, or N(xM)");
}

void readRendezvous(const Getenv& getenv, const Launcher& launcher, LaunchInfo* info) {
  if (const char* store = lookup(getenv, "GROVE_STORE")) {
    std::string_view text(store);
    if (text.substr(0, 5) == "file:") {
      if (text.size() == 5) {
        throw Error(ErrorCode::kInvalidArgument,
                    "GROVE_STORE='file:' names no directory (expected file:/shared/dir)");
      }
      info->storeDirectory = std::string(text.substr(5));
      return;
    }
  }
  if (const char* root = lookup(getenv, "GROVE_ROOT")) {
    net::HostPort address = net::parseHostPort(root, "GROVE_ROOT");
    info->rootHost = address.host;
    info->rootPort = address.port;
    return;
  }
  const char* host = lookup(getenv, "MASTER_ADDR");
  const char* port = lookup(getenv, "MASTER_PORT");
  if (host != nullptr && port != nullptr) {
    std::string_view hostText(host);
    if (hostText.size() > 2 && hostText.front() == '[' && hostText.back() == ']') {
      hostText = hostText.substr(1, hostText.size() - 2);
    }
    info->rootHost = std::string(hostText);
    info->rootPort =
        static_cast<uint16_t>(parseInt("MASTER_PORT", port, 1, 65535, "a port number in 1..65535"));
    return;
  }
  if (host != nullptr || port != nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} is set but {} is not (both are needed for the rendezvous "
                            "address, or set GROVE_ROOT=host:port)",
                            host != nullptr ? "MASTER_ADDR" : "MASTER_PORT",
                            host != nullptr ? "MASTER_PORT" : "MASTER_ADDR"));
  }
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("launched by {} ({}={}), but no rendezvous address is set: set "
                          "GROVE_ROOT=host:port (or [ipv6]:port), or MASTER_ADDR and MASTER_PORT",
                          launcher.source, launcher.rank, lookup(getenv, launcher.rank)));
}

}  // namespace

// GROVE_SECRET, else the contents of GROVE_SECRET_FILE (trailing white space and newlines
// cut, so `openssl rand -hex 16 > f` works); a file that cannot be read or holds nothing is
// an error, since silently running without the secret the user asked for is worse.
std::string readSecret(const std::function<const char*(const char*)>& getenv) {
  if (const char* secret = getenv("GROVE_SECRET"); secret != nullptr && *secret != '\0') {
    return secret;
  }
  const char* path = lookup(getenv, "GROVE_SECRET_FILE");
  if (path == nullptr) return {};
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("GROVE_SECRET_FILE='{}' cannot be read (expected a readable file "
                            "holding the job secret)",
                            path));
  }
  std::string secret = text.str();
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back())) != 0) {
    secret.pop_back();
  }
  if (secret.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("GROVE_SECRET_FILE='{}' is empty (expected the job secret)", path));
  }
  return secret;
}

std::optional<LaunchInfo> detectLaunch(const Getenv& getenv) {
  for (const Launcher& launcher : kLaunchers) {
    const char* rank = lookup(getenv, launcher.rank);
    const char* size = lookup(getenv, launcher.size);
    if (rank == nullptr && size == nullptr) continue;
    if (rank == nullptr || size == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} is set but {} is not (a {} launch needs both)",
                              rank != nullptr ? launcher.rank : launcher.size,
                              rank != nullptr ? launcher.size : launcher.rank, launcher.source));
    }
    LaunchInfo info;
    info.source = launcher.source;
    info.worldSize = parseInt(launcher.size, size, 1, 1 << 30, "a positive integer");
    info.rank = parseInt(launcher.rank, rank, 0, info.worldSize - 1,
                         fmt::format("an integer in [0, {}={})", launcher.size, info.worldSize));
    if (const char* localSize = lookup(getenv, launcher.localSize)) {
      info.localSize =
          std::string_view(launcher.localSize) == "SLURM_NTASKS_PER_NODE"
              ? parseSlurmTasksPerNode(launcher.localSize, localSize)
              : parseInt(launcher.localSize, localSize, 1, info.worldSize,
                         fmt::format("an integer in [1, {}={}]", launcher.size, info.worldSize));
      if (info.localSize > info.worldSize) info.localSize = 0;
    }
    if (const char* localRank = lookup(getenv, launcher.localRank)) {
      const int limit = info.localSize > 0 ? info.localSize : info.worldSize;
      info.localRank =
          parseInt(launcher.localRank, localRank, 0, limit - 1,
                   info.localSize > 0
                       ? fmt::format("an integer in [0, {}={})", launcher.localSize, info.localSize)
                       : fmt::format("an integer in [0, {}={})", launcher.size, info.worldSize));
    }
    readRendezvous(getenv, launcher, &info);
    info.secret = readSecret(getenv);
    return info;
  }
  return std::nullopt;
}

}  // namespace grove::bootstrap

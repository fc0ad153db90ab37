// The job secret (GROVE_SECRET) authenticates every store and transport connection, so it
// must never reach a log: logs are shared in bug reports and CI output. This test runs a real
// 2-rank job over TCP at GROVE_DEBUG=TRACE (the most verbose level) and searches everything
// the ranks wrote for the secret.
//
// Why child processes: the log level is read once per process and the ranks must be
// separate processes to use the store and TCP; each rank re-executes this test binary with a
// filter that selects the child test below, which does nothing unless the parent set
// GROVE_SECRET_LOG_CHILD.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grove/communicator.hpp"
#include "gtest/gtest.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

// A port nothing listens on right now (the store binds it a moment later).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string randomHex(size_t bytes) {
  std::random_device device;
  std::string text;
  const char* digits = "0123456789abcdef";
  for (size_t i = 0; i < bytes; ++i) {
    unsigned value = device() & 0xff;
    text += digits[value >> 4];
    text += digits[value & 15];
  }
  return text;
}

// Starts this binary as one rank, its stdout and stderr in `output`.
pid_t spawnRank(const std::map<std::string, std::string>& overrides, const fs::path& output) {
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (overrides.count(name) == 0 && name.rfind("GROVE_", 0) != 0) entries.push_back(entry);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  std::vector<char*> env;
  for (std::string& entry : entries) env.push_back(entry.data());
  env.push_back(nullptr);

  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=SecretLogChild.RunsOneRank";
  std::vector<char*> argv{self.data(), filter.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Exit status of `pid`, or -1 after killing it when it runs past `limit`.
int waitRank(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The child side: one rank of the job, an allreduce and a barrier over TCP.
TEST(SecretLogChild, RunsOneRank) {
  if (std::getenv("GROVE_SECRET_LOG_CHILD") == nullptr) {
    GTEST_SKIP() << "runs only as a rank started by SecretLog.TraceLogsOfATcpJobHoldNoSecret";
  }
  grove::Communicator comm = grove::Communicator::fromEnv();
  std::vector<float> data(1000, static_cast<float>(comm.rank() + 1));
  std::vector<float> result(data.size(), 0.0f);
  comm.allReduce(data.data(), result.data(), data.size(), grove::DataType::kFloat32,
                 grove::ReduceOp::kSum);
  EXPECT_EQ(result[0], 3.0f);
  EXPECT_EQ(result[999], 3.0f);
  comm.barrier();
}

TEST(SecretLog, TraceLogsOfATcpJobHoldNoSecret) {
  fs::path dir = fs::temp_directory_path() / ("grove-secret-log-" + randomHex(6));
  fs::create_directories(dir);
  const std::string secret = "grove-test-secret-" + randomHex(16);
  const int port = freePort();
  ASSERT_GT(port, 0);
  std::vector<pid_t> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    std::map<std::string, std::string> env{
        {"GROVE_SECRET_LOG_CHILD", "1"},
        {"GROVE_RANK", std::to_string(rank)},
        {"GROVE_LOCAL_RANK", std::to_string(rank)},
        {"GROVE_WORLD_SIZE", "2"},
        {"GROVE_LOCAL_WORLD_SIZE", "2"},
        {"GROVE_ROOT", "127.0.0.1:" + std::to_string(port)},
        {"GROVE_SECRET", secret},
        {"GROVE_JOB_ID", randomHex(8)},
        {"GROVE_TRANSPORT", "tcp"},
        {"GROVE_DEBUG", "TRACE"},
        {"GROVE_TIMEOUT", "60"},
    };
    pid_t pid = spawnRank(env, dir / ("rank" + std::to_string(rank) + ".log"));
    ASSERT_GT(pid, 0) << "cannot start rank " << rank;
    ranks.push_back(pid);
  }
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    EXPECT_EQ(waitRank(ranks[rank], std::chrono::seconds(120)), 0)
        << "rank " << rank << " failed; its output:\n"
        << readAll(dir / ("rank" + std::to_string(rank) + ".log"));
  }
  for (int rank = 0; rank < 2; ++rank) {
    std::string log = readAll(dir / ("rank" + std::to_string(rank) + ".log"));
    // The job really logged at TRACE level, over TCP...
    EXPECT_NE(log.find("GROVE TRACE"), std::string::npos) << "rank " << rank << ":\n" << log;
    EXPECT_NE(log.find("TCP"), std::string::npos) << "rank " << rank << ":\n" << log;
    // ...and never the secret, nor its random part alone (a truncated or split print).
    EXPECT_EQ(log.find(secret), std::string::npos) << "rank " << rank << " logged the secret";
    EXPECT_EQ(log.find(secret.substr(secret.size() - 16)), std::string::npos)
        << "rank " << rank << " logged part of the secret";
  }
  fs::remove_all(dir);
}

}  // namespace

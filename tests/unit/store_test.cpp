// The rendezvous stores (src/bootstrap/tcp_store.hpp, file_store.hpp): set/get/add/check
// across threads and forked processes, waiting gets and their timeouts, secrets, hostile
// bytes on the server port, ports in use, and the file store under concurrent adds.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.hpp"
#include "bootstrap/file_store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tcp_store_wire.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"
#include "support/error_of.hpp"

namespace grove::bootstrap {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "store-test-secret";

using grove::testing::errorOf;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs the store contract on any Store.
void checkBasics(Store& store) {
  EXPECT_FALSE(store.check("alpha"));
  store.set("alpha", "one");
  EXPECT_TRUE(store.check("alpha"));
  EXPECT_EQ(store.get("alpha", 1s), "one");
  store.set("alpha", "uno");
  EXPECT_EQ(store.get("alpha", 1s), "uno");
  store.set("empty", "");
  EXPECT_EQ(store.get("empty", 1s), "");
  const std::string binary("a\0b\xff\n", 5);
  store.set("binary", binary);
  EXPECT_EQ(store.get("binary", 1s), binary);
  store.set("odd key/with spaces:%", "v");
  EXPECT_EQ(store.get("odd key/with spaces:%", 1s), "v");
  EXPECT_EQ(store.add("counter", 5), 5);
  EXPECT_EQ(store.add("counter", -7), -2);
  EXPECT_EQ(store.add("counter", 0), -2);
  EXPECT_EQ(store.get("counter", 1s), "-2");
  store.set("number", "40");
  EXPECT_EQ(store.add("number", 2), 42);
  const std::string longKey(kMaxKeyBytes, 'k');
  store.set(longKey, "long");
  EXPECT_EQ(store.get(longKey, 1s), "long");
  EXPECT_EQ(errorOf([&] { store.set(std::string(kMaxKeyBytes + 1, 'k'), "x"); }).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(errorOf([&] { store.set("big", std::string(kMaxValueBytes + 1, 'x')); }).code(),
            ErrorCode::kInvalidArgument);
  Error notNumber = errorOf([&] { store.add("alpha", 1); });
  EXPECT_EQ(notNumber.code(), ErrorCode::kInvalidUsage);
  EXPECT_TRUE(contains(notNumber.what(), "alpha")) << notNumber.what();
  EXPECT_EQ(store.get("alpha", 1s), "uno");  // Still usable after the refusal.
}

class TcpStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0, kSecret);
    port_ = server_->port();
  }
  std::unique_ptr<TcpStoreClient> client(const std::string& secret = kSecret) {
    return std::make_unique<TcpStoreClient>("127.0.0.1", port_, secret, 10s);
  }
  std::unique_ptr<TcpStoreServer> server_;
  uint16_t port_ = 0;
};

TEST_F(TcpStoreTest, SetGetAddCheck) {
  auto store = client();
  checkBasics(*store);
  EXPECT_EQ(store->address(), "127.0.0.1:" + std::to_string(port_));
}

TEST_F(TcpStoreTest, LargeValueRoundTrips) {
  auto store = client();
  std::string value(kMaxValueBytes, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 131 + 7);
  store->set("large", value);
  EXPECT_EQ(store->get("large", 10s), value);
}

TEST_F(TcpStoreTest, GetWaitsUntilAnotherClientSets) {
  auto reader = client();
  auto writer = client();
  auto value = std::async(std::launch::async, [&] { return reader->get("late", 30s); });
  std::this_thread::sleep_for(50ms);
  writer->set("late", "here");
  EXPECT_EQ(value.get(), "here");
  // An add also answers waiters.
  auto count = std::async(std::launch::async, [&] { return reader->get("late-counter", 30s); });
  std::this_thread::sleep_for(20ms);
  writer->add("late-counter", 3);
  EXPECT_EQ(count.get(), "3");
}

TEST_F(TcpStoreTest, OnCloseSetsItsKeyWhenTheConnectionEndsUnlessCancelledOrSet) {
  auto watcher = client();
  {
    auto dying = client();
    dying->setOnClose("will/a", "a died");
    dying->setOnClose("will/b", "b died");
    dying->setOnClose("will/c", "c died");
    dying->setOnClose("will/b", "");  // cancelled
    watcher->set("will/c", "c said why itself");
    EXPECT_FALSE(watcher->check("will/a"));  // not before the connection ends
  }
  EXPECT_EQ(watcher->get("will/a", 10s), "a died");
  EXPECT_EQ(watcher->get("will/c", 10s), "c said why itself");  // a will never overwrites
  EXPECT_FALSE(watcher->check("will/b"));
  // Bounded per connection: the ninth is refused, the connection stays usable.
  auto greedy = client();
  for (size_t i = 0; i < wire::kMaxOnClosePerConnection; ++i) {
    greedy->setOnClose("many/" + std::to_string(i), "x");
  }
  EXPECT_EQ(errorOf([&] { greedy->setOnClose("many/last", "x"); }).code(),
            ErrorCode::kInvalidUsage);
  EXPECT_FALSE(greedy->check("many/last"));
  EXPECT_EQ(errorOf([&] { greedy->setOnClose("big", std::string(4097, 'x')); }).code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(TcpStoreTest, EraseRemovesAKeyAndIgnoresAMissingOne) {
  auto store = client();
  store->set("gone", "soon");
  store->add("counter", 5);
  store->erase("gone");
  store->erase("counter");
  store->erase("never-set");
  EXPECT_FALSE(store->check("gone"));
  EXPECT_EQ(store->add("counter", 1), 1);  // starts from 0 again
}

TEST_F(TcpStoreTest, GetTimeoutNamesKeyAndServerThenClientRecovers) {
  auto store = client();
  Error error = errorOf([&] { store->get("never-set", 50ms); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_TRUE(contains(error.what(), "'never-set'")) << error.what();
  EXPECT_TRUE(contains(error.what(), "127.0.0.1:" + std::to_string(port_))) << error.what();
  EXPECT_TRUE(contains(error.what(), "50 ms")) << error.what();
  store->set("never-set", "now set");  // The late answer of the abandoned get is not seen.
  EXPECT_EQ(store->get("never-set", 1s), "now set");
  EXPECT_EQ(store->add("after-timeout", 1), 1);
}

TEST_F(TcpStoreTest, ManyThreadsShareTheStore) {
  constexpr int kThreads = 7;
  constexpr int kAdds = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto store = client();
        store->set("thread-" + std::to_string(t), std::to_string(t * t));
        for (int i = 0; i < kAdds; ++i) store->add("shared-counter", 1);
        for (int peer = 0; peer < kThreads; ++peer) {
          if (store->get("thread-" + std::to_string(peer), 30s) != std::to_string(peer * peer)) {
            ++failures;
          }
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(client()->add("shared-counter", 0), kThreads * kAdds);
}

TEST_F(TcpStoreTest, OneClientIsThreadSafe) {
  auto store = client();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) store->add("one-client", 2);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(store->add("one-client", 0), 800);
}

// The child side of ForkedProcessesRendezvous: runs only when that test execs this binary
// with STORE_TEST_CHILD=<index> and STORE_TEST_PORT=<port>.
TEST(TcpStoreChildProcess, Rendezvous) {
  const char* index = getenv("STORE_TEST_CHILD");
  const char* port = getenv("STORE_TEST_PORT");
  if (index == nullptr || port == nullptr) GTEST_SKIP() << "only run as a child process";
  const std::string c = index;
  TcpStoreClient store("127.0.0.1", static_cast<uint16_t>(std::stoi(port)), kSecret, 10s);
  store.set("child-" + c, "hello from child " + c);
  store.add("arrived", 1);
  EXPECT_EQ(store.get("parent", 30s), "go");
}

TEST_F(TcpStoreTest, ForkedProcessesRendezvous) {
  // The children exec this binary afresh: a child that only forked would inherit the server
  // thread's allocator and OpenSSL locks in whatever state they were, and could deadlock.
  constexpr int kChildren = 3;
  std::vector<std::vector<std::string>> envs;
  for (int c = 0; c < kChildren; ++c) {
    envs.push_back(
        {"STORE_TEST_CHILD=" + std::to_string(c), "STORE_TEST_PORT=" + std::to_string(port_)});
    for (char** e = environ; *e != nullptr; ++e) envs.back().push_back(*e);
  }
  std::vector<std::vector<char*>> envps(kChildren);
  for (int c = 0; c < kChildren; ++c) {
    for (std::string& entry : envs[c]) envps[c].push_back(entry.data());
    envps[c].push_back(nullptr);
  }
  char self[] = "/proc/self/exe";
  char filter[] = "--gtest_filter=TcpStoreChildProcess.Rendezvous";
  char* argv[] = {self, filter, nullptr};
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      execve(self, argv, envps[c].data());
      _exit(127);
    }
    children.push_back(pid);
  }
  auto store = client();
  for (int c = 0; c < kChildren; ++c) {
    EXPECT_EQ(store->get("child-" + std::to_string(c), 30s),
              "hello from child " + std::to_string(c));
  }
  store->set("parent", "go");
  for (pid_t pid : children) {
    int status = -1;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(store->add("arrived", 0), kChildren);
}

TEST_F(TcpStoreTest, WrongSecretIsRefusedAndServerKeepsServing) {
  auto good = client();
  good->set("before", "1");
  ::testing::internal::CaptureStderr();
  Error error = errorOf([&] { client("not-the-secret"); });
  std::string serverLog = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(error.code(), ErrorCode::kInvalidUsage);
  EXPECT_TRUE(contains(error.what(), "GROVE_SECRET")) << error.what();
  EXPECT_FALSE(contains(error.what(), "not-the-secret")) << error.what();
  EXPECT_FALSE(contains(error.what(), kSecret)) << error.what();
  EXPECT_TRUE(contains(serverLog, "store server")) << serverLog;
  EXPECT_TRUE(contains(serverLog, "does not know the job secret")) << serverLog;
  EXPECT_EQ(good->get("before", 1s), "1");
  EXPECT_EQ(client()->get("before", 1s), "1");
}

// Sends `bytes` on a fresh connection and waits until the server closes it.
void expectServerCloses(int fd) {
  char sink[256];
  const auto deadline = net::Clock::now() + 10s;
  while (net::Clock::now() < deadline) {
    ASSERT_TRUE(net::waitForFd(fd, POLLIN, deadline));
    ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
    if (n <= 0) return;
  }
  FAIL() << "the server did not close the connection";
}

TEST_F(TcpStoreTest, GarbageBeforeAuthenticationClosesOnlyThatConnection) {
  ::testing::internal::CaptureStderr();
  net::UniqueFd raw =
      net::connectWithRetry("127.0.0.1", port_, net::Clock::now() + 10s, "store server");
  std::string garbage;
  for (int i = 0; i < 300; ++i) garbage += static_cast<char>(i * 37 + 11);
  net::writeExact(raw.get(), garbage.data(), garbage.size(), net::Clock::now() + 10s, "garbage");
  expectServerCloses(raw.get());
  ::testing::internal::GetCapturedStderr();
  auto store = client();
  store->set("still", "alive");
  EXPECT_EQ(store->get("still", 1s), "alive");
}

TEST_F(TcpStoreTest, MalformedFramesAfterAuthenticationCloseOnlyThatConnection) {
  auto store = client();
  std::vector<std::string> frames;
  std::string frame;
  frame += static_cast<char>(wire::kSet);
  wire::putU32(frame, 0xffffffffu);  // Key length far past kMaxKeyBytes.
  frames.push_back(frame);
  frame.clear();
  frame += static_cast<char>(wire::kSet);
  wire::putU32(frame, 1);
  frame += 'k';
  wire::putU64(frame, uint64_t{1} << 62);  // Value length far past kMaxValueBytes.
  frames.push_back(frame);
  frame.clear();
  frame += static_cast<char>(0x7f);  // Unknown opcode.
  wire::putU32(frame, 0);
  wire::putU64(frame, 0);
  frames.push_back(frame);
  frame.clear();
  frame += static_cast<char>(wire::kAdd);  // An add whose delta is not 8 bytes.
  wire::putU32(frame, 1);
  frame += 'k';
  wire::putU64(frame, 3);
  frame += "abc";
  frames.push_back(frame);
  for (const std::string& bad : frames) {
    ::testing::internal::CaptureStderr();
    net::UniqueFd raw =
        net::connectWithRetry("127.0.0.1", port_, net::Clock::now() + 10s, "store server");
    authenticate(raw.get(), kSecret, false, "test client", net::Clock::now() + 10s);
    net::writeExact(raw.get(), bad.data(), bad.size(), net::Clock::now() + 10s, "bad frame");
    expectServerCloses(raw.get());
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(contains(log, "closing the connection")) << log;
    store->set("survivor", "yes");
    EXPECT_EQ(store->get("survivor", 1s), "yes");
  }
}

TEST_F(TcpStoreTest, SilentConnectionDoesNotBlockOthers) {
  net::UniqueFd silent =
      net::connectWithRetry("127.0.0.1", port_, net::Clock::now() + 10s, "store server");
  auto store = client();
  store->set("k", "v");
  EXPECT_EQ(store->get("k", 1s), "v");
}

TEST_F(TcpStoreTest, PortInUseIsAClearSystemError) {
  Error error = errorOf([&] { TcpStoreServer second("127.0.0.1", port_, kSecret); });
  EXPECT_EQ(error.code(), ErrorCode::kSystemError);
  EXPECT_TRUE(contains(error.what(), "port " + std::to_string(port_))) << error.what();
  EXPECT_TRUE(contains(error.what(), "in use")) << error.what();
}

TEST_F(TcpStoreTest, ClientWaitsForAServerThatStartsLater) {
  server_.reset();  // Frees port_; a new server takes it a little later.
  std::unique_ptr<TcpStoreServer> late;
  std::thread starter([&] {
    std::this_thread::sleep_for(200ms);
    late = std::make_unique<TcpStoreServer>("127.0.0.1", port_, kSecret);
  });
  auto store = client();
  starter.join();
  store->set("k", "late server");
  EXPECT_EQ(store->get("k", 1s), "late server");
}

TEST_F(TcpStoreTest, WaitingClientGetsAnErrorWhenTheServerStops) {
  auto store = client();
  auto pending =
      std::async(std::launch::async, [&] { return errorOf([&] { store->get("never", 60s); }); });
  std::this_thread::sleep_for(50ms);
  server_.reset();
  Error error = pending.get();
  EXPECT_EQ(error.code(), ErrorCode::kSystemError) << error.what();
  EXPECT_TRUE(contains(error.what(), "'never'")) << error.what();
}

TEST(TcpStore, UnreachableServerTimesOutNamingTheAddress) {
  uint16_t port = 0;
  {
    TcpStoreServer probe("127.0.0.1", 0, "");
    port = probe.port();
  }
  Error error = errorOf([&] { TcpStoreClient store("127.0.0.1", port, "", 100ms); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_TRUE(contains(error.what(), "127.0.0.1:" + std::to_string(port))) << error.what();
  EXPECT_TRUE(contains(error.what(), "100 ms")) << error.what();
}

TEST(TcpStore, WorksOverIpv6Loopback) {
  std::unique_ptr<TcpStoreServer> server;
  try {
    server = std::make_unique<TcpStoreServer>("::1", 0, kSecret);
  } catch (const Error& error) {
    GTEST_SKIP() << "no IPv6 loopback here: " << error.what();
  }
  TcpStoreClient store("::1", server->port(), kSecret, 10s);
  EXPECT_EQ(store.address(), "[::1]:" + std::to_string(server->port()));
  store.set("v6", "yes");
  EXPECT_EQ(store.get("v6", 1s), "yes");
  EXPECT_EQ(store.add("v6-counter", 9), 9);
}

TEST(TcpStore, EveryInterfaceServesIpv4AndIpv6Loopback) {
  TcpStoreServer server("", 0, kSecret);
  TcpStoreClient v4("127.0.0.1", server.port(), kSecret, 10s);
  v4.set("family", "both");
  try {
    TcpStoreServer probe("::1", 0, kSecret);
  } catch (const Error& error) {
    GTEST_SKIP() << "no IPv6 loopback here: " << error.what();
  }
  TcpStoreClient v6("::1", server.port(), kSecret, 10s);
  EXPECT_EQ(v6.get("family", 1s), "both");
}

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/grove-file-store-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::string directory_;
};

TEST_F(FileStoreTest, SetGetAddCheck) {
  FileStore store(directory_ + "/nested/dir");
  checkBasics(store);
}

TEST_F(FileStoreTest, EraseRemovesAKeyAndIgnoresAMissingOne) {
  FileStore store(directory_);
  store.set("gone", "soon");
  store.erase("gone");
  store.erase("never-set");
  EXPECT_FALSE(store.check("gone"));
}

TEST_F(FileStoreTest, KeysMapToDistinctSafeFileNames) {
  FileStore store(directory_);
  EXPECT_EQ(store.pathOf("rank-0.addr"), directory_ + "/k-rank-0.addr");
  EXPECT_EQ(store.pathOf("a/b c"), directory_ + "/k-a%2Fb%20c");
  EXPECT_EQ(store.pathOf(""), directory_ + "/k-");
  std::string longName = store.pathOf(std::string(500, 'x'));
  EXPECT_EQ(longName.substr(directory_.size() + 1, 2), "h-");
  EXPECT_NE(longName, store.pathOf(std::string(501, 'x')));
  EXPECT_NE(store.pathOf(".."), store.pathOf("%2E%2E"));
}

TEST_F(FileStoreTest, GetWaitsAndTimesOutNamingKeyAndDirectory) {
  FileStore reader(directory_);
  FileStore writer(directory_);
  auto value = std::async(std::launch::async, [&] { return reader.get("late", 30s); });
  std::this_thread::sleep_for(30ms);
  writer.set("late", "here");
  EXPECT_EQ(value.get(), "here");
  Error error = errorOf([&] { reader.get("missing", 20ms); });
  EXPECT_EQ(error.code(), ErrorCode::kTimeout);
  EXPECT_TRUE(contains(error.what(), "'missing'")) << error.what();
  EXPECT_TRUE(contains(error.what(), directory_)) << error.what();
}

TEST_F(FileStoreTest, ConcurrentAddsFromThreadsAndProcessesAreAtomic) {
  constexpr int kThreads = 6;
  constexpr int kAdds = 40;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 0;
    try {
      FileStore store(directory_);
      for (int i = 0; i < kAdds; ++i) store.add("counter", 1);
    } catch (...) {
      status = 3;
    }
    _exit(status);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      FileStore store(directory_);  // Each thread its own instance, like separate ranks.
      for (int i = 0; i < kAdds; ++i) store.add("counter", 1);
    });
  }
  for (auto& thread : threads) thread.join();
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  FileStore store(directory_);
  EXPECT_EQ(store.add("counter", 0), (kThreads + 1) * kAdds);
  EXPECT_EQ(store.get("counter", 1s), std::to_string((kThreads + 1) * kAdds));
}

TEST_F(FileStoreTest, UnusableDirectoryIsASystemError) {
  std::string file = directory_ + "/plain-file";
  FileStore(directory_).set("x", "y");
  std::filesystem::copy_file(FileStore(directory_).pathOf("x"), file);
  Error error = errorOf([&] { FileStore store(file + "/sub"); });
  EXPECT_EQ(error.code(), ErrorCode::kSystemError);
  EXPECT_TRUE(contains(error.what(), file)) << error.what();
}

}  // namespace
}  // namespace grove::bootstrap

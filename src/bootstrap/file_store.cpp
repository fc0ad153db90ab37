// FileStore: set = write a temp file and rename it over the key's file (readers see the old
// value or the new one, never half of one); get = poll for the file with backoff; add =
// read-modify-write under an exclusive flock() on "<dir>/.lock" (flock maps to POSIX locks on
// NFS). Temp names carry host, pid and a counter so writers on different hosts never collide.
#include "bootstrap/file_store.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <thread>

#include "bootstrap/random.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

constexpr size_t kMaxFileName = 200;

[[noreturn]] void throwSystem(const std::string& message, int error) {
  throw Error(ErrorCode::kSystemError, message + ": " + net::errorText(error));
}

void checkKey(std::string_view key, std::string_view op) {
  if (key.size() > kMaxKeyBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("file store {}: the key is {} bytes long (expected at most {})", op,
                            key.size(), kMaxKeyBytes));
  }
}

std::string sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorCode::kSystemError, "file store: SHA-256 failed");
  }
  return toHex(std::string_view(reinterpret_cast<const char*>(digest), length));
}

// Reads the whole file at `path`; false when it does not exist.
bool readFile(const std::string& path, std::string* value) {
  net::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return false;
    throwSystem("file store: cannot open " + path, errno);
  }
  value->clear();
  char buffer[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSystem("file store: cannot read " + path, errno);
    }
    if (n == 0) return true;
    if (value->size() + static_cast<size_t>(n) > kMaxValueBytes) {
      throw Error(ErrorCode::kInvalidUsage,
                  fmt::format("file store: {} holds more than {} bytes", path, kMaxValueBytes));
    }
    value->append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

FileStore::FileStore(std::string directory, std::chrono::milliseconds timeout)
    : directory_(std::move(directory)), timeout_(timeout) {
  if (directory_.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "file store: the directory name is empty");
  }
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error || !std::filesystem::is_directory(directory_)) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("file store: cannot use directory '{}': {}", directory_,
                            error ? error.message() : "not a directory"));
  }
}

std::string FileStore::pathOf(std::string_view key) const {
  std::string name = "k-";
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      name += fmt::format("%{:02X}", c);
    }
  }
  if (name.size() > kMaxFileName) name = "h-" + sha256Hex(key);
  return directory_ + "/" + name;
}

void FileStore::writeAtomically(const std::string& path, std::string_view value) {
  static std::atomic<uint64_t> counter{0};
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string temp = fmt::format("{}/.tmp-{}-{}-{}", directory_, host, getpid(), counter++);
  {
    net::UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd.valid()) throwSystem("file store: cannot create " + temp, errno);
    size_t done = 0;
    while (done < value.size()) {
      ssize_t n = ::write(fd.get(), value.data() + done, value.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int error = errno;
        ::unlink(temp.c_str());
        throwSystem("file store: cannot write " + temp, error);
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    throwSystem("file store: cannot rename " + temp + " to " + path, error);
  }
}

void FileStore::erase(std::string_view key) {
  checkKey(key, "erase");
  const std::string path = pathOf(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throwSystem("file store: cannot remove " + path, errno);
  }
}

void FileStore::set(std::string_view key, std::string_view value) {
  checkKey(key, "set");
  if (value.size() > kMaxValueBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("file store set of key '{}': the value is {} bytes (expected at "
                            "most {})",
                            key, value.size(), kMaxValueBytes));
  }
  writeAtomically(pathOf(key), value);
}

std::string FileStore::get(std::string_view key, std::chrono::milliseconds timeout) {
  checkKey(key, "get");
  const std::string path = pathOf(key);
  const auto deadline = net::Clock::now() + timeout;
  auto backoff = std::chrono::milliseconds(1);
  std::string value;
  while (!readFile(path, &value)) {
    auto now = net::Clock::now();
    if (now >= deadline) {
      throw Error(ErrorCode::kTimeout,
                  fmt::format("file store get of key '{}' timed out after {} ms (directory {})",
                              key, timeout.count(), directory_));
    }
    std::this_thread::sleep_for(std::min<net::Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
  return value;
}

int64_t FileStore::add(std::string_view key, int64_t delta) {
  checkKey(key, "add");
  const std::string lockPath = directory_ + "/.lock";
  net::UniqueFd lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock.valid()) throwSystem("file store: cannot open " + lockPath, errno);
  const auto deadline = net::Clock::now() + timeout_;
  auto backoff = std::chrono::milliseconds(1);
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) throwSystem("file store: flock " + lockPath, errno);
    if (net::Clock::now() >= deadline) {
      throw Error(ErrorCode::kTimeout,
                  fmt::format("file store add of key '{}': {} stayed locked for {} ms", key,
                              lockPath, timeout_.count()));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(20));
  }
  // The lock is released when `lock` closes, also when an exception leaves this function.
  const std::string path = pathOf(key);
  std::string text;
  int64_t current = 0;
  if (readFile(path, &text)) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), current);
    if (error != std::errc() || end != text.data() + text.size()) {
      throw Error(
          ErrorCode::kInvalidUsage,
          fmt::format("file store add: key '{}' holds a value that is not an integer", key));
    }
  }
  int64_t result = 0;
  if (__builtin_add_overflow(current, delta, &result)) {
    throw Error(
        ErrorCode::kInvalidUsage,
        fmt::format("file store add: {} + {} overflows 64 bits for key '{}'", current, delta, key));
  }
  writeAtomically(path, std::to_string(result));
  return result;
}

bool FileStore::check(std::string_view key) {
  checkKey(key, "check");
  struct stat info {};
  return ::stat(pathOf(key).c_str(), &info) == 0;
}

}  // namespace grove::bootstrap

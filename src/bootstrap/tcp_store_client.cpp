// The TCP store client: one authenticated connection, one request at a time.
//
// Any failure in the middle of a request (a timeout, a broken connection) drops the
// connection, so a late answer can never be mistaken for the answer to the next request;
// the next call reconnects and authenticates again. That is also how a `get` gives up: the
// server forgets a waiter when its connection closes.
#include <fmt/format.h>

#include <thread>

#include "bootstrap/auth.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/tcp_store_wire.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

void checkKey(std::string_view key, std::string_view opName) {
  if (key.size() > kMaxKeyBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("store {}: the key is {} bytes long (expected at most {})", opName,
                            key.size(), kMaxKeyBytes));
  }
}

}  // namespace

TcpStoreClient::TcpStoreClient(std::string host, uint16_t port, std::string secret,
                               std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), secret_(std::move(secret)), timeout_(timeout) {
  std::lock_guard lock(mutex_);
  try {
    connect(net::Clock::now() + timeout_);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kTimeout) throw;
    throw Error(ErrorCode::kTimeout,
                fmt::format("store client: {} (waited {} ms)", error.what(), timeout_.count()));
  }
}

TcpStoreClient::~TcpStoreClient() = default;

std::string TcpStoreClient::address() const { return net::formatHostPort(host_, port_); }

void TcpStoreClient::connect(net::Clock::time_point deadline) {
  auto backoff = std::chrono::milliseconds(10);
  while (true) {
    net::UniqueFd fd = net::connectWithRetry(host_, port_, deadline, "store server");
    try {
      authenticate(fd.get(), secret_, false, "store client", deadline);
      fd_ = std::move(fd);
      return;
    } catch (const Error& error) {
      // A server going away (the store of a communicator being destroyed while this process
      // already makes the next one) resets the handshake: dial again. A refused secret or a
      // timeout is final.
      if (error.code() != ErrorCode::kSystemError || net::Clock::now() + backoff >= deadline) throw;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

std::string TcpStoreClient::request(uint8_t op, std::string_view opName, std::string_view key,
                                    std::string_view value, std::chrono::milliseconds timeout) {
  checkKey(key, opName);
  std::string frame;
  frame.reserve(1 + 4 + key.size() + 8 + value.size());
  frame += static_cast<char>(op);
  wire::putU32(frame, static_cast<uint32_t>(key.size()));
  frame += key;
  wire::putU64(frame, value.size());
  frame += value;

  std::lock_guard lock(mutex_);
  const auto deadline = net::Clock::now() + timeout;
  std::string what = fmt::format("store {} of key '{}' (store server {})", opName, key, address());
  if (!lost_.empty()) throw Error(ErrorCode::kRemoteError, fmt::format("{}: {}", what, lost_));
  bool connected = fd_.valid();
  try {
    if (!connected) connect(deadline);
    connected = true;
    net::writeExact(fd_.get(), frame.data(), frame.size(), deadline, what);
    char header[wire::kResponseHeaderBytes];
    net::readExact(fd_.get(), header, sizeof(header), deadline, what);
    const auto status = static_cast<uint8_t>(header[0]);
    const uint64_t length = wire::getU64(header + 1);
    const uint64_t limit = status == wire::kOk ? kMaxValueBytes : wire::kMaxErrorBytes;
    if ((status != wire::kOk && status != wire::kError) || length > limit) {
      throw Error(
          ErrorCode::kSystemError,
          fmt::format("{}: malformed response (status {}, length {})", what, status, length));
    }
    std::string payload(length, '\0');
    net::readExact(fd_.get(), payload.data(), payload.size(), deadline, what);
    if (status == wire::kError) {
      throw Error(ErrorCode::kInvalidUsage, fmt::format("{}: {}", what, payload));
    }
    return payload;
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kInvalidUsage || !fd_.valid()) fd_.reset();
    // A request that timed out drops the connection on purpose (see the top); any other
    // loss, once the store's loss means the job is gone, ends every later request too.
    if (failOnDisconnect_ && connected && !fd_.valid() && error.code() != ErrorCode::kTimeout) {
      lost_ = fmt::format(
          "the connection to the store server was lost (the process serving it ended, or the "
          "network failed): {}",
          error.what());
      throw Error(ErrorCode::kRemoteError, lost_);
    }
    if (error.code() == ErrorCode::kTimeout) {
      throw Error(ErrorCode::kTimeout,
                  connected ? fmt::format("{} timed out after {} ms", what, timeout.count())
                            : fmt::format("{} timed out after {} ms: {}", what, timeout.count(),
                                          error.what()));
    }
    throw;
  }
}

void TcpStoreClient::set(std::string_view key, std::string_view value) {
  if (value.size() > kMaxValueBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("store set of key '{}': the value is {} bytes (expected at most {})",
                            key, value.size(), kMaxValueBytes));
  }
  request(wire::kSet, "set", key, value, timeout_);
}

std::string TcpStoreClient::get(std::string_view key, std::chrono::milliseconds timeout) {
  return request(wire::kGet, "get", key, {}, timeout);
}

int64_t TcpStoreClient::add(std::string_view key, int64_t delta) {
  std::string value;
  wire::putU64(value, static_cast<uint64_t>(delta));
  std::string payload = request(wire::kAdd, "add", key, value, timeout_);
  if (payload.size() != 8) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("store add of key '{}' (store server {}): the answer is {} bytes "
                            "(expected 8)",
                            key, address(), payload.size()));
  }
  return static_cast<int64_t>(wire::getU64(payload.data()));
}

bool TcpStoreClient::check(std::string_view key) {
  std::string payload = request(wire::kCheck, "check", key, {}, timeout_);
  if (payload.size() != 1) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("store check of key '{}' (store server {}): the answer is {} bytes "
                            "(expected 1)",
                            key, address(), payload.size()));
  }
  return payload[0] != 0;
}

void TcpStoreClient::erase(std::string_view key) {
  request(wire::kErase, "erase", key, {}, timeout_);
}

void TcpStoreClient::setOnClose(std::string_view key, std::string_view value) {
  if (value.size() > wire::kMaxOnCloseValueBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("store onClose of key '{}': the value is {} bytes (expected at most "
                            "{})",
                            key, value.size(), wire::kMaxOnCloseValueBytes));
  }
  request(wire::kOnClose, "onClose", key, value, timeout_);
}

void TcpStoreClient::failOnDisconnect() {
  std::lock_guard lock(mutex_);
  failOnDisconnect_ = true;
}

}  // namespace grove::bootstrap

// Connection opening of the TCP transport (see handshake.hpp).
#include "transport/tcp/handshake.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "bootstrap/auth.hpp"
#include "grove/error.hpp"

namespace grove::transport::tcp {

HelloStatus checkHello(const Hello& hello, const HelloPolicy& policy) {
  if (hello.version != kWireVersion) return HelloStatus::kBadVersion;
  if (hello.dst != static_cast<uint32_t>(policy.rank)) return HelloStatus::kWrongDestination;
  bool known = std::any_of(policy.remoteRanks.begin(), policy.remoteRanks.end(),
                           [&](int rank) { return static_cast<uint32_t>(rank) == hello.src; });
  if (!known) return HelloStatus::kUnknownSource;
  if (hello.stream >= policy.streams) return HelloStatus::kBadStream;
  if (hello.slotBytes != policy.slotBytes) return HelloStatus::kGeometryMismatch;
  if (hello.rail >= policy.rails || (hello.flags & ~kHelloDialBack) != 0) {
    return HelloStatus::kBadRail;
  }
  return HelloStatus::kAccepted;
}

net::UniqueFd openConnection(std::string_view address, const Hello& hello, std::string_view secret,
                             net::Deadline deadline, const std::atomic<bool>* cancel,
                             const std::function<void(int)>& onSocket) {
  net::UniqueFd socket = net::dial(address, deadline, cancel);
  onSocket(socket.get());
  std::string role = fmt::format("tcp transport rank {}", hello.src);
  bootstrap::authenticate(socket.get(), secret, /*isServer=*/false, role, deadline);
  unsigned char bytes[Hello::kBytes];
  hello.encode(bytes);
  std::string what = fmt::format("hello to rank {} at {}", hello.dst, address);
  net::writeExact(socket.get(), bytes, sizeof bytes, deadline, what, cancel);
  unsigned char answer[HelloAck::kBytes];
  net::readExact(socket.get(), answer, sizeof answer, deadline, what, cancel);
  HelloAck ack = HelloAck::decode(answer);
  if (ack.magic != kHelloMagic) {
    throw Error(ErrorCode::kSystemError,
                fmt::format("{}: the answer is not a grove hello acknowledgement", what));
  }
  if (ack.status != static_cast<uint32_t>(HelloStatus::kAccepted)) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("{}: refused ({})", what, describe(HelloStatus{ack.status})));
  }
  return socket;
}

namespace {

constexpr auto kRedialFirst = std::chrono::milliseconds(5);
constexpr auto kRedialMax = std::chrono::milliseconds(200);

// Sleeps `pause` in short steps unless `*cancel` becomes true; false when it did.
bool pauseUnlessCancelled(std::chrono::milliseconds pause, const std::atomic<bool>* cancel) {
  net::Deadline end = std::chrono::steady_clock::now() + pause;
  auto cancelled = [cancel] { return cancel != nullptr && cancel->load(); };
  while (!cancelled() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::min(pause, std::chrono::milliseconds(5)));
  }
  return !cancelled();
}

}  // namespace

net::UniqueFd openConnectionRetrying(std::string_view address, const Hello& hello,
                                     std::string_view secret, net::Deadline deadline,
                                     const std::atomic<bool>* cancel,
                                     const std::function<void(int)>& onSocket,
                                     const std::function<void(const std::string&)>& onRetry) {
  for (auto pause = kRedialFirst;; pause = std::min(pause * 2, kRedialMax)) {
    bool connected = false;
    try {
      return openConnection(address, hello, secret, deadline, cancel, [&](int fd) {
        connected = true;
        onSocket(fd);
      });
    } catch (const Error& error) {
      // kSystemError after connecting: closed or reset, not refused (kInvalidUsage) and not
      // out of time (kTimeout).
      bool again = connected && error.code() == ErrorCode::kSystemError &&
                   std::chrono::steady_clock::now() + pause < deadline;
      if (!again || !pauseUnlessCancelled(pause, cancel)) throw;
      onRetry(error.what());
    }
  }
}

HelloAnswer answerHello(const unsigned char* bytes, const HelloPolicy& policy) {
  HelloAnswer answer;
  answer.hello = Hello::decode(bytes);
  const Hello& hello = answer.hello;
  if (hello.magic != kHelloMagic) {
    answer.refusal = "the hello does not start with the grove magic";
    return answer;
  }
  HelloStatus status = checkHello(hello, policy);
  HelloAck ack;
  ack.status = static_cast<uint32_t>(status);
  answer.ack.resize(HelloAck::kBytes);
  ack.encode(reinterpret_cast<unsigned char*>(answer.ack.data()));
  if (status != HelloStatus::kAccepted) {
    answer.refusal =
        fmt::format("refused the hello of rank {} (to rank {}, stream {}, rail {}): {}", hello.src,
                    hello.dst, hello.stream, hello.rail, describe(status));
  }
  return answer;
}

}  // namespace grove::transport::tcp

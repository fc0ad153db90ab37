// Connection opening of the TCP transport (see handshake.hpp).
#include "transport/tcp/handshake.hpp"

#include <fmt/format.h>

#include <algorithm>

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
  return HelloStatus::kAccepted;
}

Socket openConnection(std::string_view address, const Hello& hello, std::string_view secret,
                      Deadline deadline, const std::atomic<bool>* cancel,
                      const std::function<void(int)>& onSocket) {
  Socket socket = dial(address, deadline, cancel);
  onSocket(socket.fd());
  std::string role = fmt::format("tcp transport rank {}", hello.src);
  bootstrap::authenticate(socket.fd(), secret, /*isServer=*/false, role, deadline);
  unsigned char bytes[Hello::kBytes];
  hello.encode(bytes);
  std::string what = fmt::format("hello to rank {} at {}", hello.dst, address);
  sendAll(socket.fd(), bytes, sizeof bytes, deadline, what, cancel);
  unsigned char answer[HelloAck::kBytes];
  receiveAll(socket.fd(), answer, sizeof answer, deadline, what, cancel);
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

Hello acceptConnection(int fd, const HelloPolicy& policy, std::string_view secret,
                       Deadline deadline, const std::atomic<bool>* cancel) {
  std::string role = fmt::format("tcp transport rank {}", policy.rank);
  bootstrap::authenticate(fd, secret, /*isServer=*/true, role, deadline);
  unsigned char bytes[Hello::kBytes];
  receiveAll(fd, bytes, sizeof bytes, deadline, "reading the hello", cancel);
  Hello hello = Hello::decode(bytes);
  if (hello.magic != kHelloMagic) {
    throw Error(ErrorCode::kInvalidUsage, "the hello does not start with the grove magic");
  }
  HelloStatus status = checkHello(hello, policy);
  HelloAck ack;
  ack.status = static_cast<uint32_t>(status);
  unsigned char answer[HelloAck::kBytes];
  ack.encode(answer);
  sendAll(fd, answer, sizeof answer, deadline, "answering the hello", cancel);
  if (status != HelloStatus::kAccepted) {
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("refused the hello of rank {} (to rank {}, stream {}): {}", hello.src,
                            hello.dst, hello.stream, describe(status)));
  }
  return hello;
}

}  // namespace grove::transport::tcp

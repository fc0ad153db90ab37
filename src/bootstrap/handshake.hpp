// The authentication handshake of auth.hpp as a non-blocking state machine.
//
// Why a state machine: the store server serves every client from one thread, so it cannot
// block on one slow (or hostile) peer while it proves itself; it feeds bytes in as they
// arrive. authenticate() drives the very same machine with blocking reads, so there is one
// implementation of the protocol. The machine never reads past the handshake: it asks for
// exactly the bytes it needs next, so a request pipelined right behind the handshake stays
// in the caller's buffer.
//
// Wire (both sides): hello = "GRVAUTH" + version byte (1) + 32-byte random nonce.
// Then the client sends HMAC(secret, serverNonce || "grove-client") (32 bytes); the server
// checks it and answers one verdict byte: 0 = refused (it closes), 1 = accepted, followed by
// HMAC(secret, clientNonce || "grove-server") which the client checks. The server answers
// only a client that proved itself, so it is never an oracle for strangers; the role tags
// keep one side's answer from being replayed as the other's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove::bootstrap {

inline constexpr char kHandshakeMagic[8] = {'G', 'R', 'V', 'A', 'U', 'T', 'H', 1};
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kHelloBytes = sizeof(kHandshakeMagic) + kNonceBytes;

class Handshake {
 public:
  /// `peer` names the other side in messages (an address, "rank 3").
  Handshake(std::string_view secret, bool isServer, std::string_view role, std::string_view peer);

  /// Bytes to send to the peer now; the caller sends and erases them (order matters).
  std::string& output() { return output_; }
  /// How many more bytes the machine needs before it can move on (0 when finished).
  size_t wanted() const;
  /// Consumes `size` <= wanted() received bytes. Throws grove::Error(kInvalidUsage) when the
  /// peer is refused or refuses us; a server then still holds its refusal in output(), which
  /// the caller should send best-effort before closing.
  void feed(const char* data, size_t size);
  /// True once both sides are proven (output() may still hold the last bytes to send).
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kPeerHello, kVerdict, kPeerAnswer, kDone, kFailed };

  void onPeerHello();
  void onVerdict();
  void onPeerAnswer();
  [[noreturn]] void refuse(std::string_view why);

  std::string secret_;
  bool isServer_;
  std::string role_;
  std::string peer_;
  std::string nonce_;
  std::string peerNonce_;
  std::string input_;
  std::string output_;
  State state_ = State::kPeerHello;
};

}  // namespace grove::bootstrap

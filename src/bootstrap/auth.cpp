// HMAC-SHA256 (OpenSSL libcrypto) and the challenge-response handshake of auth.hpp, written
// once as the Handshake state machine (handshake.hpp) and driven here with blocking reads.
#include "bootstrap/auth.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "bootstrap/handshake.hpp"
#include "bootstrap/random.hpp"
#include "common/socket.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {
namespace {

constexpr std::string_view kClientTag = "grove-client";
constexpr std::string_view kServerTag = "grove-server";

}  // namespace

std::string hmacSha256(std::string_view key, std::string_view message) {
  static const unsigned char kEmpty = 0;  // OpenSSL wants a non-null key even when empty.
  if (key.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw Error(ErrorCode::kInvalidArgument, "hmacSha256: the key is too long");
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const void* keyData = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  if (HMAC(EVP_sha256(), keyData, static_cast<int>(key.size()), message.empty() ? &kEmpty : data,
           message.size(), digest, &length) == nullptr ||
      length != kMacBytes) {
    throw Error(ErrorCode::kSystemError, "hmacSha256: OpenSSL HMAC failed");
  }
  return std::string(reinterpret_cast<const char*>(digest), length);
}

Handshake::Handshake(std::string_view secret, bool isServer, std::string_view role,
                     std::string_view peer)
    : secret_(secret),
      isServer_(isServer),
      role_(role),
      peer_(peer),
      nonce_(randomBytes(kNonceBytes)) {
  output_.append(kHandshakeMagic, sizeof(kHandshakeMagic));
  output_ += nonce_;
}

size_t Handshake::wanted() const {
  switch (state_) {
    case State::kPeerHello:
      return kHelloBytes - input_.size();
    case State::kVerdict:
      return 1 - input_.size();
    case State::kPeerAnswer:
      return kMacBytes - input_.size();
    case State::kDone:
    case State::kFailed:
      break;
  }
  return 0;
}

void Handshake::feed(const char* data, size_t size) {
  if (size > wanted()) {
    throw Error(ErrorCode::kInternalError,
                fmt::format("{}: handshake fed {} bytes, wanted {}", role_, size, wanted()));
  }
  input_.append(data, size);
  if (wanted() != 0) return;
  switch (state_) {
    case State::kPeerHello:
      onPeerHello();
      break;
    case State::kVerdict:
      onVerdict();
      break;
    case State::kPeerAnswer:
      onPeerAnswer();
      break;
    case State::kDone:
    case State::kFailed:
      break;
  }
  input_.clear();
}

void Handshake::onPeerHello() {
  if (std::memcmp(input_.data(), kHandshakeMagic, sizeof(kHandshakeMagic)) != 0) {
    state_ = State::kFailed;
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("{}: authentication with {} failed: the peer is not a grove process "
                            "speaking handshake version {} (unexpected first bytes)",
                            role_, peer_, static_cast<int>(kHandshakeMagic[7])));
  }
  peerNonce_ = input_.substr(sizeof(kHandshakeMagic));
  if (isServer_) {
    state_ = State::kPeerAnswer;
  } else {
    output_ += hmacSha256(secret_, peerNonce_ + std::string(kClientTag));
    state_ = State::kVerdict;
  }
}

void Handshake::onVerdict() {
  if (input_[0] != 1) {
    state_ = State::kFailed;
    throw Error(ErrorCode::kInvalidUsage,
                fmt::format("{}: authentication with {} refused by the peer: the peer does not "
                            "know the job secret (GROVE_SECRET); every process of the job must "
                            "use the same secret",
                            role_, peer_));
  }
  state_ = State::kPeerAnswer;
}

void Handshake::onPeerAnswer() {
  std::string_view tag = isServer_ ? kClientTag : kServerTag;
  std::string expected = hmacSha256(secret_, nonce_ + std::string(tag));
  if (CRYPTO_memcmp(expected.data(), input_.data(), kMacBytes) != 0) {
    if (isServer_) output_ += '\0';
    refuse("the peer does not know the job secret (GROVE_SECRET)");
  }
  if (isServer_) {
    output_ += '\1';
    output_ += hmacSha256(secret_, peerNonce_ + std::string(kServerTag));
  }
  state_ = State::kDone;
}

void Handshake::refuse(std::string_view why) {
  state_ = State::kFailed;
  throw Error(ErrorCode::kInvalidUsage,
              fmt::format("{}: authentication with {} refused: {}; every process of the job "
                          "must use the same secret",
                          role_, peer_, why));
}

void authenticate(int fd, std::string_view secret, bool isServer, std::string_view role,
                  std::chrono::steady_clock::time_point deadline) {
  Handshake handshake(secret, isServer, role, net::peerAddress(fd));
  std::string what = fmt::format("{}: authentication handshake", role);
  char buffer[kHelloBytes];
  try {
    while (true) {
      if (!handshake.output().empty()) {
        net::writeExact(fd, handshake.output().data(), handshake.output().size(), deadline, what);
        handshake.output().clear();
      }
      if (handshake.done()) return;
      size_t wanted = handshake.wanted();
      net::readExact(fd, buffer, wanted, deadline, what);
      handshake.feed(buffer, wanted);
    }
  } catch (const Error& error) {
    if (!handshake.output().empty()) {  // The refusal: tell the peer before giving up.
      (void)::send(fd, handshake.output().data(), handshake.output().size(),
                   MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    throw;
  }
}

}  // namespace grove::bootstrap

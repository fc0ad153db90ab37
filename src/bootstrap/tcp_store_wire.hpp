// The TCP store's framing, shared by client and server (docs/bootstrap.md, "Wire format").
//
// Request:  opcode u8 | key length u32 | key | value length u64 | value
// Response: status u8 | payload length u64 | payload
// Integers are little-endian. set carries the value; get and check carry none; add carries
// the delta as an 8-byte signed integer. Responses: set → empty; get → the value; add → the
// new value (8 bytes); check → one byte 0/1; status 1 (error) → a message. onClose carries a
// value of at most kMaxOnCloseValueBytes (empty: cancel) that the server sets under the key,
// unless it is set, when the connection closes without cancelling it (a "last will"); it
// answers empty. erase
// carries no value, removes the key (absent: nothing happens) and answers empty.
// decodeRequest is the one place the server parses requests, kept pure so it can be fuzzed.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grove::bootstrap::wire {

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kOnClose = 5, kErase = 6 };
inline constexpr uint8_t kLastOp = kErase;

/// Longest value an onClose request may leave behind, and how many a connection may hold:
/// what a client can make the server keep per connection stays small.
inline constexpr size_t kMaxOnCloseValueBytes = 4096;
inline constexpr size_t kMaxOnClosePerConnection = 8;
enum Status : uint8_t { kOk = 0, kError = 1 };

inline constexpr size_t kResponseHeaderBytes = 9;
/// Longest error message a server sends (a client refuses longer payloads on error).
inline constexpr size_t kMaxErrorBytes = 4096;

inline void putU32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

inline void putU64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

inline uint32_t getU32(const char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return value;
}

inline uint64_t getU64(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return value;
}

/// Bytes before the key: opcode u8 and key length u32.
inline constexpr size_t kRequestPrefixBytes = 5;

/// The outcome of decodeRequest on the bytes received so far.
struct DecodedRequest {
  enum class Outcome {
    kIncomplete,  ///< Valid so far; more bytes are needed.
    kComplete,    ///< One whole, valid request (key and value point into the input).
    kMalformed,   ///< The connection must be closed; `error` says why.
  };
  Outcome outcome = Outcome::kIncomplete;
  /// kComplete: bytes the request occupies. kIncomplete: the whole request's size once its
  /// lengths are known and checked (the caller may reserve that much), else 0.
  size_t frameBytes = 0;
  uint8_t op = 0;
  std::string_view key;
  std::string_view value;
  std::string error;
};

/// Decodes the request at the start of `in` (a pure function; the fuzzer calls it on
/// arbitrary bytes). Every field is checked as soon as it is read, before the caller may
/// allocate for it: the opcode, the key length against `maxKeyBytes`, the value length
/// against `maxValueBytes`, and the value length each opcode requires (get and check: 0,
/// add: 8, onClose: at most kMaxOnCloseValueBytes, erase: 0).
inline DecodedRequest decodeRequest(std::string_view in, size_t maxKeyBytes, size_t maxValueBytes) {
  DecodedRequest result;
  auto malformed = [&result](std::string why) {
    result.outcome = DecodedRequest::Outcome::kMalformed;
    result.error = std::move(why);
    return result;
  };
  if (in.empty()) return result;
  const auto op = static_cast<uint8_t>(in[0]);
  if (op < kSet || op > kLastOp) {
    return malformed(fmt::format("unknown opcode {:#04x} (expected 1 to {})", op, kLastOp));
  }
  result.op = op;
  if (in.size() < kRequestPrefixBytes) return result;
  const uint64_t keyBytes = getU32(in.data() + 1);
  if (keyBytes > maxKeyBytes) {
    return malformed(
        fmt::format("key length {} exceeds the limit of {} bytes", keyBytes, maxKeyBytes));
  }
  const size_t valueAt = kRequestPrefixBytes + keyBytes + 8;
  if (in.size() < valueAt) return result;
  const uint64_t valueBytes = getU64(in.data() + kRequestPrefixBytes + keyBytes);
  if (valueBytes > maxValueBytes) {
    return malformed(
        fmt::format("value length {} exceeds the limit of {} bytes", valueBytes, maxValueBytes));
  }
  if ((op == kGet || op == kCheck || op == kErase) && valueBytes != 0) {
    return malformed(fmt::format("a {} request carries a value of {} bytes (expected none)",
                                 op == kGet     ? "get"
                                 : op == kCheck ? "check"
                                                : "erase",
                                 valueBytes));
  }
  if (op == kAdd && valueBytes != 8) {
    return malformed(fmt::format("an add request's value is {} bytes (expected 8)", valueBytes));
  }
  if (op == kOnClose && valueBytes > kMaxOnCloseValueBytes) {
    return malformed(fmt::format("an onClose request's value is {} bytes (expected at most {})",
                                 valueBytes, kMaxOnCloseValueBytes));
  }
  result.frameBytes = valueAt + valueBytes;
  if (in.size() < result.frameBytes) return result;
  result.outcome = DecodedRequest::Outcome::kComplete;
  result.key = in.substr(kRequestPrefixBytes, keyBytes);
  result.value = in.substr(valueAt, valueBytes);
  return result;
}

}  // namespace grove::bootstrap::wire

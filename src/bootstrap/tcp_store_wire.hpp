// The TCP store's framing, shared by client and server (docs/bootstrap.md, "Wire format").
//
// Request:  opcode u8 | key length u32 | key | value length u64 | value
// Response: status u8 | payload length u64 | payload
// Integers are little-endian. set carries the value; get and check carry none; add carries
// the delta as an 8-byte signed integer. Responses: set → empty; get → the value; add → the
// new value (8 bytes); check → one byte 0/1; status 1 (error) → a message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace grove::bootstrap::wire {

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4 };
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

}  // namespace grove::bootstrap::wire

// grove's lossless tensor codec: compresses one buffer of `count` elements of a DataType,
// block by block, so that links slower than the codec carry fewer bytes (docs/compression.md).
//
// float32, bfloat16 and float16 values are split into byte planes (planes.hpp: the exponent
// byte apart from the sign and mantissa bytes); each plane of each block is then stored raw,
// as one repeated byte, or Huffman-coded (huffman.hpp), whichever is smallest and pays. Every
// other type passes through raw. Each block decodes on its own, so a receiver can decode a
// stream as its blocks arrive, and a block that does not shrink is stored raw behind a
// one-byte flag: incompressible data grows by one byte per block plus the frame header.
//
// The frame (all integers little-endian):
//
//   offset  size  field
//   0       4     magic "GRVZ"
//   4       1     version (kVersion)
//   5       1     DataType (its C ABI value)
//   6       2     reserved, 0
//   8       8     element count
//   16      4     elements per block (>= 1; blockElements() of the encoder's block size)
//   20            the blocks, in order; block b holds elements [b·B, min(count, (b+1)·B))
//
// A block of n elements (raw size n·s bytes) is
//
//   u8 0                        raw: the n·s bytes of the block follow as they are
//   u8 1, u32 payload, payload  planes (types with planes only): payload + 4 < n·s, and
//                               the payload is planeCount(type) planes, each
//                                 u8 0, n bytes         stored raw
//                                 u8 1, u8 value        all n bytes equal value
//                                 u8 2, coded plane     Huffman (huffman.hpp)
//
// Encoding and decoding allocate nothing once the Workspace has grown to the block size:
// output goes to the caller's buffer (maxEncodedBytes bounds the frame), scratch to the
// workspace. decode() checks every length against the buffer and against the element count
// the caller expects, and fails with a message on corrupt, truncated or hostile input; it
// never reads or writes outside the buffers it was given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "codec/huffman.hpp"
#include "codec/planes.hpp"
#include "common/status.hpp"
#include "grove/types.hpp"

namespace grove::codec {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 20;
/// 64 KiB of input per block: large enough for the per-block code table to cost < 0.1 %,
/// small enough that a block's planes stay in L2 between split and coding.
inline constexpr size_t kDefaultBlockBytes = 64 * 1024;
/// The largest block a frame may declare (bounds the workspace a hostile frame can demand).
inline constexpr size_t kMaxBlockBytes = 16 * 1024 * 1024;

/// Elements per block for blocks of `blockBytes` bytes of `type`: at least 1.
size_t blockElements(DataType type, size_t blockBytes);

/// The most bytes encode() writes for `count` elements of `type` in blocks of `blockBytes`
/// (the frame header, one flag per block, the raw data and 8 bytes of slack for whole-word
/// stores); SIZE_MAX when that does not fit in size_t.
size_t maxEncodedBytes(size_t count, DataType type, size_t blockBytes = kDefaultBlockBytes);

/// Scratch memory of encode() and decode(), reused from call to call: about 280 KiB of
/// coder tables, allocated by the constructor, and the planes of one block, which grow to
/// the largest block seen and never shrink. Not shared between threads.
class Workspace {
 public:
  Workspace();
  /// Allocates now for blocks of up to `blockBytes`, so that no call allocates later.
  explicit Workspace(size_t blockBytes);
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;

  /// Grows the scratch to hold a block of `blockBytes` bytes.
  void reserve(size_t blockBytes);

 private:
  friend struct WorkspaceAccess;
  std::vector<uint8_t> planes_;
  std::unique_ptr<huffman::Counts[]> counts_;  // one per plane
  std::unique_ptr<huffman::DecodeTable> table_;
  std::unique_ptr<huffman::PairTable> pairs_;
};

/// Encodes `count` elements of `type` from `input` as one frame into `output`, which has
/// `capacity` >= maxEncodedBytes(count, type, blockBytes) bytes; returns the frame's size.
/// Fails (kInvalidArgument) on an invalid type, a block size outside 1..kMaxBlockBytes, a
/// too-small capacity or a null buffer with count > 0.
Expected<size_t> encode(const void* input, size_t count, DataType type, void* output,
                        size_t capacity, Workspace& workspace,
                        size_t blockBytes = kDefaultBlockBytes);

/// What a frame header declares.
struct FrameHeader {
  DataType type;
  uint64_t count;
  uint64_t blockElements;
  /// Number of blocks: ⌈count / blockElements⌉.
  uint64_t blocks() const {
    return count == 0 || blockElements == 0 ? 0 : (count - 1) / blockElements + 1;
  }
};

/// Parses and checks the header at the start of the `size` bytes at `frame`.
Expected<FrameHeader> readHeader(const void* frame, size_t size);

/// Decodes block `index` of a frame whose header is `header` from the `available` bytes at
/// `block` (where that block starts) into its place in `output` (the whole decoded buffer:
/// header.count elements). Returns the bytes the block took. For decoding a stream block by
/// block as it arrives; decode() is this over every block.
Expected<size_t> decodeBlock(const FrameHeader& header, uint64_t index, const void* block,
                             size_t available, void* output, Workspace& workspace);

/// Decodes the frame of `size` bytes at `frame` into `output`, which holds `count` elements
/// of `type`: the frame must declare exactly that type and count and end exactly at `size`.
/// Fails with kInvalidArgument and a message saying what is wrong otherwise.
Status decode(const void* frame, size_t size, void* output, size_t count, DataType type,
              Workspace& workspace);

}  // namespace grove::codec

// The frame and block logic of codec.hpp: what each block and plane is stored as, and the
// checked parsing of frames from untrusted bytes.
//
// Encoding a block: split it into planes, count each plane's bytes, and pick each plane's
// cheapest form; every size is known from the counts before a byte is written, so a block
// that would not shrink is copied raw without ever being coded. The mantissa planes of
// trained tensors are close to random, so they are first judged by the entropy of a sample
// (every 16th byte, at most 2048 of them) and only counted in full when the sample says
// coding could pay.
#include "codec/codec.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>

namespace grove::codec {

static_assert(std::endian::native == std::endian::little,
              "the frame format and the plane layouts assume a little-endian host");

struct WorkspaceAccess {
  static uint8_t* planes(Workspace& w) { return w.planes_.data(); }
  static huffman::Counts& counts(Workspace& w, int plane) { return w.counts_[plane]; }
  static huffman::DecodeTable& table(Workspace& w) { return *w.table_; }
  static huffman::PairTable& pairs(Workspace& w) { return *w.pairs_; }
};

namespace {

constexpr uint8_t kMagic[4] = {'G', 'R', 'V', 'Z'};
constexpr uint8_t kBlockRaw = 0;
constexpr uint8_t kBlockPlanes = 1;
constexpr uint8_t kPlaneRaw = 0;
constexpr uint8_t kPlaneConstant = 1;
constexpr uint8_t kPlaneHuffman = 2;

/// A plane is coded only when that saves at least 1/kMinGain of it: decoding a coded plane
/// costs far more than copying a raw one, so a plane that barely shrinks is not worth it.
constexpr size_t kMinGain = 64;

Status fail(const std::string& what) {
  return Status::failure(ErrorCode::kInvalidArgument, "codec: " + what);
}

void store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The names of grove::toString, which lives in core, above this layer.
std::string typeName(DataType type) {
  static constexpr const char* kNames[kDataTypeCount] = {"int8",    "uint8",   "int32",   "uint32",
                                                         "int64",   "uint64",  "float16", "float32",
                                                         "float64", "bfloat16"};
  return isValid(type) ? kNames[static_cast<int>(type)]
                       : "type " + std::to_string(static_cast<int>(type));
}

/// How one plane of a block will be stored, and its size with the mode byte.
struct PlaneChoice {
  uint8_t mode = kPlaneRaw;
  uint8_t value = 0;  // kPlaneConstant
  uint8_t lengths[256];
  size_t bytes = 0;
};

/// Bits per byte a Huffman code of a plane would need, estimated from the counts of a
/// sample of `total` of its bytes: the sample's entropy, plus the Miller–Madow correction
/// (occupied symbols - 1) / (2 total ln 2) for the entropy a small sample does not show (a
/// random plane's 2048-byte sample looks 0.18 bits short of 8). Table lookups only: at most
/// kMaxSample entries of c·log2(c), computed once.
constexpr size_t kMaxSample = 2048;
/// Planes shorter than this are counted outright: sampling saves nothing there. From it up the
/// sample is min(n, kMaxSample) evenly spaced bytes; fewer (every 16th byte, as before) made a
/// random plane of a 16 KiB message look compressible, and it was counted and coded in vain.
constexpr size_t kMinSampledPlane = 1024;

double estimatedBitsPerByte(const std::array<uint32_t, 256>& counts, uint32_t total) {
  static const std::vector<double> cLog2c = [] {
    std::vector<double> t(kMaxSample + 1, 0.0);
    for (size_t c = 1; c <= kMaxSample; ++c) t[c] = static_cast<double>(c) * std::log2(c);
    return t;
  }();
  double sum = 0;
  int occupied = 0;
  for (uint32_t c : counts) {
    sum += cLog2c[c];
    occupied += c != 0;
  }
  const double n = total;
  return std::log2(n) - sum / n + (occupied - 1) / (2 * n * std::numbers::ln2);
}

void choosePlane(const uint8_t* plane, size_t n, bool sampleFirst, huffman::Counts& counts,
                 PlaneChoice& choice) {
  choice.mode = kPlaneRaw;
  choice.bytes = 1 + n;
  const size_t worthIt = n - n / kMinGain;
  if (sampleFirst && n >= kMinSampledPlane) {
    const size_t stride = (n + kMaxSample - 1) / kMaxSample;
    const auto sample = huffman::sampleSymbols(plane, n, stride);
    const auto total = static_cast<uint32_t>((n + stride - 1) / stride);
    if (estimatedBitsPerByte(sample, total) * static_cast<double>(n) / 8 >= worthIt) {
      return;  // the sample says coding cannot pay
    }
  }
  huffman::countSymbols(plane, n, counts);
  const int present = huffman::buildLengths(counts.total(), choice.lengths);
  if (present == 1) {
    choice.mode = kPlaneConstant;
    choice.value = plane[0];
    choice.bytes = 2;
    return;
  }
  const size_t coded = huffman::codedBytes(counts, choice.lengths);
  if (coded < worthIt) {
    choice.mode = kPlaneHuffman;
    choice.bytes = 1 + coded;
  }
}

/// Writes block [first, first + n) at `out`; returns its size. `out` has room for the raw
/// form (1 + n·s bytes) plus huffman::kWriteSlack.
size_t encodeBlock(const uint8_t* in, size_t n, DataType type, uint8_t* out, Workspace& ws) {
  const size_t size = dataTypeSize(type);
  const size_t raw = n * size;
  const int planes = planeCount(type);
  if (planes > 0) {
    uint8_t* scratch = WorkspaceAccess::planes(ws);
    uint8_t* plane[kMaxPlanes];
    for (int p = 0; p < planes; ++p) plane[p] = scratch + static_cast<size_t>(p) * n;
    splitPlanes(type, in, n, plane);
    PlaneChoice choice[kMaxPlanes];
    size_t payload = 0;
    for (int p = 0; p < planes; ++p) {
      choosePlane(plane[p], n, p > 0, WorkspaceAccess::counts(ws, p), choice[p]);
      payload += choice[p].bytes;
    }
    if (payload + 4 < raw) {
      out[0] = kBlockPlanes;
      store32(out + 1, static_cast<uint32_t>(payload));
      uint8_t* q = out + 5;
      for (int p = 0; p < planes; ++p) {
        *q++ = choice[p].mode;
        if (choice[p].mode == kPlaneRaw) {
          std::memcpy(q, plane[p], n);
          q += n;
        } else if (choice[p].mode == kPlaneConstant) {
          *q++ = choice[p].value;
        } else {
          q += huffman::encodePlane(plane[p], n, WorkspaceAccess::counts(ws, p), choice[p].lengths,
                                    WorkspaceAccess::pairs(ws), q);
        }
      }
      return static_cast<size_t>(q - out);
    }
  }
  out[0] = kBlockRaw;
  std::memcpy(out + 1, in, raw);
  return 1 + raw;
}

}  // namespace

Workspace::Workspace()
    : counts_(new huffman::Counts[kMaxPlanes]),
      table_(new huffman::DecodeTable),
      pairs_(new huffman::PairTable) {}

Workspace::Workspace(size_t blockBytes) : Workspace() { reserve(blockBytes); }

Workspace::~Workspace() = default;
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;

void Workspace::reserve(size_t blockBytes) {
  if (planes_.size() < blockBytes) planes_.resize(blockBytes);
}

size_t blockElements(DataType type, size_t blockBytes) {
  const size_t size = isValid(type) ? dataTypeSize(type) : 1;
  return std::max<size_t>(1, blockBytes / size);
}

size_t maxEncodedBytes(size_t count, DataType type, size_t blockBytes) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  const size_t size = isValid(type) ? dataTypeSize(type) : 1;
  if (count > (kMax - 64) / (size + 1)) return kMax;
  const size_t elements = blockElements(type, blockBytes);
  const size_t blocks = count == 0 ? 0 : (count - 1) / elements + 1;
  return kFrameHeaderBytes + blocks + count * size + huffman::kWriteSlack;
}

Expected<size_t> encode(const void* input, size_t count, DataType type, void* output,
                        size_t capacity, Workspace& workspace, size_t blockBytes) {
  if (!isValid(type)) return fail("cannot encode " + typeName(type) + ": not a valid DataType");
  if (blockBytes == 0 || blockBytes > kMaxBlockBytes) {
    return fail("block size " + std::to_string(blockBytes) + " B is outside 1.." +
                std::to_string(kMaxBlockBytes));
  }
  if ((input == nullptr && count > 0) || output == nullptr) {
    return fail("encode got a null buffer");
  }
  const size_t need = maxEncodedBytes(count, type, blockBytes);
  if (capacity < need) {
    return fail("output of " + std::to_string(capacity) +
                " bytes is below maxEncodedBytes = " + std::to_string(need));
  }
  const size_t size = dataTypeSize(type);
  const size_t elements = blockElements(type, blockBytes);
  workspace.reserve(std::min(elements, std::max<size_t>(count, 1)) * size);

  auto* out = static_cast<uint8_t*>(output);
  std::memcpy(out, kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(type);
  out[6] = out[7] = 0;
  store64(out + 8, count);
  store32(out + 16, static_cast<uint32_t>(elements));
  size_t pos = kFrameHeaderBytes;
  const auto* in = static_cast<const uint8_t*>(input);
  for (size_t first = 0; first < count; first += elements) {
    const size_t n = std::min(elements, count - first);
    pos += encodeBlock(in + first * size, n, type, out + pos, workspace);
  }
  return pos;
}

Expected<FrameHeader> readHeader(const void* frame, size_t size) {
  const auto* in = static_cast<const uint8_t*>(frame);
  if (size < kFrameHeaderBytes) {
    return fail("frame of " + std::to_string(size) + " bytes is shorter than its " +
                std::to_string(kFrameHeaderBytes) + "-byte header");
  }
  if (std::memcmp(in, kMagic, 4) != 0) return fail("frame does not start with magic GRVZ");
  if (in[4] != kVersion) {
    return fail("frame version " + std::to_string(in[4]) + " is not " + std::to_string(kVersion));
  }
  const auto type = static_cast<DataType>(in[5]);
  if (!isValid(type)) return fail("frame declares unknown " + typeName(type));
  if (in[6] != 0 || in[7] != 0) return fail("frame's reserved bytes are not zero");
  FrameHeader header{type, load64(in + 8), load32(in + 16)};
  if (header.blockElements == 0 || header.blockElements * dataTypeSize(type) > kMaxBlockBytes) {
    return fail("frame declares " + std::to_string(header.blockElements) +
                " elements per block; expected 1.." +
                std::to_string(kMaxBlockBytes / dataTypeSize(type)));
  }
  return header;
}

Expected<size_t> decodeBlock(const FrameHeader& header, uint64_t index, const void* block,
                             size_t available, void* output, Workspace& workspace) {
  if (!isValid(header.type) || header.blockElements == 0 ||
      header.blockElements > kMaxBlockBytes / dataTypeSize(header.type)) {
    return fail("decodeBlock got a header readHeader would not return");
  }
  if (index >= header.blocks()) {
    return fail("block " + std::to_string(index) + " of a frame with " +
                std::to_string(header.blocks()) + " blocks");
  }
  const size_t size = dataTypeSize(header.type);
  const uint64_t first = index * header.blockElements;
  const size_t n = static_cast<size_t>(std::min(header.blockElements, header.count - first));
  const size_t raw = n * size;
  auto* out = static_cast<uint8_t*>(output) + first * size;
  const auto* in = static_cast<const uint8_t*>(block);
  const std::string where = "block " + std::to_string(index);
  if (available < 1) return fail(where + " is missing");
  if (in[0] == kBlockRaw) {
    if (available - 1 < raw) {
      return fail(where + " (raw) needs " + std::to_string(raw) + " bytes, " +
                  std::to_string(available - 1) + " left");
    }
    std::memcpy(out, in + 1, raw);
    return 1 + raw;
  }
  if (in[0] != kBlockPlanes) {
    return fail(where + " has unknown flags " + std::to_string(in[0]));
  }
  const int planes = planeCount(header.type);
  if (planes == 0)
    return fail(where + " is coded, but " + typeName(header.type) + " has no planes");
  if (available < 5) return fail(where + " is truncated in its length");
  const size_t payload = load32(in + 1);
  if (payload + 4 >= raw) {
    return fail(where + " declares a payload of " + std::to_string(payload) + " bytes for " +
                std::to_string(raw) + " raw bytes (coded blocks are smaller)");
  }
  if (payload > available - 5) {
    return fail(where + " declares a payload of " + std::to_string(payload) + " bytes, " +
                std::to_string(available - 5) + " left");
  }

  workspace.reserve(raw);
  uint8_t* scratch = WorkspaceAccess::planes(workspace);
  const uint8_t* plane[kMaxPlanes];
  const uint8_t* p = in + 5;
  const uint8_t* const end = p + payload;
  for (int k = 0; k < planes; ++k) {
    const std::string what = where + " plane " + std::to_string(k);
    if (p == end) return fail(what + " is missing");
    const uint8_t mode = *p++;
    const auto left = static_cast<size_t>(end - p);
    uint8_t* mine = scratch + static_cast<size_t>(k) * n;
    if (mode == kPlaneRaw) {
      if (left < n) {
        return fail(what + " (raw) needs " + std::to_string(n) + " bytes, " + std::to_string(left) +
                    " left");
      }
      plane[k] = p;
      p += n;
    } else if (mode == kPlaneConstant) {
      if (left < 1) return fail(what + " (constant) has no value");
      std::memset(mine, *p++, n);
      plane[k] = mine;
    } else if (mode == kPlaneHuffman) {
      auto used = huffman::decodePlane(p, left, mine, n, WorkspaceAccess::table(workspace));
      if (!used) return fail(what + ": " + used.message());
      plane[k] = mine;
      p += *used;
    } else {
      return fail(what + " has unknown mode " + std::to_string(mode));
    }
  }
  if (p != end) {
    return fail(where + " has " + std::to_string(end - p) + " bytes after its last plane");
  }
  mergePlanes(header.type, plane, n, out);
  return 5 + payload;
}

Status decode(const void* frame, size_t size, void* output, size_t count, DataType type,
              Workspace& workspace) {
  if (frame == nullptr && size > 0) return fail("decode got a null frame");
  auto header = readHeader(frame, size);
  if (!header) return header.status();
  if (header->type != type) {
    return fail("frame holds " + typeName(header->type) + ", expected " + typeName(type));
  }
  if (header->count != count) {
    return fail("frame holds " + std::to_string(header->count) + " elements, expected " +
                std::to_string(count));
  }
  if (output == nullptr && count > 0) return fail("decode got a null output");
  const auto* in = static_cast<const uint8_t*>(frame);
  size_t pos = kFrameHeaderBytes;
  const uint64_t blocks = header->blocks();
  for (uint64_t b = 0; b < blocks; ++b) {
    auto used = decodeBlock(*header, b, in + pos, size - pos, output, workspace);
    if (!used) return used.status();
    pos += *used;
  }
  if (pos != size) {
    return fail("frame has " + std::to_string(size - pos) + " bytes after its last block");
  }
  return {};
}

}  // namespace grove::codec

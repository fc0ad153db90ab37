// grove_codec_bench: the codec (src/codec) on raw tensor files, against zstd and lz4, for
// bench/compression, which dumps the tensors, runs this and prints the table.
//
//   grove_codec_bench [-r ROUNDS] [-b BLOCK_BYTES] [-m MESSAGE_BYTES]... [-g] NAME=FILE:DTYPE...
//
// For each tensor it prints one tab-separated line
//
//   codec  NAME DTYPE BYTES RATIO ENC_GBS DEC_GBS ZSTD1_RATIO LZ4_RATIO
//
// (ratio = raw bytes / coded bytes; GB/s = raw bytes / median CPU time of ROUNDS, one thread;
// zstd-1 and lz4 on the whole raw buffer), then, for the choice of the plane coder, one line
// per coder applied to the same byte planes of the same blocks:
//
//   coder  NAME DTYPE CODER RATIO ENC_GBS DEC_GBS
//
// where CODER is `huffman` (grove's codec itself), `zstd1`, `zstd-1`, `zstd-3`, `zstd-5`
// (libzstd at that level, one call per plane per block, a plane kept raw when it does not
// shrink) or `lz4` (LZ4_compress_default likewise). Every decode is checked bit for bit
// against the input; a mismatch exits 1. -g: grove's codec only (no coder lines).
//
// -m (repeatable) also measures the codec as the collectives use it: the tensor cut into
// messages of MESSAGE_BYTES (rounded down to whole elements), each encoded as a frame of its
// own, as a link encodes each FIFO tile (exec/link_codec.hpp). One line per size:
//
//   message NAME DTYPE MESSAGE_BYTES MESSAGES RATIO ENC_GBS DEC_GBS
//
// A message pays for its frame header and for choosing every plane's coding, so small
// messages show the codec's cost per message that the whole-tensor figures hide.
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.hpp"
#include "codec/planes.hpp"
#include "grove/types.hpp"

namespace {

using grove::DataType;
using Bytes = std::vector<uint8_t>;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "grove_codec_bench: %s\n", message.c_str());
  std::exit(1);
}

// The types with planes, and one without (the codec's pass-through), by their grove names.
std::optional<DataType> parseType(const std::string& name) {
  if (name == "float32") return DataType::kFloat32;
  if (name == "bfloat16") return DataType::kBFloat16;
  if (name == "float16") return DataType::kFloat16;
  if (name == "uint8") return DataType::kUint8;
  return std::nullopt;
}

Bytes readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) die("cannot open " + path);
  return Bytes(std::istreambuf_iterator<char>(file), {});
}

// CPU time of this thread, not wall time: the development host has 2 cores shared with
// builds and tests, and time spent waiting for a core says nothing about the codec. Bytes
// per CPU second is the GB/s of one core.
double threadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double seconds(const std::function<void()>& run) {
  const double start = threadSeconds();
  run();
  return threadSeconds() - start;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// A library coder applied to the codec's byte planes, block by block. Its frame (for
/// measuring only): per block, per plane, u32 stored size (0 = raw) and the bytes.
struct PlaneCoder {
  std::string name;
  bool lz4;
  int level;
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();

  size_t bound(size_t n) const {
    return lz4 ? static_cast<size_t>(LZ4_compressBound(static_cast<int>(n)))
               : ZSTD_compressBound(n);
  }

  size_t compress(const uint8_t* in, size_t n, uint8_t* out, size_t capacity) {
    if (lz4) {
      const int r =
          LZ4_compress_default(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                               static_cast<int>(n), static_cast<int>(capacity));
      return r > 0 ? static_cast<size_t>(r) : 0;
    }
    const size_t r = ZSTD_compressCCtx(cctx, out, capacity, in, n, level);
    return ZSTD_isError(r) ? 0 : r;
  }

  void decompress(const uint8_t* in, size_t size, uint8_t* out, size_t n) {
    if (lz4) {
      const int r =
          LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                              static_cast<int>(size), static_cast<int>(n));
      if (r != static_cast<int>(n)) die(name + ": lz4 decode failed");
      return;
    }
    const size_t r = ZSTD_decompressDCtx(dctx, out, n, in, size);
    if (ZSTD_isError(r) || r != n) die(name + ": zstd decode failed");
  }

  size_t encode(const uint8_t* in, size_t count, DataType type, size_t blockElements, Bytes& out,
                Bytes& planes) {
    const size_t size = grove::dataTypeSize(type);
    const int np = grove::codec::planeCount(type);
    size_t pos = 0;
    for (size_t first = 0; first < count; first += blockElements) {
      const size_t n = std::min(blockElements, count - first);
      uint8_t* plane[grove::codec::kMaxPlanes];
      for (int p = 0; p < np; ++p) plane[p] = planes.data() + static_cast<size_t>(p) * n;
      grove::codec::splitPlanes(type, in + first * size, n, plane);
      for (int p = 0; p < np; ++p) {
        uint8_t* header = out.data() + pos;
        pos += 4;
        size_t stored = compress(plane[p], n, out.data() + pos, out.size() - pos);
        if (stored == 0 || stored >= n) {
          std::memcpy(out.data() + pos, plane[p], n);
          std::memcpy(header, "\0\0\0\0", 4);
          pos += n;
        } else {
          const auto s = static_cast<uint32_t>(stored);
          std::memcpy(header, &s, 4);
          pos += stored;
        }
      }
    }
    return pos;
  }

  void decode(const uint8_t* in, size_t count, DataType type, size_t blockElements, uint8_t* out,
              Bytes& planes) {
    const size_t size = grove::dataTypeSize(type);
    const int np = grove::codec::planeCount(type);
    size_t pos = 0;
    for (size_t first = 0; first < count; first += blockElements) {
      const size_t n = std::min(blockElements, count - first);
      const uint8_t* plane[grove::codec::kMaxPlanes];
      for (int p = 0; p < np; ++p) {
        uint32_t stored;
        std::memcpy(&stored, in + pos, 4);
        pos += 4;
        if (stored == 0) {
          plane[p] = in + pos;
          pos += n;
        } else {
          uint8_t* mine = planes.data() + static_cast<size_t>(p) * n;
          decompress(in + pos, stored, mine, n);
          plane[p] = mine;
          pos += stored;
        }
      }
      grove::codec::mergePlanes(type, plane, n, out + first * size);
    }
  }
};

struct Result {
  double ratio, encode, decode;
};

/// The tensor as messages of `messageBytes`, each its own frame, one after another in one
/// buffer (every frame kept, so that the decode reads what the encode wrote). The whole
/// tensor's figures are one message of all its bytes.
Result measureMessages(const Bytes& data, DataType type, size_t blockBytes, size_t messageBytes,
                       int rounds, size_t* messages) {
  const size_t size = grove::dataTypeSize(type);
  const size_t count = data.size() / size;
  const size_t perMessage = std::max<size_t>(1, messageBytes / size);
  *messages = count == 0 ? 0 : (count - 1) / perMessage + 1;
  const size_t room = grove::codec::maxEncodedBytes(perMessage, type, blockBytes);
  Bytes frames(*messages * room);
  std::vector<size_t> coded(*messages);
  Bytes back(data.size());
  grove::codec::Workspace ws(blockBytes);
  std::vector<double> enc, dec;
  for (int r = 0; r < rounds; ++r) {
    enc.push_back(seconds([&] {
      for (size_t m = 0; m < *messages; ++m) {
        const size_t first = m * perMessage;
        coded[m] =
            grove::codec::encode(data.data() + first * size, std::min(perMessage, count - first),
                                 type, frames.data() + m * room, room, ws, blockBytes)
                .value();
      }
    }));
    dec.push_back(seconds([&] {
      for (size_t m = 0; m < *messages; ++m) {
        const size_t first = m * perMessage;
        grove::codec::decode(frames.data() + m * room, coded[m], back.data() + first * size,
                             std::min(perMessage, count - first), type, ws)
            .throwIfFailed();
      }
    }));
    if (back != data) die("grove: messages decoded differ from the input");
  }
  size_t total = 0;
  for (size_t c : coded) total += c;
  const double gb = static_cast<double>(data.size()) / 1e9;
  return {total == 0 ? 1.0 : static_cast<double>(data.size()) / static_cast<double>(total),
          gb / median(enc), gb / median(dec)};
}

Result measurePlanes(PlaneCoder& coder, const Bytes& data, DataType type, size_t blockBytes,
                     int rounds) {
  const size_t size = grove::dataTypeSize(type);
  const size_t count = data.size() / size;
  const size_t elements = grove::codec::blockElements(type, blockBytes);
  const size_t blocks = count == 0 ? 0 : (count - 1) / elements + 1;
  Bytes frame(blocks * 4 * (4 + coder.bound(elements)) + 64);
  Bytes planes(elements * size);
  Bytes back(data.size());
  size_t coded = 0;
  std::vector<double> enc, dec;
  for (int r = 0; r < rounds; ++r) {
    enc.push_back(
        seconds([&] { coded = coder.encode(data.data(), count, type, elements, frame, planes); }));
    dec.push_back(
        seconds([&] { coder.decode(frame.data(), count, type, elements, back.data(), planes); }));
    if (back != data) die(coder.name + ": decoded bytes differ from the input");
  }
  const double gb = static_cast<double>(data.size()) / 1e9;
  return {static_cast<double>(data.size()) / static_cast<double>(coded), gb / median(enc),
          gb / median(dec)};
}

double wholeZstd1(const Bytes& data) {
  Bytes out(ZSTD_compressBound(data.size()));
  const size_t r = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 1);
  if (ZSTD_isError(r)) die("zstd failed");
  return static_cast<double>(data.size()) / static_cast<double>(r);
}

double wholeLz4(const Bytes& data) {
  Bytes out(static_cast<size_t>(LZ4_compressBound(static_cast<int>(data.size()))));
  const int r = LZ4_compress_default(reinterpret_cast<const char*>(data.data()),
                                     reinterpret_cast<char*>(out.data()),
                                     static_cast<int>(data.size()), static_cast<int>(out.size()));
  if (r <= 0) die("lz4 failed");
  return static_cast<double>(data.size()) / r;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  bool groveOnly = false;
  size_t blockBytes = grove::codec::kDefaultBlockBytes;
  std::vector<size_t> messageSizes;
  std::vector<std::string> specs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-g") {
      groveOnly = true;
    } else if ((arg == "-r" || arg == "-b" || arg == "-m") && i + 1 < argc) {
      if (arg == "-r") {
        rounds = std::max(1, std::atoi(argv[++i]));
      } else if (arg == "-m") {
        messageSizes.push_back(std::strtoull(argv[++i], nullptr, 10));
        if (messageSizes.back() == 0) die("-m needs a message size of at least 1 byte");
      } else {
        blockBytes = std::strtoull(argv[++i], nullptr, 10);
      }
    } else {
      specs.push_back(arg);
    }
  }
  if (specs.empty())
    die("usage: grove_codec_bench [-r ROUNDS] [-b BLOCK_BYTES] [-m MESSAGE_BYTES]... [-g] "
        "NAME=FILE:DTYPE...");
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const size_t colon = spec.rfind(':');
    if (eq == std::string::npos || colon == std::string::npos || colon < eq) {
      die("expected NAME=FILE:DTYPE, got " + spec);
    }
    const std::string name = spec.substr(0, eq);
    const std::string path = spec.substr(eq + 1, colon - eq - 1);
    const auto type = parseType(spec.substr(colon + 1));
    if (!type) die("unknown type in " + spec);
    Bytes data = readFile(path);
    data.resize(data.size() / grove::dataTypeSize(*type) * grove::dataTypeSize(*type));
    const std::string dtype = spec.substr(colon + 1);

    size_t whole = 0;
    const Result grove =
        measureMessages(data, *type, blockBytes, std::max<size_t>(1, data.size()), rounds, &whole);
    std::printf("codec\t%s\t%s\t%zu\t%.4f\t%.3f\t%.3f\t%.4f\t%.4f\n", name.c_str(), dtype.c_str(),
                data.size(), grove.ratio, grove.encode, grove.decode, wholeZstd1(data),
                wholeLz4(data));
    std::printf("coder\t%s\t%s\thuffman\t%.4f\t%.3f\t%.3f\n", name.c_str(), dtype.c_str(),
                grove.ratio, grove.encode, grove.decode);
    for (size_t messageBytes : messageSizes) {
      size_t messages = 0;
      const Result r = measureMessages(data, *type, blockBytes, messageBytes, rounds, &messages);
      std::printf("message\t%s\t%s\t%zu\t%zu\t%.4f\t%.3f\t%.3f\n", name.c_str(), dtype.c_str(),
                  messageBytes, messages, r.ratio, r.encode, r.decode);
    }
    if (groveOnly || grove::codec::planeCount(*type) == 0) continue;
    std::vector<PlaneCoder> coders;
    for (int level : {1, -1, -3, -5}) {
      coders.push_back({"zstd" + std::to_string(level), false, level});
    }
    coders.push_back({"lz4", true, 0});
    for (PlaneCoder& coder : coders) {
      const Result r = measurePlanes(coder, data, *type, blockBytes, rounds);
      std::printf("coder\t%s\t%s\t%s\t%.4f\t%.3f\t%.3f\n", name.c_str(), dtype.c_str(),
                  coder.name.c_str(), r.ratio, r.encode, r.decode);
      ZSTD_freeCCtx(coder.cctx);
      ZSTD_freeDCtx(coder.dctx);
    }
    std::fflush(stdout);
  }
  return 0;
}

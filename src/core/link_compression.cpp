#include "core/link_compression.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "common/log.hpp"

namespace grove::detail {

std::unique_ptr<exec::LinkCodec> makeLinkCodec(const Config& config,
                                               const transport::Transport& transport) {
  const int rank = transport.rank();
  std::vector<int> network;
  for (int q = 0; q < transport.size(); ++q) {
    if (q != rank && transport.overNetwork(q)) network.push_back(q);
  }
  if (network.empty()) return nullptr;

  bool compress = config.compress == Config::Compress::kOn;
  std::string why = compress ? "GROVE_COMPRESS=on" : "GROVE_COMPRESS=off";
  if (config.compress == Config::Compress::kAuto) {
    if (config.nicSpeedMbps <= 0) {
      why =
          fmt::format("GROVE_COMPRESS=auto and the link's rate is unknown (no GROVE_NIC_SPEED; {})",
                      config.nicSpeedSource);
    } else {
      const double link = static_cast<double>(config.nicSpeedMbps) * 1e6 / 8;
      const double codec = exec::measuredCodecBytesPerSecond();
      compress = link < codec;
      why = fmt::format(
          "GROVE_COMPRESS=auto: this host's NIC ({} Mbit/s, {:.3f} GB/s, {}) is {} "
          "than the codec ({:.3f} GB/s, measured)",
          config.nicSpeedMbps, link / 1e9, config.nicSpeedSource,
          compress ? "slower" : "not slower", codec / 1e9);
    }
  }
  std::vector<uint8_t> compressTo(static_cast<size_t>(transport.size()), 0);
  if (compress) {
    for (int q : network) compressTo[static_cast<size_t>(q)] = 1;
  }
  log::info(rank, "compression: messages to ranks [{}] over the network {}: {}",
            fmt::join(network, ", "), compress ? "are compressed" : "are not compressed", why);
  return std::make_unique<exec::LinkCodec>(std::move(compressTo), config.slotBytes);
}

void logLinkCodecStats(int rank, const exec::LinkCodec& codec) {
  const exec::LinkCodecStats& s = codec.stats();
  if (s.messagesCompressed + s.messagesTriedRaw + s.messagesForwarded + s.messagesDecoded == 0) {
    return;
  }
  log::info(rank,
            "compression: {} messages sent compressed ({} -> {} bytes, ratio {:.3f}), {} tried "
            "and sent raw, {} passed on compressed, {} decoded",
            s.messagesCompressed, s.rawBytesCompressed, s.framesBytes,
            s.framesBytes == 0
                ? 0.0
                : static_cast<double>(s.rawBytesCompressed) / static_cast<double>(s.framesBytes),
            s.messagesTriedRaw, s.messagesForwarded, s.messagesDecoded);
}

}  // namespace grove::detail

#include "core/link_compression.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <utility>
#include <vector>

#include "algo/select_topology.hpp"
#include "common/log.hpp"
#include "grove/error.hpp"
#include "topo/topology.hpp"

namespace grove::detail {

namespace {

// What is known of the rate of the path to `peer`, in bytes/s (0: nothing), and where it
// comes from: the slowest network arc of the topology's route whose rate is known (a
// topology file's, or a host's NIC that GROVE_NIC_SPEED or sysfs gave), and this host's NIC.
struct PathRate {
  double bytesPerSecond = 0;
  std::string from;
};

PathRate pathRate(const Config& config, const topo::Topology* topology, int rank, int peer) {
  PathRate rate;
  if (config.nicSpeedMbps > 0) {
    rate.bytesPerSecond = static_cast<double>(config.nicSpeedMbps) * 1e6 / 8;
    rate.from = fmt::format("this host's NIC, {}", config.nicSpeedSource);
  }
  if (topology == nullptr) return rate;
  std::vector<int> route;
  try {
    route = topology->route(rank, peer);
  } catch (const Error&) {
    return rate;  // no route in the file: the transport reaches the peer anyway
  }
  for (int arc : route) {
    const topo::Arc& a = topology->arcs[static_cast<size_t>(arc)];
    if (a.kind != topo::LinkKind::kNet || a.rateAssumed) continue;
    const double bytes = a.capacityGBps * 1e9;
    if (rate.bytesPerSecond == 0 || bytes < rate.bytesPerSecond) {
      rate.bytesPerSecond = bytes;
      rate.from = fmt::format("the network link {} -> {} of topology {}",
                              topology->vertices[static_cast<size_t>(a.from)].name,
                              topology->vertices[static_cast<size_t>(a.to)].name, topology->name);
    }
  }
  return rate;
}

void addReason(CompressionChoice& choice, int q, std::string why) {
  for (auto& [reason, peers] : choice.reasons) {
    if (reason == why) {
      peers.push_back(q);
      return;
    }
  }
  choice.reasons.push_back({std::move(why), {q}});
}

}  // namespace

bool measuredSlow(const transport::SendRate& rate, double codecBytesPerSecond, bool compressing) {
  if (rate.median <= 0 || codecBytesPerSecond <= 0) return false;
  if (compressing) return rate.lowest < codecBytesPerSecond;
  return rate.median < kMeasuredRateShare * codecBytesPerSecond;
}

CompressionChoice chooseCompression(const Config& config, int rank, int size,
                                    const std::vector<int>& networkPeers,
                                    const topo::Topology* topology,
                                    const std::function<double()>& codecBytesPerSecond) {
  CompressionChoice choice;
  choice.compressTo.assign(static_cast<size_t>(size), 0);
  auto decide = [&](int q, bool compress, const std::string& why) {
    choice.compressTo[static_cast<size_t>(q)] = compress ? exec::kSendCompressed : exec::kSendRaw;
    addReason(choice, q,
              fmt::format("{}: {}", compress ? "are compressed" : "are not compressed", why));
  };
  double codec = 0;  // measured when first needed
  for (int q : networkPeers) {
    if (config.compress != Config::Compress::kAuto) {
      const bool on = config.compress == Config::Compress::kOn;
      decide(q, on, on ? "GROVE_COMPRESS=on" : "GROVE_COMPRESS=off");
      continue;
    }
    const PathRate rate = pathRate(config, topology, rank, q);
    if (rate.bytesPerSecond <= 0) {
      choice.compressTo[static_cast<size_t>(q)] = exec::kSendCompressedIfMeasuredSlow;
      addReason(choice, q,
                fmt::format("are raw until the transport measures the link: GROVE_COMPRESS=auto "
                            "and its rate is unknown (no GROVE_NIC_SPEED, no known rate in the "
                            "topology; {}); they are compressed while its sends drain at under "
                            "{:g} of the codec's rate",
                            config.nicSpeedSource, kMeasuredRateShare));
      continue;
    }
    if (codec == 0) codec = codecBytesPerSecond();
    const bool compress = rate.bytesPerSecond < codec;
    decide(q, compress,
           fmt::format("GROVE_COMPRESS=auto: the path's slowest link ({:.3f} GB/s, {}) is {} than "
                       "the codec ({:.3f} GB/s to encode a byte and decode one, measured)",
                       rate.bytesPerSecond / 1e9, rate.from, compress ? "slower" : "not slower",
                       codec / 1e9));
  }
  return choice;
}

std::unique_ptr<exec::LinkCodec> makeLinkCodec(const Config& config,
                                               const transport::Transport& transport,
                                               const topo::Topology* topology) {
  const int rank = transport.rank();
  std::vector<int> network;
  for (int q = 0; q < transport.size(); ++q) {
    if (q != rank && transport.overNetwork(q)) network.push_back(q);
  }
  if (network.empty()) return nullptr;
  CompressionChoice choice =
      chooseCompression(config, rank, transport.size(), network, topology,
                        [] { return exec::measuredCodecRates().roundTrip(); });
  for (const auto& [why, peers] : choice.reasons) {
    log::info(rank, "compression: messages to ranks [{}] over the network {}",
              fmt::join(peers, ", "), why);
  }
  // Asked per compressible message to a peer of kSendCompressedIfMeasuredSlow: an atomic
  // load while nothing was measured. The codec's rate is measured now, while the ranks still
  // meet (measured in the middle of a collective, with the other ranks and the network
  // threads busy on the same cores, it read 0.40-0.66 GB/s instead of 1.05 here). Logs each
  // peer's change of mind (GROVE_DEBUG=INFO).
  const bool measuring = std::find(choice.compressTo.begin(), choice.compressTo.end(),
                                   exec::kSendCompressedIfMeasuredSlow) != choice.compressTo.end();
  const double codec = measuring ? exec::measuredCodecRates().roundTrip() : 0;
  auto slow = [&transport, rank, codec,
               said = std::vector<int8_t>(static_cast<size_t>(transport.size()), -1)](
                  int peer) mutable {
    const transport::SendRate rate = transport.measuredSendRate(peer);
    if (rate.median <= 0) return false;
    int8_t& told = said[static_cast<size_t>(peer)];
    const bool compressing = told == 1;
    const bool compress = measuredSlow(rate, codec, compressing);
    if (told != static_cast<int8_t>(compress)) {
      if (compress) {
        log::info(rank,
                  "compression: messages to rank {} over the network are compressed from now on: "
                  "the link delivers sends at {:.3f} GB/s (median, measured), under half of the "
                  "codec's {:.3f} GB/s",
                  peer, rate.median / 1e9, codec / 1e9);
      } else {
        log::info(rank,
                  "compression: messages to rank {} over the network are raw: the link delivers "
                  "sends at {:.3f} GB/s (median, measured; lowest {:.3f}), {} the codec's {:.3f} "
                  "GB/s",
                  peer, rate.median / 1e9, rate.lowest / 1e9,
                  compressing ? "the lowest not under" : "not under half of", codec / 1e9);
      }
      told = static_cast<int8_t>(compress);
    }
    return compress;
  };
  return std::make_unique<exec::LinkCodec>(std::move(choice.compressTo), config.slotBytes,
                                           std::move(slow));
}

double nominalCompressionRatio(DataType type) {
  switch (type) {
    case DataType::kBFloat16:
      return 1.5;
    case DataType::kFloat32:
      return 1.2;
    case DataType::kFloat16:
      return 1.18;
    default:
      return 1.0;
  }
}

CompressionGain predictCompressionGain(const algo::Algorithm& algorithm,
                                       const plan::PlanRequest& request,
                                       const algo::CostParams& params, double ratio,
                                       double codecGBps) {
  model::SimOptions options = algo::selectionSimOptions(params, request.topology);
  CompressionGain gain;
  gain.rawUs = algo::predictedUs(algorithm, request, options);
  options.compressionRatio = ratio;
  options.codecGBps = codecGBps;
  gain.compressedUs = algo::predictedUs(algorithm, request, options);
  return gain;
}

void logCompressionGain(int rank, const exec::LinkCodec& codec, const algo::Algorithm& algorithm,
                        const plan::PlanRequest& request, const algo::CostParams& params) {
  if (request.topology == nullptr || !exec::compressibleType(request.type)) return;
  const size_t bytes = request.count * dataTypeSize(request.type);
  if (bytes < exec::kMinCompressedMessageBytes) return;
  std::vector<int> compressed;
  for (int q = 0; q < request.nranks; ++q) {
    if (q != rank && codec.compressesTo(q)) compressed.push_back(q);
  }
  if (compressed.empty()) return;
  const exec::LinkCodecStats& s = codec.stats();
  const bool measured = s.framesBytes > 0;
  const double ratio =
      measured ? static_cast<double>(s.rawBytesCompressed) / static_cast<double>(s.framesBytes)
               : nominalCompressionRatio(request.type);
  // Measured once per process: at the communicator's creation under auto with a known rate,
  // else here, on the first call shape that compresses (INFO only; a few milliseconds).
  const double codecGBps = exec::measuredCodecBytesPerSecond() / 1e9;
  try {
    const CompressionGain g = predictCompressionGain(algorithm, request, params, ratio, codecGBps);
    if (g.compressedUs == g.rawUs) return;  // no network arc on the topology (TCP on one host)
    log::info(rank,
              "compression: {} count {} {} ({}) to ranks [{}] compressed: predicted {:.1f} us, "
              "{:.1f} us raw, gain {:.2f}x (ratio {:.3f}, {}; the codec {:.2f} GB/s per end, "
              "measured; the model compresses every network link of the topology)",
              plan::toString(request.collective), request.count, toString(request.type),
              algorithm.name, fmt::join(compressed, ", "), g.compressedUs, g.rawUs, g.gain(), ratio,
              measured ? "this rank's codec so far" : "nominal for the type", codecGBps);
  } catch (const Error&) {
    // The plans do not run on this topology: selection did not simulate them either.
  }
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

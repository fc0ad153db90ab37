// GROVE_COMPRESS: which of a rank's links compress their messages, decided once when the
// communicator is made (exec/link_codec.hpp does the encoding and decoding).
//
//  * off:  nothing is encoded (messages peers encode are still decoded);
//  * on:   every message over the network (TCP) of float32, bfloat16 or float16 values from
//          kMinCompressedMessageBytes up;
//  * auto: the same, to each peer whose path is slower than the codec runs on this machine
//          (measured once per process: the rate one thread encodes a byte and decodes
//          another, as a rank of a collective does; CodecRates::roundTrip): the slowest of this
//          host's NIC (GROVE_NIC_SPEED, or the drivers' rate) and the known network links of the
//          topology's route to the peer (a topology file's, or the peer host's NIC when its ranks
//          knew it); with no rate known, raw until the transport has measured the link
//          (Transport::measuredSendRate: how fast it drained sends that waited on it), then
//          compressed once its median is under kMeasuredRateShare of the codec's round-trip
//          rate (measured when the communicator is made), raw again when its lowest recent
//          sample reached the codec's rate.
// The sender alone decides (messages say whether they are compressed), so ranks whose
// settings differ still work together.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algo/registry.hpp"
#include "core/config.hpp"
#include "exec/link_codec.hpp"
#include "topo/topology.hpp"
#include "transport/transport.hpp"

namespace grove::detail {

/// A measured drain rate is a lower bound of the link's (a slow receiver lowers it too), and
/// compressing a link the codec cannot outrun loses (0.57x at 10 Gbit/s, docs/compression.md):
/// only a link measured clearly slower than the codec compresses. At 1 Gbit/s a link drains at
/// about 0.12 GB/s, a ninth of the codec's ~1.05 GB/s on this project's machine.
inline constexpr double kMeasuredRateShare = 0.5;

/// Whether a link whose sends were measured delivered at `rate` compresses, for a codec of
/// round-trip rate `codecBytesPerSecond` (0: not measured, never). A link starts compressing
/// when the median is under kMeasuredRateShare of the codec's rate and, once `compressing`,
/// goes back to raw only when the lowest recent sample reached the codec's rate: a link that
/// compresses idles between its smaller messages and its samples overshoot (medians of
/// 0.8-2.9 GB/s on a 1 Gbit/s link), so it should not flip back on each of them.
bool measuredSlow(const transport::SendRate& rate, double codecBytesPerSecond, bool compressing);

/// Which peers' messages a rank compresses, and why (one reason with the peers it covers).
struct CompressionChoice {
  /// One per rank: exec::kSendRaw, kSendCompressed or kSendCompressedIfMeasuredSlow.
  std::vector<uint8_t> compressTo;
  std::vector<std::pair<std::string, std::vector<int>>> reasons;
};

/// The decision for `rank` of `size` ranks about `networkPeers` (those over TCP), per the
/// file comment; `codecBytesPerSecond` (the round-trip rate) is asked (once) only when a
/// rate is known.
CompressionChoice chooseCompression(const Config& config, int rank, int size,
                                    const std::vector<int>& networkPeers,
                                    const topo::Topology* topology,
                                    const std::function<double()>& codecBytesPerSecond);

/// The link codec of `rank`'s communicator over `transport`, or nullptr when no peer is
/// over the network (no message will ever be compressed). Logs at INFO what it decided.
std::unique_ptr<exec::LinkCodec> makeLinkCodec(const Config& config,
                                               const transport::Transport& transport,
                                               const topo::Topology* topology);

/// The ratio a prediction assumes for values of `type` before the codec measured any of its own:
/// what docs/compression.md measured on real gradients and weights (bfloat16 1.5, float32 1.2,
/// float16 1.18); 1 for the types the codec passes through.
double nominalCompressionRatio(DataType type);

/// The simulator's prediction of `algorithm` running `request` (topology set) on
/// `params`' geometry, with messages over network arcs compressed `ratio`:1 and each end
/// coding them at `codecGBps`, and the same call raw.
struct CompressionGain {
  double compressedUs = 0;
  double rawUs = 0;
  double gain() const { return compressedUs > 0 ? rawUs / compressedUs : 0; }
};
CompressionGain predictCompressionGain(const algo::Algorithm& algorithm,
                                       const plan::PlanRequest& request,
                                       const algo::CostParams& params, double ratio,
                                       double codecGBps);

/// GROVE_DEBUG=INFO: the predicted gain of compression for a call `rank` chose `algorithm`
/// for, when its messages of this type to some network peer are compressed now: one line with
/// the ratio assumed (the codec's so far on this rank, else nominalCompressionRatio), the
/// codec's measured rate, and both predictions. Silent when nothing of it compresses or the
/// plans cannot be simulated on the topology.
void logCompressionGain(int rank, const exec::LinkCodec& codec, const algo::Algorithm& algorithm,
                        const plan::PlanRequest& request, const algo::CostParams& params);

/// Logs at INFO what `codec` did (messages compressed, bytes saved, passed on, decoded).
void logLinkCodecStats(int rank, const exec::LinkCodec& codec);

}  // namespace grove::detail

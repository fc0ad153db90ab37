// GROVE_COMPRESS: which of a rank's links compress their messages, decided once when the
// communicator is made (exec/link_codec.hpp does the encoding and decoding).
//
//  * off:  nothing is encoded (messages peers encode are still decoded);
//  * on:   every message over the network (TCP) of float32, bfloat16 or float16 values from
//          kMinCompressedMessageBytes up;
//  * auto: the same, when this host's NIC (GROVE_NIC_SPEED) is slower than the codec runs on
//          this machine (measured once per process); with no NIC rate given, nothing.
// The sender alone decides (messages say whether they are compressed), so ranks whose
// settings differ still work together.
#pragma once

#include <memory>

#include "core/config.hpp"
#include "exec/link_codec.hpp"
#include "transport/transport.hpp"

namespace grove::detail {

/// The link codec of `rank`'s communicator over `transport`, or nullptr when no peer is
/// over the network (no message will ever be compressed). Logs at INFO what it decided.
std::unique_ptr<exec::LinkCodec> makeLinkCodec(const Config& config,
                                               const transport::Transport& transport);

/// Logs at INFO what `codec` did (messages compressed, bytes saved, passed on, decoded).
void logLinkCodecStats(int rank, const exec::LinkCodec& codec);

}  // namespace grove::detail

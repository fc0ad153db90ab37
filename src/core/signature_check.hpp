// GROVE_CHECK=1: before each collective every rank's full signature is exchanged (a small
// allgather) and compared, so that calls that differ between ranks fail on every rank with
// kInvalidUsage naming each rank that differs — before any byte of the call moves. Without
// it, the tags on every message (MessageTag) still catch a difference, but only on the ranks
// whose messages meet, and the call's first messages must travel first.
#pragma once

#include <memory>
#include <string>

#include "common/status.hpp"
#include "transport/fifo.hpp"

namespace grove::detail {

class CommState;
class Operation;

/// The exchange that must precede the call tagged `tag` (`call`: its operation, or nullptr
/// for a call with nothing to move). Not yet submitted.
std::shared_ptr<Operation> makeSignatureCheck(CommState& state, const transport::MessageTag& tag,
                                              std::shared_ptr<Operation> call);

/// After the exchange `check` completed on rank `rank` of `size`: ok when every rank's
/// signature equals this rank's, else kInvalidUsage naming each rank that differs and what
/// it called.
Status compareSignatures(const Operation& check, int rank, int size);

}  // namespace grove::detail

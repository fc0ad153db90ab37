// Text form of a plan, for people (`grove plan`, GROVE_DEBUG=TRACE) and for tests.
#pragma once

#include <string>

#include "plan/plan.hpp"

namespace grove::plan {

/// Renders a plan as text, one line per step, e.g.
///   plan allreduce algo=ring rank=1 nranks=4 chunksPerBlock=4 blocks in=1 out=1 scratch=0
///   channel 0
///     0: send   to 2 in[1]
///     1: rrs    from 0 to 2 in[0]
///     ...
/// The header carries `root=R` after `nranks` when root != -1. A step line is
/// `I: OP [from P] [to P] [SRC] [-> DST] [lane=L] [finalize] [after=C.S]`, where a clause
/// appears when the kind uses it (peers, operands) or differs from its default (lane,
/// finalize, after = channel C, step S); operands are `in[c]`, `out[c]`, `scratch[c]`. Each
/// line ends with '\n'. `fromText` (plan/reader.hpp) reads this form back.
std::string toText(const Plan& plan);

/// One step without its index or padding, as the verifier names it in messages, e.g.
/// "rrcs from 0 to 2 in[1] -> out[1] finalize". Operands the kind does not use are omitted.
std::string toText(const Step& step);

}  // namespace grove::plan

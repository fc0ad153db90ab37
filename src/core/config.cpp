#include "core/config.hpp"

namespace grove::detail {

using common::Param;

Config Config::resolve(const common::ParamOverrides& overrides, const common::Getenv& getenv) {
  const common::ParamValues values =
      common::ParamValues::resolve(common::ParamScope::kCommunicator, overrides, getenv);
  Config config;
  config.algo = values.text(Param::kAlgo);
  config.topoFile = values.text(Param::kTopoFile);
  config.timeout = std::chrono::seconds(values.integer(Param::kTimeout));
  // At least 2 s (1 is taken as 2): heartbeats go out after 1 s of silence.
  const int64_t heartbeat = values.integer(Param::kHeartbeatTimeout);
  config.heartbeatTimeout = std::chrono::seconds(heartbeat == 1 ? 2 : heartbeat);
  config.slotBytes = static_cast<size_t>(values.integer(Param::kSlotBytes));
  config.fifoDepth = static_cast<uint32_t>(values.integer(Param::kFifoDepth));
  // Unset keeps -1, which the waiting policy reads as its own default (the table's).
  if (values[Param::kSpinUs].source != common::ParamSource::kDefault) {
    config.spin = std::chrono::microseconds(values.integer(Param::kSpinUs));
  }
  config.verifyPlans = values.flag(Param::kVerify);
  config.requireSecret = values.flag(Param::kRequireSecret);
  config.checkSignatures = values.flag(Param::kCheck);
  config.checksum = values.flag(Param::kChecksum);
  config.faultDelay = std::chrono::microseconds(values.integer(Param::kFaultDelayUs));
  config.faultRank = static_cast<int>(values.integer(Param::kFaultRank));
  const int64_t direct = values.integer(Param::kDirect);  // The index of "0|1|2".
  config.direct = direct >= 1;
  config.directCopies = direct == 2;
  config.directMinBytes = static_cast<size_t>(values.integer(Param::kDirectMinBytes));
  config.tracePath = values.text(Param::kTrace);
  config.traceSteps = static_cast<size_t>(values.integer(Param::kTraceSteps));
  config.forceTcp = values.text(Param::kTransport) == "tcp";
  config.socketInterfaces = values.text(Param::kSocketIfname);
  config.tcpDirectBytes = static_cast<size_t>(values.integer(Param::kTcpDirectBytes));
  config.tcpShared = values.flag(Param::kTcpShared);
  config.hostId = values.text(Param::kHostId);
  config.nicSpeedMbps = values.integer(Param::kNicSpeed);
  config.jobId = values.text(Param::kJobId);
  config.compress = static_cast<Config::Compress>(values.integer(Param::kCompress));  // index
  config.nsocksGiven = values[Param::kNsocks].isSet();
  config.faultCorruptFrame = static_cast<uint64_t>(values.integer(Param::kFaultCorruptFrame));
  return config;
}

}  // namespace grove::detail

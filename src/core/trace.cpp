#include "core/trace.hpp"

#include <fmt/format.h>
#include <fmt/os.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "common/log.hpp"
#include "grove/types.hpp"
#include "plan/plan.hpp"

namespace grove::detail {
namespace {

// Several communicators of one process may trace with the same pattern (ranks as threads,
// split communicators): each takes a file name no other took.
std::string claimPath(const std::string& wanted) {
  static std::mutex mutex;
  static std::set<std::string> taken;
  std::lock_guard lock(mutex);
  std::string path = wanted;
  for (int k = 1; !taken.insert(path).second; ++k) {
    const size_t dot = wanted.rfind('.');
    const size_t slash = wanted.rfind('/');
    const bool hasExt = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    path = hasExt ? fmt::format("{}.c{}{}", wanted.substr(0, dot), k, wanted.substr(dot))
                  : fmt::format("{}.c{}", wanted, k);
  }
  return path;
}

// Microseconds with nanosecond digits, as the trace format wants.
std::string micros(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

std::string peerName(const exec::StepRecord& s) {
  if (s.recvPeer >= 0 && s.sendPeer >= 0) return fmt::format("{}→{}", s.recvPeer, s.sendPeer);
  if (s.recvPeer >= 0) return fmt::format("←{}", s.recvPeer);
  if (s.sendPeer >= 0) return fmt::format("→{}", s.sendPeer);
  return "local";
}

}  // namespace

std::string tracePath(const std::string& pattern, int rank, int size) {
  if (const size_t at = pattern.find("%r"); at != std::string::npos) {
    std::string path = pattern;
    path.replace(at, 2, std::to_string(rank));
    return path;
  }
  if (size <= 1) return pattern;
  const size_t dot = pattern.rfind('.');
  const size_t slash = pattern.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return fmt::format("{}.rank{}", pattern, rank);
  }
  return fmt::format("{}.rank{}{}", pattern.substr(0, dot), rank, pattern.substr(dot));
}

Tracer::Tracer(const std::string& pathPattern, int rank, int size, size_t capacity)
    : rank_(rank),
      size_(size),
      path_(claimPath(tracePath(pathPattern, rank, size))),
      buffer_(capacity) {
  log::info(rank_, "GROVE_TRACE: recording up to {} steps into {}", capacity, path_);
}

Tracer::~Tracer() { write(); }

bool Tracer::write() const {
  std::FILE* file = std::fopen(path_.c_str(), "w");
  if (file == nullptr) {
    log::warn(rank_, "GROVE_TRACE: cannot write {}: {}", path_, std::strerror(errno));
    return false;
  }
  const int pid = rank_;
  fmt::print(file,
             "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"rank\":{},\"size\":{},"
             "\"dropped_steps\":{},\"dropped_calls\":{}}},\n\"traceEvents\":[\n",
             rank_, size_, buffer_.droppedSteps(), buffer_.droppedCalls());
  fmt::print(file,
             "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{0},\"args\":{{\"name\":\"rank "
             "{0}\"}}}},\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{0},\"args\":{{"
             "\"sort_index\":{0}}}}},\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{0},"
             "\"tid\":0,\"args\":{{\"name\":\"calls\"}}}}",
             pid);
  std::set<int> channels;
  for (size_t i = 0; i < buffer_.stepCount(); ++i) channels.insert(buffer_.step(i).channel);
  for (int c : channels) {
    fmt::print(file,
               ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{"
               "\"name\":\"channel {}\"}}}}",
               pid, c + 1, c);
  }
  for (size_t i = 0; i < buffer_.callCount(); ++i) {
    const exec::CallRecord& c = buffer_.call(i);
    fmt::print(file,
               ",\n{{\"name\":\"{} #{}\",\"cat\":\"call\",\"ph\":\"X\",\"pid\":{},\"tid\":0,"
               "\"ts\":{},\"dur\":{},\"args\":{{\"sequence\":{},\"count\":{},\"bytes\":{},"
               "\"type\":\"{}\",\"op\":\"{}\",\"root\":{},\"algorithm\":\"{}\",\"failed\":{}}}}}",
               plan::toString(c.shape.collective), c.sequence, pid, micros(c.startNs),
               micros(c.endNs - c.startNs), c.sequence, c.shape.count, c.shape.bytes(),
               toString(c.shape.type), toString(c.shape.op), c.shape.root, c.algorithm, c.failed);
  }
  for (size_t i = 0; i < buffer_.stepCount(); ++i) {
    const exec::StepRecord& s = buffer_.step(i);
    fmt::print(file,
               ",\n{{\"name\":\"{} {}\",\"cat\":\"step\",\"ph\":\"X\",\"pid\":{},\"tid\":{},"
               "\"ts\":{},\"dur\":{},\"args\":{{\"call\":{},\"step\":{},\"tile\":{},"
               "\"recv_from\":{},\"send_to\":{},\"bytes\":{},\"wait_us\":{}}}}}",
               plan::toString(static_cast<plan::OpKind>(s.op)), peerName(s), pid, s.channel + 1,
               micros(s.readyNs), micros(s.endNs - s.readyNs), s.sequence, s.step, s.tile,
               s.recvPeer, s.sendPeer, s.bytes, micros(s.attemptNs - s.readyNs));
  }
  fmt::print(file, "\n]}}\n");
  const bool ok = std::fflush(file) == 0 && !std::ferror(file);
  std::fclose(file);
  if (!ok) {
    log::warn(rank_, "GROVE_TRACE: writing {} failed", path_);
    return false;
  }
  log::info(rank_, "GROVE_TRACE: wrote {} calls and {} steps to {} ({} steps dropped)",
            buffer_.callCount(), buffer_.stepCount(), path_, buffer_.droppedSteps());
  return true;
}

}  // namespace grove::detail

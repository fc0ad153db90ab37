// GROVE_TRACE: a per-rank timeline of every call and every step, for Perfetto or
// chrome://tracing.
//
// The communicator records into a TraceBuffer (exec/trace_buffer.hpp) while it runs and this
// class turns the records into Chrome trace JSON when the communicator is destroyed: one
// process per rank ("rank 3"), one track for the calls and one per plan channel, each step
// a slice from the moment it became current to its end, with the peers, the bytes and how
// long it waited for data or room. Timestamps come from the host's monotonic clock, so the
// files of all ranks of one host line up and can be loaded together (see docs/tracing.md).
#pragma once

#include <memory>
#include <string>

#include "exec/trace_buffer.hpp"

namespace grove::detail {

class Tracer {
 public:
  /// `pathPattern` is GROVE_TRACE's value: "%r" becomes the rank; without it, a job of more
  /// than one rank writes "<stem>.rank<r><ext>". `capacity`: step records kept.
  Tracer(const std::string& pathPattern, int rank, int size, size_t capacity);
  /// Writes the file (errors are logged: a destructor cannot report them otherwise).
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  exec::TraceBuffer& buffer() { return buffer_; }
  const std::string& path() const { return path_; }

  /// Writes the JSON now; returns false (and logs why) when the file cannot be written.
  bool write() const;

 private:
  int rank_;
  int size_;
  std::string path_;
  exec::TraceBuffer buffer_;
};

/// The file a rank writes for GROVE_TRACE=`pattern` (see Tracer), before de-duplication.
std::string tracePath(const std::string& pattern, int rank, int size);

}  // namespace grove::detail

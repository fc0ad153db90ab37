// `grove run --tag-output`: every line a rank writes is prefixed with `[rank]: ` so that the
// interleaved output of many ranks can be read (and grepped) line by line.
//
// The launcher reads each rank's stdout and stderr pipe in pieces of whatever size the pipe
// hands over; a LineTagger cuts those pieces into lines, holding a partial line back until its
// newline (or the end of the stream) arrives, so that two ranks' lines never mix within a line.
#pragma once

#include <cstddef>
#include <string>

namespace grove::tools::run {

/// Turns a byte stream into prefixed lines written to a file descriptor. Not thread-safe.
class LineTagger {
 public:
  /// A partial line longer than this is written out (ended with a newline) without waiting
  /// for the rest, so a rank that never writes a newline cannot make the launcher grow.
  static constexpr size_t kMaxLine = 64 * 1024;

  /// Writes lines of the form `prefix + line` to `fd`.
  LineTagger(std::string prefix, int fd);

  /// Takes the next `size` bytes of the stream; writes every line they complete.
  void feed(const char* data, size_t size);

  /// The stream has ended: writes the held partial line, if any, with a newline added.
  void finish();

 private:
  void emit(const char* data, size_t size, bool addNewline);

  std::string prefix_;
  int fd_;
  std::string pending_;  ///< The partial line held back, without prefix.
};

/// Writes all of `data` to `fd`, retrying on EINTR and short writes. Errors (a closed pipe)
/// are ignored: a launcher must keep draining its ranks' output even when nobody reads its
/// own.
void writeAll(int fd, const char* data, size_t size);

}  // namespace grove::tools::run

// LineTagger: prefixes whole lines; see run_output.hpp.
#include "run_output.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace grove::tools::run {

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // A non-blocking stdout: wait until it drains.
        pollfd waiting{fd, POLLOUT, 0};
        ::poll(&waiting, 1, 1000);
        continue;
      }
      return;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

LineTagger::LineTagger(std::string prefix, int fd) : prefix_(std::move(prefix)), fd_(fd) {}

void LineTagger::feed(const char* data, size_t size) {
  while (size > 0) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', size));
    if (newline == nullptr) {
      pending_.append(data, size);
      if (pending_.size() >= kMaxLine) {
        emit(pending_.data(), pending_.size(), true);
        pending_.clear();
      }
      return;
    }
    const size_t length = static_cast<size_t>(newline - data) + 1;
    if (pending_.empty()) {
      emit(data, length, false);
    } else {
      pending_.append(data, length);
      emit(pending_.data(), pending_.size(), false);
      pending_.clear();
    }
    data += length;
    size -= length;
  }
}

void LineTagger::finish() {
  if (!pending_.empty()) emit(pending_.data(), pending_.size(), true);
  pending_.clear();
}

void LineTagger::emit(const char* data, size_t size, bool addNewline) {
  // One write per line, so lines of different ranks (and of the two streams, when both go to
  // one terminal) interleave only at line boundaries.
  std::string line;
  line.reserve(prefix_.size() + size + 1);
  line.append(prefix_).append(data, size);
  if (addNewline) line.push_back('\n');
  writeAll(fd_, line.data(), line.size());
}

}  // namespace grove::tools::run

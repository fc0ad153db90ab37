// How fast a connection's path delivers what this rank sends (GROVE_COMPRESS=auto uses it
// for links whose rate nothing else gave; core/link_compression.hpp).
//
// The kernel measures it already: TCP_INFO's delivery rate is its rate sampler's latest
// figure (bytes acknowledged over the time they took, per ACK; what BBR steers by). A sample
// the kernel marks application-limited (the sender had too little queued to fill the path:
// grove's FIFOs keep fewer bytes in flight than a fast path holds) says only that the path is
// at least that fast, and is left out. Of the others the median of the last kWindow stands
// for the path: a single sample can overshoot (a shaper lets a burst through at the speed of
// the wire behind it: 2.6 GB/s read once on a link shaped to 1 Gbit/s) or fall short (a slow
// reader's window), a median of many does neither alone. Their lowest is kept too: a link
// that compresses carries fewer bytes than it could and idles between them, so its bursts
// grow common (medians of 0.8-2.9 GB/s read on that 1 Gbit/s link while it compressed), and
// only a window without one slow sample says it got fast. Read after a bulk
// frame (kMinFrameBytes and up), at most every kInterval: one getsockopt per such frame at
// most, never on the latency path of small messages.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace grove::transport::tcp {

class DrainRate {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr size_t kMinFrameBytes = size_t{64} << 10;
  static constexpr Clock::duration kInterval = std::chrono::milliseconds(5);
  /// Samples the median is taken over; none is given before kMinSamples.
  static constexpr size_t kWindow = 15;
  static constexpr size_t kMinSamples = 5;

  /// Whether a frame of `frameBytes` that finished at `now` is followed by a sample.
  bool due(size_t frameBytes, Clock::time_point now) const {
    return frameBytes >= kMinFrameBytes && (!sampled_ || now - lastSample_ >= kInterval);
  }

  /// A reading of the kernel's delivery rate at `now` (0: none yet).
  void onSample(double bytesPerSecond, bool appLimited, Clock::time_point now) {
    sampled_ = true;
    lastSample_ = now;
    if (appLimited || bytesPerSecond <= 0) return;
    samples_[next_] = bytesPerSecond;
    next_ = (next_ + 1) % kWindow;
    if (count_ < kWindow) ++count_;
    if (count_ < kMinSamples) return;
    std::array<double, kWindow> sorted = samples_;
    std::nth_element(sorted.begin(), sorted.begin() + count_ / 2, sorted.begin() + count_);
    median_ = sorted[count_ / 2];
    lowest_ = *std::min_element(sorted.begin(), sorted.begin() + count_);
  }

  /// The median of the last kWindow samples not application-limited, bytes/s; 0 before
  /// kMinSamples of them.
  double bytesPerSecond() const { return median_; }
  /// The lowest of them: above a rate, every recent sample was (0 before kMinSamples).
  double lowestBytesPerSecond() const { return lowest_; }

 private:
  bool sampled_ = false;
  Clock::time_point lastSample_{};
  std::array<double, kWindow> samples_{};
  size_t next_ = 0;
  size_t count_ = 0;
  double median_ = 0;
  double lowest_ = 0;
};

/// Reads the kernel's delivery rate of TCP socket `fd` (TCP_INFO); false when it does not
/// say (an older kernel, not a TCP socket).
bool readDeliveryRate(int fd, double& bytesPerSecond, bool& appLimited);

}  // namespace grove::transport::tcp

// How fast a TCP connection's path delivers this rank's sends (tcp/drain_rate.hpp): samples
// of the kernel's delivery rate after bulk frames only (DrainRate::kMinFrameBytes), at most
// every kInterval; application-limited samples left out; the median of the last kWindow
// given from kMinSamples on, so one burst or one stall does not decide. And the kernel
// does report one for a real socket that carried data.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "transport/tcp/drain_rate.hpp"

namespace grove::transport::tcp {
namespace {

using std::chrono::milliseconds;
const auto kT0 = DrainRate::Clock::time_point{} + milliseconds(1000);

TEST(DrainRate, SamplesFollowBulkFramesAtMostEveryInterval) {
  DrainRate rate;
  EXPECT_FALSE(rate.due(DrainRate::kMinFrameBytes - 1, kT0));  // small frames: never
  EXPECT_TRUE(rate.due(DrainRate::kMinFrameBytes, kT0));
  rate.onSample(1e8, false, kT0);
  EXPECT_FALSE(rate.due(DrainRate::kMinFrameBytes, kT0 + DrainRate::kInterval / 2));
  EXPECT_TRUE(rate.due(DrainRate::kMinFrameBytes, kT0 + DrainRate::kInterval));
}

TEST(DrainRate, GivesTheMedianOfTheRecentSamplesThatWereNotApplicationLimited) {
  DrainRate rate;
  auto at = [](int i) { return kT0 + milliseconds(10 * i); };
  rate.onSample(3e9, true, at(0));  // application-limited: the path is at least that fast
  const double samples[] = {1.18e8, 2.6e9 /* a burst */, 1.19e8, 0.4e8 /* a stall */};
  for (int i = 0; i < 4; ++i) rate.onSample(samples[i], false, at(1 + i));
  EXPECT_EQ(rate.bytesPerSecond(), 0.0);  // 4 of kMinSamples
  rate.onSample(1.20e8, false, at(5));
  EXPECT_EQ(rate.bytesPerSecond(), 1.19e8);  // of 0.4, 1.18, 1.19, 1.20, 26 (x 1e8)
  // kWindow later the old samples are gone: the link got faster.
  for (size_t i = 0; i < DrainRate::kWindow; ++i) {
    rate.onSample(i % 2 ? 2.4e9 : 2.5e9, false, at(6 + static_cast<int>(i)));
  }
  EXPECT_EQ(rate.bytesPerSecond(), 2.5e9);  // 8 of 2.5, 7 of 2.4
}

TEST(DrainRate, TheKernelReportsADeliveryRateForALoopbackConnection) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  const int sender = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(sender, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const int receiver = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(receiver, 0);
  constexpr size_t kBytes = size_t{16} << 20;
  std::thread reader([receiver] {
    std::vector<char> sink(1 << 16);
    size_t got = 0;
    while (got < kBytes) {
      const ssize_t n = ::read(receiver, sink.data(), sink.size());
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  });
  std::vector<char> data(1 << 20, 'x');
  for (size_t sent = 0; sent < kBytes;) {
    const ssize_t n = ::write(sender, data.data(), data.size());
    ASSERT_GT(n, 0);
    sent += static_cast<size_t>(n);
  }
  reader.join();
  double rate = 0;
  bool appLimited = false;
  EXPECT_TRUE(readDeliveryRate(sender, rate, appLimited));
  EXPECT_GT(rate, 0.0);
  // Not a TCP socket: no rate.
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  EXPECT_FALSE(readDeliveryRate(pipeFds[0], rate, appLimited));
  for (int fd : {listener, sender, receiver, pipeFds[0], pipeFds[1]}) ::close(fd);
}

}  // namespace
}  // namespace grove::transport::tcp

#include "transport/tcp/drain_rate.hpp"

// linux/tcp.h, not netinet/tcp.h: glibc's tcp_info stops before the delivery rate.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace grove::transport::tcp {

bool readDeliveryRate(int fd, double& bytesPerSecond, bool& appLimited) {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return false;
  // A kernel older than the field returns a shorter struct.
  if (length < offsetof(tcp_info, tcpi_delivery_rate) + sizeof(info.tcpi_delivery_rate)) {
    return false;
  }
  bytesPerSecond = static_cast<double>(info.tcpi_delivery_rate);
  appLimited = info.tcpi_delivery_rate_app_limited != 0;
  return true;
}

}  // namespace grove::transport::tcp

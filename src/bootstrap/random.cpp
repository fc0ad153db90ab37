// Kernel randomness for nonces and secrets (see random.hpp).
#include "bootstrap/random.hpp"

#include <sys/random.h>

#include <cerrno>

#include "common/socket.hpp"
#include "grove/error.hpp"

namespace grove::bootstrap {

std::string randomBytes(size_t size) {
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = getrandom(bytes.data() + done, size - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kSystemError, "getrandom: " + net::errorText(errno));
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

std::string toHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    text += kDigits[c >> 4];
    text += kDigits[c & 15];
  }
  return text;
}

std::string randomSecret() { return toHex(randomBytes(16)); }

}  // namespace grove::bootstrap

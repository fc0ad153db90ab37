// Random bytes from the kernel (getrandom) for handshake nonces and job secrets, and the hex
// spelling secrets travel in (environment variables and ids hold text).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace grove::bootstrap {

/// `size` bytes from getrandom(); throws grove::Error(kSystemError) when it fails.
std::string randomBytes(size_t size);

/// Lower-case hexadecimal spelling of `bytes` (two characters per byte).
std::string toHex(std::string_view bytes);

/// A fresh job secret: 16 random bytes spelled in hex (32 characters).
std::string randomSecret();

}  // namespace grove::bootstrap

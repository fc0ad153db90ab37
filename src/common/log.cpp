#include "common/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace grove::log {
namespace {

Level parseLevel(const char* text) {
  if (text == nullptr) return Level::kWarn;
  std::string value(text);
  for (char& c : value) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (value == "NONE") return Level::kNone;
  if (value == "VERSION") return Level::kVersion;
  if (value == "WARN") return Level::kWarn;
  if (value == "INFO") return Level::kInfo;
  if (value == "TRACE") return Level::kTrace;
  return Level::kWarn;
}

std::string expandPath(const char* pattern) {
  std::string path;
  for (const char* p = pattern; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'h') {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      path += host;
      ++p;
    } else if (p[0] == '%' && p[1] == 'p') {
      path += std::to_string(getpid());
      ++p;
    } else {
      path += *p;
    }
  }
  return path;
}

struct Sink {
  Sink() {
    if (const char* file = getenv("GROVE_DEBUG_FILE"))
      stream = fopen(expandPath(file).c_str(), "a");
    if (stream == nullptr) stream = stderr;
    gethostname(host, sizeof(host) - 1);
  }
  FILE* stream = nullptr;
  char host[256] = {};
  std::mutex mutex;
};

Sink& sink() {
  static Sink instance;
  return instance;
}

const char* levelName(Level at) {
  switch (at) {
    case Level::kVersion:
      return "VERSION";
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kTrace:
      return "TRACE";
    case Level::kNone:
      break;
  }
  return "";
}

}  // namespace

Level level() {
  static const Level value = parseLevel(getenv("GROVE_DEBUG"));
  return value;
}

void write(Level at, int rank, std::string_view message) {
  Sink& out = sink();
  std::string line = fmt::format("{}:{}:{} ", out.host, getpid(), syscall(SYS_gettid));
  if (rank >= 0) line += fmt::format("[{}] ", rank);
  line += fmt::format("GROVE {} {}\n", levelName(at), message);
  std::lock_guard lock(out.mutex);
  fputs(line.c_str(), out.stream);
  fflush(out.stream);
}

}  // namespace grove::log

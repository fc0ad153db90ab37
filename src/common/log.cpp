#include "common/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "common/parameters.hpp"
#include "grove/error.hpp"

namespace grove::log {
namespace {

// The table's GROVE_DEBUG choices, in order: NONE|VERSION|WARN|INFO|TRACE.
constexpr Level kLevels[] = {Level::kNone, Level::kVersion, Level::kWarn, Level::kInfo,
                             Level::kTrace};

// GROVE_DEBUG and GROVE_DEBUG_FILE are read once per process, through the parameter table. A
// value the table rejects must not take the process down (logging is set up lazily, from
// anywhere): it is reported on stderr, naming the variable and what it expects, and the
// default is used instead.
common::ParamValue processParameter(common::Param param) {
  const common::ParamSpec& spec = common::spec(param);
  try {
    return common::resolveParameter(spec, {});
  } catch (const Error& error) {
    std::fprintf(stderr, "%s; using the default\n", error.what());
    return common::parseParameter(spec, "", common::ParamSource::kDefault);
  }
}

std::string expandPath(const std::string& text) {
  const char* pattern = text.c_str();
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
    const common::ParamValue file = processParameter(common::Param::kDebugFile);
    if (file.isSet()) stream = fopen(expandPath(file.text).c_str(), "a");
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
  static const Level value = kLevels[processParameter(common::Param::kDebug).number];
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

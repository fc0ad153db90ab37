// The parameter table (common/parameters.hpp) and grove::Options: every default is a valid
// value of its own knob, malformed values fail naming the knob, the value, where it came
// from and what was expected, and code wins over the environment, which wins over defaults.
#include "common/parameters.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "core/config.hpp"
#include "grove/communicator.hpp"
#include "grove/error.hpp"
#include "grove/options.hpp"

namespace grove {
namespace {

using common::Param;
using common::ParamKind;
using common::ParamSource;

/// A fake environment: the tests never touch the process's own.
common::Getenv fakeEnvironment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> const char* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  };
}

/// The message of the grove::Error that `body` throws (kInvalidArgument expected).
template <class Body>
std::string invalidArgumentMessage(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no grove::Error thrown";
  return {};
}

TEST(Parameters, NamesAreUniqueAndDocumented) {
  std::set<std::string_view> names;
  for (const common::ParamSpec& spec : common::kParameters) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name << " is declared twice";
    EXPECT_TRUE(spec.name.starts_with("GROVE_")) << spec.name;
    EXPECT_FALSE(spec.doc.empty()) << spec.name << " has no doc line";
    EXPECT_EQ(common::findParameter(spec.name), &spec);
  }
  EXPECT_EQ(common::findParameter("GROVE_NO_SUCH_KNOB"), nullptr);
}

TEST(Parameters, EveryDefaultIsInsideItsOwnRange) {
  for (const common::ParamSpec& spec : common::kParameters) {
    SCOPED_TRACE(std::string(spec.name));
    if (spec.fallback.empty()) continue;  // Unset by default: nothing to check.
    const common::ParamValue value =
        common::parseParameter(spec, spec.fallback, ParamSource::kEnvironment);
    if (spec.kind == ParamKind::kInteger) {
      EXPECT_GE(value.number, spec.min);
      EXPECT_LE(value.number, spec.max);
      EXPECT_EQ(value.number % spec.multipleOf, 0);
      EXPECT_FALSE(spec.unit.empty()) << "integers name their unit";
    }
    if (spec.kind == ParamKind::kEnum) {
      EXPECT_FALSE(spec.choices.empty());
    }
  }
}

TEST(Parameters, DefaultsTheCodeUsesComeFromTheTable) {
  EXPECT_EQ(common::defaultInteger(Param::kSlotBytes), 262144);
  EXPECT_EQ(common::defaultInteger(Param::kFifoDepth), 4);
  EXPECT_EQ(common::defaultInteger(Param::kFaultRank), -1);
  const detail::Config config;
  EXPECT_EQ(config.slotBytes, size_t{262144});
  EXPECT_EQ(config.fifoDepth, 4u);
}

TEST(Parameters, ErrorsNameTheVariableTheValueAndWhatIsExpected) {
  const std::string message = invalidArgumentMessage([] {
    common::parseParameter(common::spec(Param::kTimeout), "soon", ParamSource::kEnvironment);
  });
  EXPECT_EQ(message,
            "grove: GROVE_TIMEOUT='soon' (set in the environment) is not valid; expected an "
            "integer (seconds) in [1, 604800]");
  EXPECT_EQ(invalidArgumentMessage([] {
              common::parseParameter(common::spec(Param::kSlotBytes), "4100", ParamSource::kCode);
            }),
            "grove: GROVE_SLOT_BYTES='4100' (set from code) is not valid; expected an integer "
            "(bytes) in [4096, 67108864], a multiple of 64");
  EXPECT_EQ(invalidArgumentMessage([] {
              common::parseParameter(common::spec(Param::kDirect), "3", ParamSource::kCode);
            }),
            "grove: GROVE_DIRECT='3' (set from code) is not valid; expected one of 0, 1, 2");
  EXPECT_EQ(invalidArgumentMessage([] {
              common::parseParameter(common::spec(Param::kCheck), "yes", ParamSource::kCode);
            }),
            "grove: GROVE_CHECK='yes' (set from code) is not valid; expected 0 or 1");
}

TEST(Parameters, EnumsIgnoreCaseAndKeepTheTablesSpelling) {
  const common::ParamValue value =
      common::parseParameter(common::spec(Param::kTransport), "TCP", ParamSource::kEnvironment);
  EXPECT_EQ(value.text, "tcp");
  EXPECT_EQ(value.number, 1);
}

TEST(Parameters, CodeWinsOverEnvironmentWhichWinsOverDefault) {
  const common::Getenv environment =
      fakeEnvironment({{"GROVE_TIMEOUT", "20"}, {"GROVE_FIFO_DEPTH", "8"}});
  const common::ParamOverrides code{{"GROVE_TIMEOUT", "30"}};
  const common::ParamValues values =
      common::ParamValues::resolve(common::ParamScope::kCommunicator, code, environment);
  EXPECT_EQ(values.integer(Param::kTimeout), 30);
  EXPECT_EQ(values[Param::kTimeout].source, ParamSource::kCode);
  EXPECT_EQ(values.integer(Param::kFifoDepth), 8);
  EXPECT_EQ(values[Param::kFifoDepth].source, ParamSource::kEnvironment);
  EXPECT_EQ(values.integer(Param::kSlotBytes), 262144);
  EXPECT_EQ(values[Param::kSlotBytes].source, ParamSource::kDefault);
}

TEST(Parameters, ConfigReadsEveryCommunicatorKnob) {
  const detail::Config config = detail::Config::resolve(
      {{"GROVE_DIRECT", "2"}, {"GROVE_HEARTBEAT_TIMEOUT", "1"}, {"GROVE_TRANSPORT", "tcp"}},
      fakeEnvironment({{"GROVE_SPIN_US", "7"}, {"GROVE_FAULT_CORRUPT_FRAME", "3"}}));
  EXPECT_TRUE(config.direct);
  EXPECT_TRUE(config.directCopies);
  EXPECT_EQ(config.heartbeatTimeout, std::chrono::seconds(2));  // 1 is taken as 2.
  EXPECT_TRUE(config.forceTcp);
  EXPECT_EQ(config.spin, std::chrono::microseconds(7));
  EXPECT_EQ(config.faultCorruptFrame, 3u);
  const detail::Config defaults = detail::Config::resolve({}, fakeEnvironment({}));
  EXPECT_EQ(defaults.spin, std::chrono::microseconds(-1));  // The waiting policy's default.
  EXPECT_EQ(defaults.timeout, std::chrono::seconds(300));
  EXPECT_FALSE(defaults.forceTcp);
}

TEST(Parameters, OverlayAnswersFromCodeFirst) {
  const common::Getenv lookup =
      common::overlay({{"GROVE_ROOT", "a:1"}}, fakeEnvironment({{"GROVE_ROOT", "b:2"}}));
  EXPECT_STREQ(lookup("GROVE_ROOT"), "a:1");
  EXPECT_EQ(lookup("GROVE_STORE"), nullptr);
}

TEST(Options, SetChecksLikeTheEnvironment) {
  Options options;
  options.set("GROVE_TIMEOUT", "30").set("GROVE_ALGO", "ring");
  EXPECT_EQ(options.get("GROVE_TIMEOUT"), "30");
  EXPECT_EQ(options.get("GROVE_SLOT_BYTES"), std::nullopt);
  EXPECT_EQ(invalidArgumentMessage([&] { options.set("GROVE_TIMEOUT", "0"); }),
            "grove: GROVE_TIMEOUT='0' (set from code) is not valid; expected an integer "
            "(seconds) in [1, 604800]");
  EXPECT_EQ(options.get("GROVE_TIMEOUT"), "30");  // A refused value changes nothing.
  EXPECT_NE(invalidArgumentMessage([&] {
              options.set("GROVE_TIMEOUTS", "3");
            }).find("'GROVE_TIMEOUTS' is not a grove knob"),
            std::string::npos);
  EXPECT_NE(invalidArgumentMessage([&] {
              options.set("GROVE_DEBUG", "INFO");
            }).find("GROVE_DEBUG is read once per process"),
            std::string::npos);
  options.set("GROVE_TIMEOUT", "");
  EXPECT_EQ(options.get("GROVE_TIMEOUT"), std::nullopt);
}

TEST(Options, EveryKnobButTheProcessOnesCanBeSet) {
  for (const common::ParamSpec& spec : common::kParameters) {
    SCOPED_TRACE(std::string(spec.name));
    // A valid value of each kind: its default, else the lower end of its range, else text.
    std::string value(spec.fallback);
    if (value.empty()) {
      value = spec.kind == ParamKind::kInteger ? std::to_string(spec.min) : "x";
    }
    Options options;
    if (spec.scope == common::ParamScope::kProcess) {
      EXPECT_THROW(options.set(spec.name, value), Error);
    } else {
      options.set(spec.name, value);
      EXPECT_EQ(options.get(spec.name), value);
    }
  }
}

TEST(Options, SecretsAreNeverRepeatedInErrors) {
  const std::string message = invalidArgumentMessage([] {
    common::ParamSpec spec = common::spec(Param::kSecret);
    spec.kind = ParamKind::kBoolean;  // Any refusal of a secret knob.
    common::parseParameter(spec, "hunter2", ParamSource::kCode);
  });
  EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
}

TEST(Options, NamesListTheWholeTable) {
  EXPECT_EQ(Options::names().size(), common::kParamCount);
  EXPECT_EQ(Options::names().front(), "GROVE_ALGO");
}

// fromEnv finds its job through Options alone: the launch knobs answer from code first.
TEST(Options, FromEnvFindsTheJobThroughOptions) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("grove-options-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    Communicator comm = Communicator::fromEnv(Options()
                                                  .set("GROVE_RANK", "0")
                                                  .set("GROVE_WORLD_SIZE", "1")
                                                  .set("GROVE_STORE", "file:" + dir.string())
                                                  .set("GROVE_TIMEOUT", "20"));
    EXPECT_EQ(comm.rank(), 0);
    EXPECT_EQ(comm.size(), 1);
    int32_t value = 5;
    comm.allReduce(&value, &value, 1, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(value, 5);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grove

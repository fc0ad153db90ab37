// `grove store`: a standalone rendezvous store server for jobs whose rank 0 should not host
// it (or whose ranks all start through a launcher that gives no address): start it on a
// known host and port, point every rank's GROVE_ROOT at it, stop it with Ctrl-C or SIGTERM.
//
// The secret comes from an environment variable (never from the command line, where `ps`
// would show it to every user of the machine).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bootstrap/tcp_store.hpp"
#include "command.hpp"
#include "grove/error.hpp"

namespace grove::tools {
namespace {

struct StoreOptions {
  int port = 0;
  std::string host;
  std::string secretEnv = "GROVE_SECRET";
};

void runStore(const StoreOptions& options) {
  const char* secret = std::getenv(options.secretEnv.c_str());
  if (secret == nullptr) {
    std::fprintf(stderr,
                 "grove store: warning: %s is not set; clients must use an empty secret too\n",
                 options.secretEnv.c_str());
  }
  // Block the stop signals before the server thread starts, so it inherits the mask and
  // only this thread receives them, in sigwait.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  bootstrap::TcpStoreServer server(options.host, static_cast<uint16_t>(options.port),
                                   secret != nullptr ? secret : "");
  std::printf("grove store: serving on %s port %u (secret from %s); stop with Ctrl-C\n",
              options.host.empty() ? "every interface," : (options.host + ",").c_str(),
              server.port(), options.secretEnv.c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&stopSignals, &received);
  std::printf("grove store: stopping (%s)\n", received == SIGINT ? "SIGINT" : "SIGTERM");
}

void addStoreCommand(CLI::App& app) {
  auto options = std::make_shared<StoreOptions>();
  CLI::App* command = app.add_subcommand(
      "store", "Run a standalone rendezvous store server until SIGINT or SIGTERM");
  command->add_option("-p,--port", options->port, "Port to listen on (0: any free port)")
      ->required()
      ->check(CLI::Range(0, 65535));
  command->add_option("--host", options->host,
                      "Address to listen on (default: every interface, IPv4 and IPv6)");
  command
      ->add_option("--secret-env", options->secretEnv,
                   "Environment variable holding the job secret")
      ->capture_default_str();
  command->callback([options] { runStore(*options); });
}

const CommandRegistration kStore{"store", &addStoreCommand};

}  // namespace
}  // namespace grove::tools

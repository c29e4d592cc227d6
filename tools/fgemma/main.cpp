// fgemma: command-line front end. Subcommands live in cmd_*.cpp and register themselves.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "command.h"
#include "kernels/matmul.h"
#include "util/version.h"

namespace fgemma::cli {

std::vector<RegisteredCommand>& Commands() {
  static std::vector<RegisteredCommand> commands;
  return commands;
}

CommandRegistration::CommandRegistration(int order, CommandSetup setup) {
  Commands().push_back({order, std::move(setup)});
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "fgemma: error: %s\n", message.c_str());
  return 1;
}

}  // namespace fgemma::cli

int main(int argc, char** argv) {
  using namespace fgemma::cli;
  CLI::App app{"fgemma: on-device engine for FunctionGemma / Gemma 3 text models"};
  app.require_subcommand(1);
  // The kernels chosen for this CPU (Arm: from its hwcaps) go with the version, for bug reports.
  app.set_version_flag("--version", std::string("fgemma ") + fgemma::VersionString() + " (kernels " +
                                        fgemma::KernelTargetName() + ")");
  auto& commands = Commands();
  std::stable_sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& c : commands) {
    const size_t before = app.get_subcommands({}).size();
    auto run = c.setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) runners.emplace_back(subs.back(), std::move(run));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners) {
      if (sub->parsed()) return run();
    }
  } catch (const std::exception& e) {
    return Fail(std::string("unexpected exception: ") + e.what());
  }
  return Fail("no subcommand given");
}

// Subcommand registry of the `fgemma` CLI. Each cmd_*.cpp registers itself with a static
// CommandRegistration, so adding a subcommand touches only its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace fgemma::cli {

// Adds a subcommand to `app`; the returned callback runs it after parsing and returns the exit code.
using CommandSetup = std::function<std::function<int()>(CLI::App& app)>;

struct CommandRegistration {
  CommandRegistration(int order, CommandSetup setup);
};

struct RegisteredCommand {
  int order;
  CommandSetup setup;
};
std::vector<RegisteredCommand>& Commands();

// Prints "fgemma: error: <message>" to stderr and returns exit code 1.
int Fail(const std::string& message);

}  // namespace fgemma::cli

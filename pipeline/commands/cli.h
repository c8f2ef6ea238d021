// The command line: every subcommand once, in a table of name, help, options and action, so that
// main only parses and dispatches. Each entry binds its options to its own arguments struct.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ctxsim {

struct Subcommand {
  std::string name, help;
  std::string example;                     // one command line, shown by --help
  std::function<void(CLI::App&)> options;  // declares the subcommand's options
  std::function<int()> run;                // its action, after a successful parse; the exit code
};

// The table, with the arguments its options write to (kept alive by the returned object).
struct CommandTable {
  std::vector<Subcommand> commands;
  std::shared_ptr<void> args;
};
CommandTable command_table();

// Parses argv against the table and runs the chosen subcommand. Returns its exit code, or
// 0 for --help and --version. A malformed command line throws UsageError (exit 2); ctxsim::Error
// and JobExit propagate.
int run_command_line(int argc, char** argv);

}  // namespace ctxsim

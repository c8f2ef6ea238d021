// ctxsim's two error tiers and its exit codes. Error: the user's input was wrong — where (file,
// key, line, sample), what, and how to fix it. InternalError (CTXSIM_CHECK): an invariant of
// ctxsim itself broke — a bug, named by its source line. Only `main` catches them.
#pragma once
#include <stdexcept>
#include <string>

namespace ctxsim {

// The exit codes of the ctxsim process.
enum ExitCode : int {
  kExitOk = 0,
  kExitUserError = 1,     // bad input or a failed run: the message names it and the fix
  kExitUsage = 2,         // a malformed command line (an unknown option, a missing argument)
  kExitInternal = 3,      // a bug: the message names the source line
  kExitInterrupted = 75,  // SIGTERM or SIGINT: progress saved, rerun to resume (EX_TEMPFAIL)
};

class Error : public std::runtime_error {
 public:
  // where: "configs/x.yaml:3:5: samples.seq_len" or "data/brown/ca01:12"; may be empty.
  // what:  what is wrong, e.g. "expected an integer, got 'abc'".
  // fix:   what the user should do, e.g. "set it to a whole number such as 128"; may be empty.
  Error(std::string where, std::string what, std::string fix = {})
      : std::runtime_error(compose(where, what, fix)), where_(std::move(where)), what_(std::move(what)), fix_(std::move(fix)) {}

  const std::string& where() const { return where_; }
  const std::string& problem() const { return what_; }
  const std::string& fix() const { return fix_; }

 private:
  // One line, whole: a NUL byte or a line break quoted from the user's input is written as \0,
  // \n or \r (a NUL would end what() there, before the fix).
  static std::string compose(const std::string& where, const std::string& what, const std::string& fix) {
    const std::string s = (where.empty() ? what : where + ": " + what) + (fix.empty() ? std::string() : "; fix: " + fix);
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
      if (c == '\0' || c == '\n' || c == '\r')
        (out += '\\') += c == '\0' ? '0' : c == '\n' ? 'n' : 'r';
      else
        out += c;
    }
    return out;
  }
  std::string where_, what_, fix_;
};

// A malformed command line: an unknown subcommand or option, a missing or malformed argument, two
// that do not go together (exit code kExitUsage, as getopt tools and CLI11 use).
class UsageError : public Error {
 public:
  using Error::Error;
};

// A broken invariant of ctxsim itself, never the user's input: "file.cpp:123: what".
class InternalError : public std::logic_error {
 public:
  InternalError(const char* file, int line, const std::string& what)
      : std::logic_error(std::string(file) + ":" + std::to_string(line) + ": " + what) {}
};

[[noreturn]] inline void internal_failure(const char* file, int line, const std::string& what) { throw InternalError(file, line, what); }

}  // namespace ctxsim

// An internal invariant: its failure is a bug in ctxsim (exit code kExitInternal), reported with
// the source line. CTXSIM_FAIL is the unconditional form.
#define CTXSIM_FAIL(what) ::ctxsim::internal_failure(__FILE__, __LINE__, (what))
#define CTXSIM_CHECK(cond, what)    \
  do {                              \
    if (!(cond)) CTXSIM_FAIL(what); \
  } while (0)

// The one exception type of ctxsim: what was wrong, where (file, key, line, sample) and how
// to fix it. Only `main` catches it; it prints the one-line message and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace ctxsim {

class Error : public std::runtime_error {
 public:
  // where: "configs/x.yaml:3:5: samples.seq_len" or "data/brown/ca01:12"; may be empty.
  // what:  what is wrong, e.g. "expected an integer, got 'abc'".
  // fix:   what the user should do, e.g. "set it to a whole number such as 128"; may be empty.
  Error(std::string where, std::string what, std::string fix = {})
      : std::runtime_error(compose(where, what, fix)),
        where_(std::move(where)), what_(std::move(what)), fix_(std::move(fix)) {}

  const std::string& where() const { return where_; }
  const std::string& problem() const { return what_; }
  const std::string& fix() const { return fix_; }

 private:
  static std::string compose(const std::string& where, const std::string& what,
                             const std::string& fix) {
    std::string s = where.empty() ? what : where + ": " + what;
    if (!fix.empty()) s += "; fix: " + fix;
    return s;
  }
  std::string where_, what_, fix_;
};

}  // namespace ctxsim

#include "pipeline/job/config/yaml_values.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/suggest.h"

namespace ctxsim {

std::string location(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

std::string shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

std::string range_text(int64_t lo, int64_t hi) { return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; }

// A bound as people write it: 0.01, 1e+06, -inf, inf.
std::string number_text(double v) {
  if (v <= -std::numeric_limits<double>::max()) return "-inf";
  if (v >= std::numeric_limits<double>::max()) return "inf";
  std::ostringstream s;
  s << v;
  return s.str();
}

int64_t parse_int(const YAML::Node& n, const std::string& where, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& example) {
  const std::string expect = "expected an integer " + range_text(lo, hi);
  if (!n.IsScalar()) throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a whole number such as " + example);
  const std::string& s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a whole number such as " + example);
  if (v < lo || v > hi) throw Error(where + ": " + key, expect + ", got " + s, "use a value " + range_text(lo, hi));
  return v;
}

double parse_double(const YAML::Node& n, const std::string& where, const std::string& key, double lo, double hi, bool lo_open,
                    const std::string& example) {
  const bool unbounded = number_text(lo) == "-inf" && number_text(hi) == "inf";
  const std::string interval = std::string(lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + "]";
  const std::string expect = unbounded ? "expected a number" : "expected a number in " + interval;
  if (!n.IsScalar()) throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a number such as " + example);
  const std::string& s = n.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw Error(where + ": " + key, expect + ", got " + shown(n), "set " + key + " to a number such as " + example);
  if (v < lo || v > hi || (lo_open && v == lo)) throw Error(where + ": " + key, expect + ", got " + s, "use a value in " + interval);
  return v;
}

bool parse_bool(const YAML::Node& n, const std::string& where, const std::string& key) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    throw Error(where + ": " + key, "expected true or false, got " + shown(n), "set " + key + " to true or false");
  return v;
}

std::string parse_string(const YAML::Node& n, const std::string& where, const std::string& key, const std::vector<std::string>& choices) {
  if (!n.IsScalar()) {
    const std::string expect = choices.empty() ? "expected a string" : "expected one of " + join(choices);
    throw Error(where + ": " + key, expect + ", got " + shown(n), "give " + key + " a single value");
  }
  const std::string& s = n.Scalar();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
    const std::string list = join(choices);
    const std::string guess = did_you_mean(s, choices);
    throw Error(where + ": " + key, "expected one of " + list + ", got '" + s + "'",
                guess.empty() ? "use one of " + list : "did you mean '" + guess + "'?");
  }
  return s;
}

}  // namespace ctxsim

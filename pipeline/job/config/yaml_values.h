// YAML values read from a config file or the command line, with errors that name where
// (file:line:col), the key and the fix; the bounds the key table shares. No key table here: the
// table (config_schema.h) is built from these.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace ctxsim {

constexpr int64_t kMaxCount = 1'000'000'000;  // the bound of counts (samples, documents, units, ids)
constexpr int64_t kMaxSteps = 100'000'000;    // optimizer steps, and counts of steps
constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();
std::string location(const std::string& file, const YAML::Mark& mark);
std::string shown(const YAML::Node& n);  // 'abc', a list, a mapping, nothing
int64_t parse_int(const YAML::Node& n, const std::string& where, const std::string& key, int64_t lo, int64_t hi,
                  const std::string& example);
double parse_double(const YAML::Node& n, const std::string& where, const std::string& key, double lo, double hi, bool lo_open,
                    const std::string& example);
bool parse_bool(const YAML::Node& n, const std::string& where, const std::string& key);
std::string parse_string(const YAML::Node& n, const std::string& where, const std::string& key, const std::vector<std::string>& choices);

}  // namespace ctxsim

// The YAML config schema: a config (its effective YAML, identity and sweep expansion) or one
// ctxsim::Error. The input is the config text; its last line, after a "\n#--\n" marker, when
// present, is one command-line override.
#include <cstddef>
#include <cstdint>
#include <string>

#include "pipeline/job/config/config.h"
#include "pipeline/job/config/sweep.h"
#include "stages/base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (const size_t marker = text.find("\n#--\n"); marker != std::string::npos) {
    overrides.push_back(text.substr(marker + 5));
    text.resize(marker + 1);
  }
  try {
    const ctxsim::Config c = ctxsim::parse_config(text, "fuzz.yaml", overrides);
    const std::string yaml = ctxsim::to_yaml(c);
    const std::string identity = ctxsim::identity_yaml(c);
    if (!ctxsim::identity_differences(identity, c).empty()) __builtin_trap();  // a config is its own identity
    (void)ctxsim::identity_differences(text, c);
    // The effective config reads back as the same config.
    if (ctxsim::to_yaml(ctxsim::parse_config(yaml, "effective.yaml")) != yaml) __builtin_trap();
    if (!c.sweep.empty()) (void)ctxsim::expand_sweep(c);
  } catch (const ctxsim::Error&) {}
  return 0;
}

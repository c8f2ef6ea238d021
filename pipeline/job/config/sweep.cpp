#include "pipeline/job/config/sweep.h"

#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>

#include "stages/base/digest.h"
#include "stages/base/error.h"

namespace ctxsim {
namespace {

// Values as point names show them: a value with '/' by its last components, as few as tell it
// apart from the other values (joined with '/', made safe later); other values as they are.
std::vector<std::string> shortest_distinct_names(const std::vector<std::string>& values) {
  namespace fs = std::filesystem;
  const auto tail = [](const std::string& v, size_t n) {
    if (v.find('/') == std::string::npos) return v;
    std::vector<std::string> parts;
    for (const auto& part : fs::path(v).lexically_normal()) {
      const std::string t = part.string();
      if (!t.empty() && t != "/") parts.push_back(t);
    }
    if (parts.empty()) return v;
    std::string out;
    for (size_t i = parts.size() - std::min(n, parts.size()); i < parts.size(); ++i) out += (out.empty() ? "" : "/") + parts[i];
    return out;
  };
  std::vector<std::string> names(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t n = 1;; ++n) {
      names[i] = tail(values[i], n);
      bool distinct = true;
      for (size_t j = 0; j < values.size() && distinct; ++j) distinct = j == i || values[j] == values[i] || tail(values[j], n) != names[i];
      if (distinct || names[i] == tail(values[i], n + 1)) break;  // all components shown
    }
  }
  return names;
}

// Folds the axes that do not change the forward pass (selection rules, the attention threshold,
// the separator set): every combination becomes one rule of every point's rule list, returned as
// the YAML flow list's items ("" when nothing is folded). The other axes go to `axes`; what was
// folded is described in `folded`.
std::string fold_rule_axes(const Config& c, std::vector<const SweepAxis*>& axes, std::vector<std::string>& folded) {
  std::vector<std::string> rule_texts, betas, seps;
  for (const auto& a : c.sweep) {
    const std::string& k = a.keys[0];
    const bool single = a.keys.size() == 1;
    if (single && k.compare(0, 10, "selection.") == 0) {
      for (const auto& v : a.values[0]) rule_texts.push_back(k.substr(10) + ": " + v);
    } else if (single && k == "statistics.attention_threshold") {
      betas = a.values[0];
    } else if (single && k == "statistics.separators") {
      seps = a.values[0];
    } else {
      axes.push_back(&a);
      continue;
    }
    folded.push_back(k + " (" + std::to_string(a.size()) + " values)");
  }
  std::string rules;
  if (folded.empty()) return rules;
  if (rule_texts.empty()) {
    std::ostringstream base;
    for (const auto& r : c.selection) {
      base.str("");
      base << r.key() << ": " << r.value;
      rule_texts.push_back(base.str());
    }
  }
  if (betas.empty()) betas.push_back("");
  if (seps.empty()) seps.push_back("");
  for (const auto& r : rule_texts)
    for (const auto& b : betas)
      for (const auto& sp : seps)
        rules += std::string(rules.empty() ? "" : ", ") + "{" + r + (b.empty() ? "" : ", attention_threshold: " + b) +
                 (sp.empty() ? "" : ", separators: " + sp) + "}";
  return rules;
}

}  // namespace

std::string safe_folder_name(const std::string& name) {
  std::string s = name;
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  if (s[0] == '-' || s[0] == '.') s[0] = '_';  // not an option to a command, not a hidden folder
  constexpr size_t kMax = 200;                 // file systems allow 255 bytes a component
  if (s.size() > kMax)
    s = s.substr(0, kMax - 17) + "-" + sha256_bytes(reinterpret_cast<const uint8_t*>(name.data()), name.size()).substr(0, 16);
  return s;
}

SweepPlan expand_sweep(const Config& c) {
  namespace fs = std::filesystem;
  SweepPlan plan;
  plan.name = safe_folder_name(!c.sweep_name.empty() ? c.sweep_name
                               : c.source.empty()    ? std::string("sweep")
                                                     : fs::path(c.source).stem().string());
  std::vector<const SweepAxis*> axes;
  const std::string rules = fold_rule_axes(c, axes, plan.folded);
  size_t total = 1;
  for (const auto* a : axes) {
    total *= a->size();
    if (total > kMaxSweepPoints)
      throw Error(a->where + ": sweep", "the sweep has more than " + std::to_string(kMaxSweepPoints) + " points (the product of its axes)",
                  "split it into several sweeps, or zip axes that vary together (sweep.zip)");
  }
  // How each value is shown in point names: paths by as many last components as tell the axis's
  // values apart (model.path=data/models/x -> model.path=x; /a/tiny and /b/tiny -> a_tiny, b_tiny).
  std::vector<std::vector<std::vector<std::string>>> shown(axes.size());  // [axis][key][value]
  for (size_t k = 0; k < axes.size(); ++k)
    for (const auto& values : axes[k]->values) shown[k].push_back(shortest_distinct_names(values));
  for (size_t i = 0; i < total; ++i) {
    SweepPoint p;
    p.index = int64_t(i);
    size_t rest = i;
    // The last axis varies fastest.
    std::vector<size_t> pick(axes.size());
    for (size_t k = axes.size(); k-- > 0;) {
      pick[k] = rest % axes[k]->size();
      rest /= axes[k]->size();
    }
    for (size_t k = 0; k < axes.size(); ++k)
      for (size_t q = 0; q < axes[k]->keys.size(); ++q) {
        const std::string& value = axes[k]->values[q][pick[k]];
        p.values.push_back(axes[k]->keys[q] + "=" + value);
        p.name += (p.name.empty() ? "" : "__") + axes[k]->keys[q] + "-" + shown[k][q][pick[k]];
      }
    p.overrides = p.values;
    p.name = p.name.empty() ? std::string("all") : safe_folder_name(p.name);
    if (!rules.empty()) p.overrides.push_back("selection=[" + rules + "]");
    p.output_dir = (fs::path(c.output.dir) / plan.name / p.name).string();
    p.overrides.push_back("output.dir=" + p.output_dir);
    plan.points.push_back(std::move(p));
  }
  // Two points in one folder would overwrite each other's store.
  std::map<std::string, int64_t> folders;
  for (const auto& p : plan.points) {
    const auto [it, fresh] = folders.emplace(p.name, p.index);
    if (!fresh)
      throw Error(
          (c.source.empty() ? std::string("config") : c.source) + ": sweep",
          "points " + std::to_string(it->second) + " and " + std::to_string(p.index) + " would share the output folder '" + p.name + "'",
          "give the swept values names that still differ when every character but letters, digits, '.', '_' and '-' becomes '_'");
  }
  return plan;
}

}  // namespace ctxsim

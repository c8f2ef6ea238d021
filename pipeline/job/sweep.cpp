#include "pipeline/job/sweep.h"

#include <filesystem>
#include <sstream>

namespace ctxsim {

SweepPlan expand_sweep(const Config& c) {
  namespace fs = std::filesystem;
  SweepPlan plan;
  plan.name = !c.sweep_name.empty() ? c.sweep_name : c.source.empty() ? std::string("sweep") : fs::path(c.source).stem().string();
  // Fold the axes that do not change the forward pass: selection rules, the attention threshold
  // and the separator set. Every combination becomes one rule of every point's rule list.
  std::vector<const SweepAxis*> axes;
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
    plan.folded.push_back(k + " (" + std::to_string(a.size()) + " values)");
  }
  std::string rules;
  if (!plan.folded.empty()) {
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
  }
  size_t total = 1;
  for (const auto* a : axes) total *= a->size();
  const auto safe = [](std::string s) {
    for (auto& ch : s)
      if (ch == '/' || ch == ' ' || ch == '"' || ch == '\'') ch = ch == '/' ? '_' : '-';
    return s;
  };
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
        p.overrides.push_back(axes[k]->keys[q] + "=" + value);
        // Paths are named by their last component: model.path=data/models/x -> model.path=x.
        const std::string shown_value = value.find('/') != std::string::npos ? fs::path(value).filename().string() : value;
        p.name += (p.name.empty() ? "" : ",") + safe(axes[k]->keys[q] + "=" + shown_value);
      }
    if (!rules.empty()) p.overrides.push_back("selection=[" + rules + "]");
    if (p.name.empty()) p.name = "all";
    p.output_dir = (fs::path(c.output.dir) / plan.name / p.name).string();
    p.overrides.push_back("output.dir=" + p.output_dir);
    plan.points.push_back(std::move(p));
  }
  return plan;
}

}  // namespace ctxsim

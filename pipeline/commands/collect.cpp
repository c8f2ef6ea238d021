// `ctxsim collect SWEEP_DIR`: one CSV row per (point, rule, layer, head) with the headline
// statistics of every complete store under the folder, next to their chance rates, for plotting.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string_view>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/store_kinds.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/stats/metrics.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

// A text cell (a sweep folder's name, a rule, vocabulary tokens): quoted as RFC 4180 asks when it
// holds a comma, quote or line break, and, as OWASP recommends against CSV formula injection, one
// that a spreadsheet would run as a formula (beginning with = + - @, a tab or a carriage return)
// gets a leading ' and quotes, so it is shown as the text it is.
std::string csv_field(const std::string& s) {
  const bool formula = !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos;
  if (!formula && s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = formula ? "\"'" : "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// One store's rows, kept until every store is read: the columns of swept keys and separator
// tokens are the union over the stores.
struct StoreRows {
  std::string point;
  std::map<std::string, std::string> swept;  // the store's sweep_point: key -> value
  std::vector<std::string> separators;       // its separator tokens, in its order
  std::vector<std::string> lines;            // "rule,layer,…" up to the separator columns
  std::vector<std::vector<double>> masses;   // per line, per separator
  std::vector<std::string> tails;            // ",top_anchor,top_anchor_samples"
};

std::map<std::string, std::string> swept_values(hid_t file) {
  std::map<std::string, std::string> values;
  if (!h5::has_attr(file, "sweep_point")) return values;  // a store older than the attribute
  std::istringstream lines(h5::get_attr_string(file, "sweep_point"));
  for (std::string line; std::getline(lines, line);)
    if (const size_t eq = line.find('='); eq != std::string::npos && eq > 0) values[line.substr(0, eq)] = line.substr(eq + 1);
  return values;
}

// A head's line: rule, layer, head, samples, every metric, every interval's bounds.
std::string head_line(const std::string& rule, const RuleStats& r, const Baseline& base, const Intervals& iv, int64_t l, int64_t h) {
  const Counts c = r.head(l, h);
  std::ostringstream line;
  line << std::setprecision(6) << csv_field(rule) << "," << l << "," << h << "," << base.samples();
  for (const Metric& m : metrics()) {
    if (m.count && m.count(c, base) <= 0)  // a mean over no count (a store before the statistic): empty
      line << ",";
    else if (m.whole)
      line << "," << int64_t(m.value(c, base));
    else
      line << "," << m.value(c, base);
  }
  for (const Metric& m : metrics()) {
    if (!m.interval) continue;
    if (const Interval* i = iv.of(m, int(l), int(h)); i && !std::isnan(i->lo))
      line << "," << i->lo << "," << i->hi;
    else
      line << ",,";
  }
  return line.str();
}

// One complete run store's rows (the other kinds are refused: collect is for run sweeps).
StoreRows read_rows(const fs::path& path, const std::string& dir) {
  const h5::Id file = open_complete_store(path.string());
  if (const StoreKind& kind = store_kind(file, path.string()); kind.collect_refusal)
    throw Error(path.string(),
                std::string("is a ") + kind.noun + " store (ctxsim " + kind.job + "); collect gathers the run stores of a sweep",
                "move it out of " + dir + ", and " + kind.collect_refusal);
  StoreRows sr;
  sr.point = fs::relative(path.parent_path(), dir).string();
  sr.swept = swept_values(file);
  const auto vocab = store_vocab(file);
  const StoreStats stats = read_store_stats(file, path.string(), int64_t(vocab.size()));
  const Baseline base = baseline_of(stats);
  sr.separators = base.separator_tokens;
  for (size_t ri = 0; ri < stats.rules.size(); ++ri) {
    const RuleStats r = rule_stats_of(stats, ri);
    const Intervals iv = store_intervals(file, path.string(), stats, ri);
    for (int64_t l = 0; l < r.L; ++l)
      for (int64_t h = 0; h < r.H; ++h) {
        const auto top = r.top_anchors(l, h, 1);
        std::vector<double> mass;
        for (size_t u = 0; u < sr.separators.size(); ++u) mass.push_back(base.separator_token_attention(l, h, u));
        sr.lines.push_back(head_line(stats.rules[ri], r, base, iv, l, h));
        sr.masses.push_back(std::move(mass));
        sr.tails.push_back("," + csv_field(top.empty() ? std::string() : token_text(vocab, top[0])) + "," +
                           std::to_string(top.empty() ? 0 : r.anchor_count(l, h, top[0])));
      }
  }
  return sr;
}

// The point's folder, a column per swept key (its value as the sweep gave it), every row of the
// metric table (stages/stats/metrics.h), the bounds of the head's 95% bootstrap interval of each
// that has one (SPEC §5.1; empty cells for a store without units), a column per separator token
// (its attention mass; empty where a store did not measure it) and the head's top anchor.
std::string csv_text(const std::vector<StoreRows>& read, const std::vector<std::string>& keys, const std::vector<std::string>& separators) {
  std::ostringstream csv;
  csv << "point";
  for (const auto& k : keys) csv << "," << csv_field(k);
  csv << ",rule,layer,head,samples";
  for (const Metric& m : metrics()) csv << "," << m.name;
  for (const Metric& m : metrics())
    if (m.interval) csv << "," << m.name << "_lo," << m.name << "_hi";
  for (const auto& t : separators) csv << "," << csv_field("separator_mass[" + t + "]");
  csv << ",top_anchor,top_anchor_samples\n";
  csv << std::setprecision(6);
  for (const StoreRows& sr : read) {
    std::string lead = csv_field(sr.point);
    for (const auto& k : keys) {
      const auto it = sr.swept.find(k);
      lead += "," + (it == sr.swept.end() ? std::string() : csv_field(it->second));
    }
    for (size_t i = 0; i < sr.lines.size(); ++i) {
      csv << lead << "," << sr.lines[i];
      for (const auto& t : separators) {
        const auto at = std::find(sr.separators.begin(), sr.separators.end(), t);
        csv << ",";
        if (at != sr.separators.end()) csv << sr.masses[i][size_t(at - sr.separators.begin())];
      }
      csv << sr.tails[i] << "\n";
    }
  }
  return csv.str();
}

}  // namespace

int cmd_collect(const std::string& dir, const std::string& out_path, std::ostream& out) {
  if (!fs::is_directory(dir)) throw Error(dir, "not a folder", "give the sweep's folder: output.dir/<sweep name>");
  MpiSession::ensure();
  const std::vector<std::string> stores = stores_under(dir);
  const std::string target = out_path.empty() ? (fs::path(dir) / "collect.csv").string() : out_path;
  std::vector<StoreRows> read;
  std::vector<std::string> keys, separators;  // the union, in order of first appearance
  const auto add = [](std::vector<std::string>& to, const std::string& x) {
    if (std::find(to.begin(), to.end(), x) == to.end()) to.push_back(x);
  };
  size_t rows = 0;
  for (const fs::path path : stores) {
    const h5::FileScope scope(path.string());
    const StoreInfo info = inspect_store(path.string());
    if (!info.complete) {
      log_info("collect: skipping " + path.string() +
               (info.kind == StoreInfo::Kind::NotAStore ? " (" + info.what + ")" : " (not complete; rerun its point to finish it)"));
      continue;
    }
    read.push_back(read_rows(path, dir));
    for (const auto& kv : read.back().swept) add(keys, kv.first);
    for (const auto& t : read.back().separators) add(separators, t);
    rows += read.back().lines.size();
  }
  if (read.empty())
    throw Error(dir, "no complete store.h5 under this folder (" + std::to_string(stores.size()) + " found)",
                "run the sweep's points first (ctxsim run CONFIG, or ctxsim submit CONFIG)");
  atomic_write(target, csv_text(read, keys, separators));
  out << "collect: " << rows << " rows from " << read.size() << " store(s) into " << target << "\n";
  return 0;
}

}  // namespace ctxsim

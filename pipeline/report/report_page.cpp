#include "pipeline/report/report_page.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "pipeline/store/hdf5.h"
#include "report_assets.h"  // generated: kExplorerJs and kPageHead, from pipeline/report/
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/render.h"

namespace ctxsim::report {
namespace {

std::string bits_base64(const std::vector<std::pair<int, int>>& cells, int m) {
  std::string bytes((size_t(m) * size_t(m) + 7) / 8, '\0');
  for (const auto& [r, c] : cells) {
    const size_t k = size_t(r) * size_t(m) + size_t(c);
    bytes[k / 8] = char(uint8_t(bytes[k / 8]) | uint8_t(1u << (k % 8)));
  }
  return base64(bytes);
}

// A finite number as JSON writes it (the same digits an ostream gives).
std::string json_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string quantised_base64(const std::vector<float>& v, double lo, double hi) {
  std::string bytes(v.size(), '\0');
  const double span = hi > lo ? hi - lo : 1.0;
  for (size_t k = 0; k < v.size(); ++k) bytes[k] = char(uint8_t(std::lround(std::clamp((double(v[k]) - lo) / span, 0.0, 1.0) * 255)));
  return base64(bytes);
}

// The explorer's data of an example (a JSON object, see explorer.js), pooled coarser
// than legible_block when it would not fit `budget` bytes.
std::string example_data(const StoreData& d, const Example& x, const std::vector<double>& roll, size_t budget) {
  const int L = d.L, H = d.H, n = x.n;
  double att_max = 1e-9;
  std::vector<ValueScale> sim_scale;  // per head, as the figures choose it
  for (int k = 0; k < L * H; ++k) {
    for (float v : x.head(x.attention, k / H, k % H)) att_max = std::max(att_max, double(v));
    sim_scale.push_back(similarity_scale(x.head(x.similarity, k / H, k % H), n));
  }
  const std::vector<float> rollf(roll.begin(), roll.end());
  const double roll_max = std::max(1e-9, double(*std::max_element(rollf.begin(), rollf.end())));
  // Per head: two byte matrices and two bit masks, base64.
  const auto bytes_at = [&](int b) {
    const double m = std::ceil(double(n) / b);
    return 4.0 / 3.0 * double(L * H) * (2 * m * m + m * m / 4) + 8.0 * n + 40.0 * L * H;  // + the scales
  };
  int block = legible_block(n);
  while (bytes_at(block) > double(budget) && block < n) ++block;
  const int m = (n + block - 1) / block;
  std::ostringstream js;
  js << "{\"sample\":" << x.id << ",\"n\":" << n << ",\"m\":" << m << ",\"block\":" << block << ",\"tokens\":[";
  for (size_t i = 0; i < x.labels.size(); ++i) js << (i ? "," : "") << json_str(x.labels[i]);
  js << "],\"attMax\":" << att_max << ",\"rolloutMax\":" << roll_max;
  js << ",\"simLo\":["
     << join_each(
            sim_scale, [](const ValueScale& v) { return json_number(v.lo); }, ",")
     << "],\"simHi\":["
     << join_each(
            sim_scale, [](const ValueScale& v) { return json_number(v.hi); }, ",")
     << "],\"simSeq\":["
     << join_each(
            sim_scale, [](const ValueScale& v) { return std::string(v.map == ColourMap::Viridis ? "1" : "0"); }, ",")
     << "]";
  std::ostringstream a_js, s_js, sel_js, ha_js;
  for (int k = 0; k < L * H; ++k) {
    const auto a = x.head(x.attention, k / H, k % H);
    a_js << (k ? "," : "") << '"' << quantised_base64(pooled(a, n, block), 0, att_max) << '"';
    s_js << (k ? "," : "") << '"'
         << quantised_base64(pooled(x.head(x.similarity, k / H, k % H), n, block), sim_scale[size_t(k)].lo, sim_scale[size_t(k)].hi) << '"';
    sel_js << (k ? "," : "") << '"' << bits_base64(cells_of(x.head(x.selected, k / H, k % H), n, block), m) << '"';
    ha_js << (k ? "," : "") << '"' << bits_base64(cells_of(high_attention(a, n, d.beta), n, block), m) << '"';
  }
  js << ",\"attention\":[" << a_js.str() << "],\"similarity\":[" << s_js.str() << "],\"selected\":[" << sel_js.str()
     << "],\"highAttention\":[" << ha_js.str() << "],\"rollout\":\"" << quantised_base64(pooled(rollf, n, block), 0, roll_max) << "\"}";
  return js.str();
}

// pipeline/report/page.html with the run's values: its line breaks dropped, {{NL}} a line
// break, {{NAME}} a value.
std::string page_head(hid_t file, const StoreData& d) {
  std::string t = kPageHead;
  t = t.substr(t.find("-->\n") + 4);
  t.erase(std::remove(t.begin(), t.end(), '\n'), t.end());
  const std::string rule_note = d.R > 1 ? " (one of " + std::to_string(d.R) + " in the store: ctxsim report --rule NAME for another)" : "";
  const std::vector<std::pair<std::string, std::string>> values = {{"{{NL}}", "\n"},
                                                                   {"{{RUN}}", xml_escape(d.run)},
                                                                   {"{{STORE}}", xml_escape(d.store)},
                                                                   {"{{L}}", std::to_string(d.L)},
                                                                   {"{{H}}", std::to_string(d.H)},
                                                                   {"{{T}}", std::to_string(d.T)},
                                                                   {"{{MODEL}}", xml_escape(h5::get_attr_string(file, "model_path"))},
                                                                   {"{{RULE}}", xml_escape(d.rule)},
                                                                   {"{{RULE_NOTE}}", rule_note},
                                                                   {"{{BETA}}", fixed(d.beta, 2)}};
  for (const auto& [key, value] : values)
    for (size_t at = t.find(key); at != std::string::npos; at = t.find(key, at + value.size())) t.replace(at, key.size(), value);
  return t;
}

// Each head's top anchors, decoded.
void anchor_table(const StoreData& d, std::ostringstream& html) {
  html
      << "<h2 id=\"anchors\">Top anchors per head</h2><p>Anchor: the token that most endpoints of a head's selected pairs are, per sample; "
         "count = samples where it is the anchor.</p><table><tr><th>layer</th><th>head</th><th>top anchors (samples)</th></tr>\n";
  for (int l = 0; l < d.L; ++l)
    for (int h = 0; h < d.H; ++h) {
      html << "<tr><td>" << l << "</td><td>" << h << "</td><td>";
      const auto top = d.stats.top_anchors(l, h, 10);
      for (size_t i = 0; i < top.size(); ++i)
        html << (i ? ", " : "") << "<code>" << xml_escape(token_text(d.vocab, top[i])) << "</code> (" << d.stats.anchor_count(l, h, top[i])
             << ")";
      html << "</td></tr>\n";
    }
}

// The colour maps of the explorer, 256 steps each: viridis and diverging, RGB interleaved.
std::string colour_table() {
  std::string lut;
  for (int k = 0; k < 256; ++k) {
    const Rgb c = colour(ColourMap::Viridis, k / 255.0), v = colour(ColourMap::Diverging, k / 255.0);
    for (int x : {c[0], c[1], c[2], v[0], v[1], v[2]}) lut += (lut.empty() ? "" : ",") + std::to_string(x);
  }
  return lut;
}

[[noreturn]] void over_budget(const StoreData& d, const std::string& what, size_t bytes, int64_t max_bytes) {
  throw Error(d.store, what + " " + std::to_string(bytes) + " bytes, over the budget of " + std::to_string(max_bytes) + " bytes",
              "raise --max-bytes (output.report_max_bytes in a run) or store fewer examples (statistics.examples)");
}

}  // namespace

std::string report_page(hid_t file, const StoreData& d, const std::vector<Entry>& figures, const std::string& figure_dir,
                        const std::vector<std::vector<double>>& rollouts, const std::string& summary, int64_t max_bytes) {
  std::ostringstream html;
  html << page_head(file, d);
  for (const auto& f : figures)
    html << "<figure id=\"fig-" << f.stem << "\"><img alt=\"" << xml_escape(f.caption) << "\" src=\"data:image/png;base64,"
         << base64(read_file_bytes(figure_dir + "/" + f.stem + ".png")) << "\"><figcaption>" << xml_escape(f.caption)
         << " · <a href=\"figures/" << f.stem << ".svg\">SVG</a> · <a href=\"figures/" << f.stem
         << ".png\">PNG</a></figcaption></figure>\n";
  anchor_table(d, html);
  html << "</table>\n<h2 id=\"summary\">Summary</h2><pre>" << xml_escape(summary) << "</pre>\n<script>";
  const std::string script_head = "\nconst L=" + std::to_string(d.L) + ",H=" + std::to_string(d.H) +
                                  ",CAUSAL=" + (d.model.causal ? "true" : "false") + ";const LUT=[" + colour_table() + "];\nconst EX=[";
  // The explorer's data gets what the page and its figures leave of the budget, shared
  // equally by the examples (each pooled coarser until it fits).
  const size_t E = d.example_ids.size();
  const size_t fixed_part = html.str().size() + script_head.size() + std::string(kExplorerJs).size() + 4096;
  if (fixed_part > size_t(max_bytes)) over_budget(d, "the figures alone take", fixed_part, max_bytes);
  size_t per = E ? (size_t(max_bytes) - fixed_part) / E : 0;
  const std::string head = html.str();
  // The size of an example's data is estimated before it is pooled: when the page still comes
  // out over the budget, the examples get that much less and are pooled again.
  for (int attempt = 0;; ++attempt) {
    std::ostringstream script;
    script << script_head;
    // Examples are read again here rather than held: memory stays one example's worth.
    for (size_t e = 0; e < E; ++e) script << (e ? ",\n" : "") << example_data(d, load_example(file, d, e), rollouts[e], per);
    script << "];\n" << kExplorerJs;
    std::string text = head + script.str() + "</script></body></html>\n";
    // The policy admits this one script: the head's {{CSP}} (before any value of the run) is it.
    text.replace(text.find("{{CSP}}"), 7, content_security_policy({script.str()}));
    if (text.size() <= size_t(max_bytes)) return text;
    const size_t over = text.size() - size_t(max_bytes);
    if (attempt == 3 || E == 0 || per <= over / E + 1) over_budget(d, "report.html would be", text.size(), max_bytes);
    per -= over / E + 1;
  }
}

}  // namespace ctxsim::report

#include "pipeline/report/report_data.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "pipeline/job/config/head_list.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/precision.h"
#include "stages/figures/render.h"

namespace fs = std::filesystem;

namespace ctxsim::report {

std::string script_json(const nlohmann::json& value) {
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' && (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string content_security_policy(const std::vector<std::string>& scripts) {
  std::string script_src = "'none'";
  if (!scripts.empty()) {
    script_src.clear();
    for (const auto& s : scripts)
      script_src += (script_src.empty() ? "" : " ") + std::string("'sha256-") + base64(Sha256().update(s).raw()) + "'";
  }
  return "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src " +
         script_src + "; base-uri 'none'; form-action 'none'\">";
}

namespace {

// Slice `index` along the first dimension (and `index2` along the second when >= 0).
template <class T>
std::vector<T> read_slice(hid_t file, const std::string& path, hid_t mem_type, hsize_t index, long long index2 = -1) {
  const h5::Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
  auto dims = h5::dims_of(ds);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = index, count[0] = 1;
  if (index2 >= 0) start[1] = hsize_t(index2), count[1] = 1;
  size_t n = 1;
  for (auto c : count) n *= size_t(c);
  std::vector<T> out(n);
  const h5::Id fspace(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  CTXSIM_H5(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  // A memory space of the selection's own shape lets HDF5 copy whole rows (a flat one makes
  // it walk the selection element by element).
  const h5::Id mspace(H5Screate_simple(int(count.size()), count.data(), nullptr), H5Sclose, "H5Screate_simple");
  CTXSIM_H5(H5Dread(ds, mem_type, mspace, fspace, H5P_DEFAULT, out.data()));
  return out;
}

// The float16 example matrices: read as stored and widened here (HDF5's own float16 -> float
// conversion goes bit by bit, ~10x slower).
std::vector<float> read_half_slice(hid_t file, const std::string& path, hsize_t index) {
  const h5::Id f16 = h5::float16_type();
  const auto raw = read_slice<uint16_t>(file, path, f16, index);
  std::vector<float> out(raw.size());
  std::transform(raw.begin(), raw.end(), out.begin(), half_to_float);
  return out;
}

}  // namespace

StoreData load_store_data(hid_t file, const std::string& store, const std::string& rule) {
  StoreData d;
  d.store = store;
  for (const char* group : {"stats", "stats/baseline", "samples", "examples", "vocab"})
    if (!h5::exists(file, group)) throw Error(store, std::string("missing group /") + group, kDamagedStoreFix);
  d.vocab = store_vocab(file);
  const StoreStats stats = read_store_stats(file, store, int64_t(d.vocab.size()));
  d.rule = rule.empty() ? stats.rules[0] : rule;
  d.rule_index = int(stats.rule_index(d.rule));
  d.R = int(stats.rules.size());
  d.base = baseline_of(stats);
  d.stats = rule_stats_of(stats, size_t(d.rule_index));
  d.intervals = store_intervals(file, store, stats, size_t(d.rule_index));
  d.L = int(d.stats.L), d.H = int(d.stats.H), d.T = int(d.stats.T);
  const long long R = d.R, L = d.L, H = d.H, T = d.T;
  std::vector<hsize_t> dims;
  // The rule's own attention threshold (a folded sweep names it), else the run's.
  const size_t b = d.rule.find(",beta=");
  if (b != std::string::npos) {
    const std::string text = d.rule.substr(b + 6, d.rule.find(',', b + 6) - (b + 6));
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d.beta);
    if (ec != std::errc() || !(d.beta >= 0 && d.beta <= 1))
      throw Error(store, "/stats rule '" + d.rule + "' names no attention threshold in [0, 1]", kDamagedStoreFix);
  } else if (h5::exists(file, "stats/attention")) {
    d.beta = h5::get_attr_double(h5::open_group(file, "stats/attention"), "attention_threshold");
  }
  std::vector<hsize_t> sdims;
  const auto spec = [](const char* group, const char* name) -> const DatasetSpec& { return spec_named(run_datasets(), group, name); };
  d.tokens = read_spec<int32_t>(file, store, spec("samples", "token_ids"), {{"position", T}}, &sdims);
  const long long N = (long long)sdims[0];
  d.n_valid = read_spec<int16_t>(file, store, spec("samples", "n_valid"), {{"sample", N}});
  // Validity is by position: a sample's first n_valid positions; it indexes every matrix.
  for (size_t i = 0; i < d.n_valid.size(); ++i)
    if (d.n_valid[i] < 0 || d.n_valid[i] > d.T)
      throw Error(
          store,
          "/samples/n_valid[" + std::to_string(i) + "] is " + std::to_string(d.n_valid[i]) + ", outside 0 … T = " + std::to_string(d.T),
          kDamagedStoreFix);
  d.example_ids = read_spec<int64_t>(file, store, spec("examples", "sample_ids"), {}, &dims);
  const long long E = (long long)dims[0];
  for (auto id : d.example_ids)
    if (id < 0 || id >= N)
      throw Error(store, "/examples/sample_ids names sample " + std::to_string(id) + ", not in /samples", kDamagedStoreFix);
  if (E > 0) {
    const std::pair<const char*, std::vector<hsize_t>> shapes[] = {
        {"examples/attention", {hsize_t(E), hsize_t(L), hsize_t(H), hsize_t(T), hsize_t(T)}},
        {"examples/similarity", {hsize_t(E), hsize_t(L), hsize_t(H), hsize_t(T), hsize_t(T)}},
        {"examples/selected", {hsize_t(E), hsize_t(R), hsize_t(L), hsize_t(H), hsize_t(T), hsize_t(T)}}};
    for (const auto& [name, want] : shapes) {
      if (!h5::exists(file, name)) throw Error(store, std::string("missing dataset /") + name, kDamagedStoreFix);
      const h5::Id ds(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose, name);
      if (h5::dims_of(ds) != want)
        throw Error(store,
                    std::string("/") + name + " does not have shape [" +
                        join_each(
                            want, [](hsize_t x) { return std::to_string(x); }, ",") +
                        "] (examples, " + (want.size() == 6 ? "rules, " : "") + "layers, heads, T, T)",
                    kDamagedStoreFix);
      h5::check_readable(ds, std::string(name) == "examples/selected" ? h5::Element<uint8_t>::memory() : h5::float16_type().get());
    }
  }
  d.run = fs::path(store).parent_path().filename().string();
  if (d.run.empty()) d.run = store;
  d.model = read_store_model(file, store);
  d.run = "run " + d.run + " · model " + fs::path(h5::get_attr_string(file, "model_path")).filename().string() + " (" + d.model.describe() +
          ") · " + d.rule + " · " + std::to_string(d.base.samples()) + " samples";
  return d;
}

std::vector<std::pair<int, int>> parse_heads(const std::vector<std::string>& given, const StoreData& d) {
  HeadList list = parse_head_list(given);
  if (given.empty())
    for (int64_t l : {int64_t(0), int64_t(d.L / 2), int64_t(d.L - 1)})
      if (std::find(list.begin(), list.end(), std::make_pair(l, int64_t(0))) == list.end()) list.emplace_back(l, 0);
  check_head_list(list, d.L, d.H);
  std::vector<std::pair<int, int>> out;
  for (const auto& [l, h] : list) out.emplace_back(int(l), int(h));
  return out;
}

Example load_example(hid_t file, const StoreData& d, size_t e) {
  Example x;
  x.id = d.example_ids[e];
  x.n = d.n_valid[size_t(x.id)], x.H = d.H, x.T = d.T;
  for (int i = 0; i < x.n; ++i) {
    const int32_t t = d.tokens[size_t(x.id) * size_t(d.T) + size_t(i)];
    x.labels.push_back(token_text(d.vocab, t));
  }
  x.attention = read_half_slice(file, "examples/attention", e);
  x.similarity = read_half_slice(file, "examples/similarity", e);
  x.selected = read_slice<uint8_t>(file, "examples/selected", h5::Element<uint8_t>::memory(), e, d.rule_index);
  return x;
}

std::vector<uint8_t> high_attention(const std::vector<float>& a, int n, double beta) {
  std::vector<uint8_t> v(size_t(n) * size_t(n));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) v[size_t(i * n + j)] = std::max(a[size_t(i * n + j)], a[size_t(j * n + i)]) >= beta;
  return v;
}

std::vector<float> pooled(const std::vector<float>& v, int n, int block) {
  if (block == 1) return v;
  int r = 0, c = 0;
  return pool_blocks(v, n, n, block, r, c);
}

std::vector<std::pair<int, int>> cells_of(const std::vector<uint8_t>& mask, int n, int block) {
  std::vector<std::pair<int, int>> out;
  const int m = (n + block - 1) / block;
  std::vector<uint8_t> seen(size_t(m) * size_t(m), 0);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if (mask[size_t(i) * size_t(n) + size_t(j)] && !seen[size_t(i / block) * size_t(m) + size_t(j / block)]) {
        seen[size_t(i / block) * size_t(m) + size_t(j / block)] = 1;
        out.emplace_back(i / block, j / block);
      }
  return out;
}

}  // namespace ctxsim::report

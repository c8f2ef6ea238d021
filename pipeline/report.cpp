// `ctxsim report STORE [--out DIR]`: headless figures (PNG and SVG) and one self-contained
// report.html (no network: images and data are embedded) with an explorer of the stored
// examples: attention, context similarity and attention rollout per layer and head.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "pipeline/commands.h"
#include "pipeline/comm.h"
#include "pipeline/hdf5.h"
#include "pipeline/run.h"
#include "pipeline/store.h"
#include "stages/accumulator.h"
#include "stages/error.h"
#include "stages/render.h"
#include "stages/rollout.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

std::string base64(const std::string& bytes) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') { o += '\\'; o += char(ch); }
    else if (ch < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", ch); o += b; }
    else o += char(ch);
  }
  return o + "\"";
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char ch : s) o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : std::string(1, ch);
  return o;
}

std::vector<int64_t> i64(hid_t g, const std::string& n) { return h5::read_all<int64_t>(g, n, H5T_NATIVE_INT64); }

}  // namespace

int cmd_report(const std::string& store_path, const std::string& out_arg, int64_t max_bytes, std::ostream& out) {
  ensure_mpi();
  const StoreInfo info = inspect_store(store_path);
  if (!info.exists) throw Error(store_path, "no store here", "give the store.h5 that 'ctxsim run' wrote");
  if (!info.complete)
    throw Error(store_path, "the store is not complete (interrupted or still running): no report written", "rerun the job to finish it");
  const std::string dir = out_arg.empty() ? fs::path(store_path).parent_path().string() : out_arg;
  const fs::path figs = fs::path(dir) / "figures";
  fs::create_directories(figs);
  const h5::Id file(H5Fopen(store_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, ("open " + store_path).c_str());
  for (const char* need : {"stats", "samples", "examples", "vocab"})
    if (!h5::exists(file, need)) throw Error(store_path, std::string("missing group /") + need, "regenerate the store with ctxsim run");
  const h5::Id stats = h5::open_group(file, "stats"), base = h5::open_group(stats, "baseline");
  const std::vector<std::string> rules = store_rules(stats);
  if (rules.empty()) throw Error(store_path, "the store lists no selection rule", "regenerate it");
  const std::string rule = rules[0];
  const h5::Id g = h5::open_group(stats, rule);
  const auto lh = h5::dims_of(h5::Id(H5Dopen2(g, "high_pairs", H5P_DEFAULT), H5Dclose, "high_pairs"));
  const int L = int(lh[0]), H = int(lh[1]);
  const auto hp = i64(g, "high_pairs"), ss = i64(g, "same_sentence"), el = i64(g, "sentence_eligible"), st = i64(g, "same_token"),
             noise = i64(g, "noise"), sep = i64(g, "separator_mass"), hist = i64(g, "distance_hist");
  const auto dist_all = i64(base, "distance_all");
  const int T = int(dist_all.size());
  const double samples = double(i64(base, "samples")[0]), valid = double(i64(base, "valid_pairs")[0]);
  const double ss_chance = double(i64(base, "same_sentence_all")[0]) / std::max(1.0, double(i64(base, "sentence_eligible_all")[0]));
  const double st_chance = double(i64(base, "same_token_all")[0]) / std::max(1.0, valid);
  const std::vector<std::string> vocab = store_vocab(file);
  const std::string run_name = h5::get_attr_string(file, "model_path") + " (" + rule + ")";

  // ------------------------------------------------ figures of the aggregates ------------
  std::vector<std::pair<std::string, std::string>> figures;  // (file stem, caption)
  const auto layer_head = [&](const std::string& stem, const std::string& caption, const std::vector<float>& v, double lo, double hi) {
    std::vector<std::string> labels;
    for (int i = 0; i < std::max(L, H); ++i) labels.push_back(std::to_string(i));
    write_png((figs / (stem + ".png")).string(), heatmap(v, L, H, lo, hi, ColourMap::Viridis, 16));
    std::ofstream((figs / (stem + ".svg")).string()) << heatmap_svg(v, L, H, lo, hi, ColourMap::Viridis, labels, caption + " — " + run_name);
    figures.emplace_back(stem, caption + " (rows: layers 0-" + std::to_string(L - 1) + ", columns: heads)");
  };
  std::vector<float> lift(size_t(L * H)), rep(size_t(L * H)), sepm(size_t(L * H)), nshare(size_t(L * H));
  for (int k = 0; k < L * H; ++k) {
    const double pairs = std::max<double>(1, double(hp[size_t(k)]));
    lift[size_t(k)] = float(el[size_t(k)] > 0 ? double(ss[size_t(k)]) / double(el[size_t(k)]) / ss_chance : 0);
    rep[size_t(k)] = float(double(st[size_t(k)]) / pairs / std::max(1e-12, st_chance));
    sepm[size_t(k)] = float(double(sep[size_t(k)]) / kFixedPointScale / std::max(1.0, samples));
    nshare[size_t(k)] = float(double(noise[size_t(k)]) / pairs);
  }
  const auto maxof = [](const std::vector<float>& v) { return std::max(1e-9, double(*std::max_element(v.begin(), v.end()))); };
  layer_head("same_sentence_lift", "Same-sentence rate of high-similarity pairs / chance", lift, 0, maxof(lift));
  layer_head("repetition_lift", "Repeated-token rate of high-similarity pairs / chance", rep, 0, maxof(rep));
  layer_head("separator_attention", "Mean attention mass on separators", sepm, 0, maxof(sepm));
  layer_head("noise_share", "Share of pairs no explanation covers (noise)", nshare, 0, 1);
  {
    // Distance distribution per layer (rows) and the chance distribution (last row), as shares.
    std::vector<float> d(size_t((L + 1) * T), 0.0f);
    for (int l = 0; l < L; ++l) {
      double tot = 0;
      for (int h = 0; h < H; ++h)
        for (int x = 0; x < T; ++x) tot += double(hist[size_t((l * H + h) * T + x)]);
      for (int h = 0; h < H; ++h)
        for (int x = 0; x < T; ++x) d[size_t(l * T + x)] += float(double(hist[size_t((l * H + h) * T + x)]) / std::max(1.0, tot));
    }
    for (int x = 0; x < T; ++x) d[size_t(L * T + x)] = float(double(dist_all[size_t(x)]) / std::max(1.0, valid));
    std::vector<std::string> labels;
    for (int i = 0; i < std::max(L + 1, T); ++i) labels.push_back(i < L ? "L" + std::to_string(i) : i == L ? "chance" : "");
    write_png((figs / "distance_by_layer.png").string(), heatmap(d, L + 1, T, 0, maxof(d), ColourMap::Viridis, 4));
    std::ofstream((figs / "distance_by_layer.svg").string())
        << heatmap_svg(d, L + 1, T, 0, maxof(d), ColourMap::Viridis, labels, "Share of high-similarity pairs by distance j-i per layer; last row: chance — " + run_name);
    figures.emplace_back("distance_by_layer", "Distance j - i of high-similarity pairs per layer (rows) and chance (last row), columns d = 0…" + std::to_string(T - 1));
  }

  // ------------------------------------------------ the examples ---------------------------
  const auto ids = h5::read_all<int64_t>(h5::open_group(file, "examples"), "sample_ids", H5T_NATIVE_INT64);
  const auto tokens = h5::read_all<int32_t>(h5::open_group(file, "samples"), "token_ids", H5T_NATIVE_INT32);
  const auto n_valid = h5::read_all<int16_t>(h5::open_group(file, "samples"), "n_valid", H5T_NATIVE_INT16);
  std::string explorer_json = "[]";
  if (!ids.empty()) {
    const auto att = h5::read_all<float>(h5::open_group(file, "examples"), "attention", H5T_NATIVE_FLOAT);
    const auto sim = h5::read_all<float>(h5::open_group(file, "examples"), "similarity", H5T_NATIVE_FLOAT);
    const size_t per = size_t(L) * size_t(H) * size_t(T) * size_t(T);
    std::ostringstream js;
    js << "[";
    size_t budget_used = 0;
    for (size_t e = 0; e < ids.size(); ++e) {
      const int n = n_valid[size_t(ids[e])];
      std::vector<std::string> labels;
      for (int i = 0; i < n; ++i) {
        const int32_t t = tokens[size_t(ids[e]) * size_t(T) + size_t(i)];
        labels.push_back(t >= 0 && size_t(t) < vocab.size() ? vocab[size_t(t)] : "?");
      }
      const std::vector<float> a(att.begin() + long(e * per), att.begin() + long((e + 1) * per));
      const std::vector<float> s(sim.begin() + long(e * per), sim.begin() + long((e + 1) * per));
      // Large examples are shown block-pooled (stated in the explorer) to keep the file small.
      const int block = n > 256 ? (n + 255) / 256 : 1;
      const auto square = [&](const std::vector<float>& m, int l, int h) {
        std::vector<float> v(size_t(n) * size_t(n));
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) v[size_t(i * n + j)] = m[((size_t(l) * size_t(H) + size_t(h)) * size_t(T) + size_t(i)) * size_t(T) + size_t(j)];
        return v;
      };
      // Static figures for a few layers, head 0.
      for (int l : {0, L / 2, L - 1}) {
        const std::string stem = "example" + std::to_string(e) + "_L" + std::to_string(l) + "H0";
        const auto av = square(a, l, 0), sv = square(s, l, 0);
        const double smax = std::max(1e-9, double(*std::max_element(sv.begin(), sv.end(), [](float x, float y) { return std::abs(x) < std::abs(y); })));
        const double amax = maxof(av);  // colour scale 0 … the matrix's largest weight
        write_png((figs / (stem + "_attention.png")).string(), heatmap(av, n, n, 0, amax, ColourMap::Viridis, 3));
        std::ofstream((figs / (stem + "_attention.svg")).string()) << heatmap_svg(av, n, n, 0, amax, ColourMap::Viridis, labels, "Attention, sample " + std::to_string(ids[e]) + ", layer " + std::to_string(l) + " head 0");
        write_png((figs / (stem + "_similarity.png")).string(), heatmap(sv, n, n, -std::abs(smax), std::abs(smax), ColourMap::Diverging, 3));
        std::ofstream((figs / (stem + "_similarity.svg")).string()) << heatmap_svg(sv, n, n, -std::abs(smax), std::abs(smax), ColourMap::Diverging, labels, "Context similarity, sample " + std::to_string(ids[e]) + ", layer " + std::to_string(l) + " head 0");
      }
      const auto roll = attention_rollout(a, L, H, T, n);
      std::vector<float> rollf(roll.begin(), roll.end());
      const std::string rstem = "example" + std::to_string(e) + "_rollout";
      write_png((figs / (rstem + ".png")).string(), heatmap(rollf, n, n, 0, maxof(rollf), ColourMap::Viridis, 3));
      std::ofstream((figs / (rstem + ".svg")).string()) << heatmap_svg(rollf, n, n, 0, maxof(rollf), ColourMap::Viridis, labels, "Attention rollout, sample " + std::to_string(ids[e]));
      figures.emplace_back(rstem, "Attention rollout of sample " + std::to_string(ids[e]) + " (Abnar & Zuidema: heads averaged, identity added, rows renormalised, layers multiplied)");
      // Explorer data: per (layer, head) matrices quantised to bytes, base64.
      int pr = 0, pc = 0;
      const auto encode = [&](const std::vector<float>& v, double lo, double hi) {
        const auto pooled = block > 1 ? pool_blocks(v, n, n, block, pr, pc) : v;
        std::string bytes(pooled.size(), '\0');
        for (size_t k = 0; k < pooled.size(); ++k)
          bytes[k] = char(uint8_t(std::lround(std::clamp((double(pooled[k]) - lo) / (hi - lo), 0.0, 1.0) * 255)));
        return base64(bytes);
      };
      double smax_all = 1e-9, amax_all = 1e-9;
      for (float x : s) smax_all = std::max(smax_all, double(std::abs(x)));
      for (float x : a) amax_all = std::max(amax_all, double(x));
      std::ostringstream ex;
      ex << (e ? "," : "") << "{\"sample\":" << ids[e] << ",\"n\":" << n << ",\"block\":" << block << ",\"tokens\":[";
      for (size_t i = 0; i < labels.size(); ++i) ex << (i ? "," : "") << json_string(labels[i]);
      ex << "],\"simMax\":" << smax_all << ",\"attMax\":" << amax_all << ",\"rolloutMax\":" << maxof(rollf) << ",\"attention\":[";
      for (int k = 0; k < L * H; ++k) ex << (k ? "," : "") << "\"" << encode(square(a, k / H, k % H), 0, amax_all) << "\"";
      ex << "],\"similarity\":[";
      for (int k = 0; k < L * H; ++k) ex << (k ? "," : "") << "\"" << encode(square(s, k / H, k % H), -smax_all, smax_all) << "\"";
      ex << "],\"rollout\":\"" << encode(rollf, 0, maxof(rollf)) << "\"}";
      if (budget_used + ex.str().size() > size_t(max_bytes) * 8 / 10) break;  // keep within the size budget
      budget_used += ex.str().size();
      js << ex.str();
    }
    js << "]";
    explorer_json = js.str();
  }

  // ------------------------------------------------ report.html ----------------------------
  std::ostringstream summary;
  print_summary(store_path, SummaryOptions{}, summary);
  std::string lut;
  for (int k = 0; k < 256; ++k) {
    const Rgb c = colour(ColourMap::Viridis, k / 255.0), d = colour(ColourMap::Diverging, k / 255.0);
    lut += (k ? "," : "") + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]) + "," +
           std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
  }
  std::ostringstream html;
  html << "<!doctype html><html><head><meta charset=\"utf-8\"><title>ctxsim report</title><style>"
          "body{font-family:sans-serif;margin:2em;max-width:1200px}img{max-width:100%;image-rendering:pixelated}"
          "figure{margin:1em 0}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}"
          "#explorer canvas{border:1px solid #ccc;image-rendering:pixelated}#hover{font-family:monospace;min-height:1.5em}"
          "</style></head><body>\n<h1>ctxsim report</h1>\n<p>" << html_escape(store_path) << ": " << int64_t(samples) << " samples, "
       << L << " layers x " << H << " heads, model " << html_escape(h5::get_attr_string(file, "model_path")) << ". Figures use rule <b>"
       << html_escape(rule) << "</b>.</p>\n<h2>Explorer</h2><div id=\"explorer\"><label>example <select id=\"ex\"></select></label> "
          "<label>layer <select id=\"layer\"></select></label> <label>head <select id=\"head\"></select></label> "
          "<label>quantity <select id=\"qty\"><option>attention</option><option>similarity</option><option>rollout</option></select></label>"
          "<div id=\"note\"></div><canvas id=\"view\" width=\"512\" height=\"512\"></canvas><div id=\"hover\"></div></div>\n";
  for (const auto& [stem, caption] : figures)
    html << "<figure><img alt=\"" << html_escape(stem) << "\" src=\"data:image/png;base64," << base64(read_file((figs / (stem + ".png")).string()))
         << "\"><figcaption>" << html_escape(caption) << " — <a href=\"figures/" << stem << ".svg\">SVG</a></figcaption></figure>\n";
  html << "<h2>Summary</h2><pre>" << html_escape(summary.str()) << "</pre>\n<script>\n"
       << "const L=" << L << ",H=" << H << ";const EX=" << explorer_json << ";const LUT=[" << lut << "];\n"
       << R"JS(
const $=id=>document.getElementById(id);
function fill(sel,n,prefix){sel.innerHTML='';for(let i=0;i<n;i++){const o=document.createElement('option');o.value=i;o.text=prefix+i;sel.appendChild(o);}}
function bytes(b64){const s=atob(b64);const a=new Uint8Array(s.length);for(let i=0;i<s.length;i++)a[i]=s.charCodeAt(i);return a;}
let cur=null;
function draw(){
  if(!EX.length){$('note').textContent='This store has no examples (statistics.examples).';return;}
  const ex=EX[+$('ex').value],l=+$('layer').value,h=+$('head').value,q=$('qty').value;
  const b64=q==='rollout'?ex.rollout:ex[q][l*H+h];const v=bytes(b64);const n=Math.round(Math.sqrt(v.length));
  const c=$('view'),ctx=c.getContext('2d');c.width=n;c.height=n;c.style.width=Math.min(640,Math.max(256,n*4))+'px';
  const img=ctx.createImageData(n,n);const off=q==='similarity'?3:0;
  for(let i=0;i<n*n;i++){const k=v[i]*6+off;img.data[4*i]=LUT[k];img.data[4*i+1]=LUT[k+1];img.data[4*i+2]=LUT[k+2];img.data[4*i+3]=255;}
  ctx.putImageData(img,0,0);cur={ex,v,n,q};
  $('note').textContent=(ex.block>1?'Block-pooled '+ex.block+'x'+ex.block+' to fit. ':'')+'Sample '+ex.sample+', '+ex.n+' tokens.';
}
$('view').addEventListener('mousemove',e=>{if(!cur)return;const r=e.target.getBoundingClientRect();
  const i=Math.floor((e.clientY-r.top)/r.height*cur.n),j=Math.floor((e.clientX-r.left)/r.width*cur.n);if(i<0||j<0||i>=cur.n||j>=cur.n)return;
  const t=cur.v[i*cur.n+j]/255;const val=cur.q==='similarity'?(2*t-1)*cur.ex.simMax:cur.q==='rollout'?t*cur.ex.rolloutMax:t*cur.ex.attMax;
  const b=cur.ex.block;$('hover').textContent=(cur.ex.tokens[i*b]||'')+' -> '+(cur.ex.tokens[j*b]||'')+': '+val.toPrecision(3);});
fill($('ex'),EX.length,'#');EX.forEach((x,i)=>$('ex').options[i].text='sample '+x.sample);fill($('layer'),L,'L');fill($('head'),H,'H');
['ex','layer','head','qty'].forEach(id=>$(id).addEventListener('change',draw));draw();
</script></body></html>
)JS";
  const std::string html_path = (fs::path(dir) / "report.html").string();
  std::ofstream(html_path + ".tmp") << html.str();
  fs::rename(html_path + ".tmp", html_path);
  out << "report: " << html_path << " (" << html.str().size() / 1024 << " KiB) and " << figures.size() << "+ figures in " << figs.string() << "\n";
  return 0;
}

}  // namespace ctxsim

// Config: defaults, overrides, the shipped configs, and one test per class of bad input, each
// asserting that the message names the file, line, key path and a fix.
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/config_schema.h"
#include "pipeline/job/config/sweep.h"

#include <gtest/gtest.h>

#include "stages/base/error.h"
#include "stages/base/suggest.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

// The one-line message of a failing parse ("" when it parses).
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "cfg.yaml", overrides);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsFollowSpec) {
  const Config c = parse_config("corpus: {format: brown}\n", "cfg.yaml");
  EXPECT_EQ(c.samples.seq_len, 128);
  EXPECT_EQ(c.samples.num_samples, 20000);
  EXPECT_EQ(c.samples.seed, 42);
  EXPECT_EQ(c.samples.windows, WindowMode::Sentences);
  EXPECT_EQ(c.samples.stride_sentences, 1);
  ASSERT_EQ(c.selection.size(), 1u);
  EXPECT_EQ(c.selection[0].name(), "top_fraction=0.01");
  EXPECT_DOUBLE_EQ(c.statistics.attention_threshold, 0.1);
  EXPECT_EQ(c.statistics.separators, (std::vector<std::string>{".", ",", "[SEP]"}));
  EXPECT_EQ(c.model.vector, HeadVector::Context);
  EXPECT_EQ(c.model.dtype, Precision::Float32);
}

TEST(Config, ValuesAndSelectionList) {
  const Config c = parse_config(
      "samples:\n  seq_len: 64\n  windows: documents\nselection:\n  - top_fraction: 0.005\n"
      "  - relative_to_max: 0.9\n  - absolute: -2.5\nruntime:\n",
      "cfg.yaml");
  EXPECT_EQ(c.samples.seq_len, 64);
  EXPECT_EQ(c.samples.windows, WindowMode::Documents);
  ASSERT_EQ(c.selection.size(), 3u);
  EXPECT_EQ(c.selection[1].kind, SelectionRule::Kind::RelativeToMax);
  EXPECT_DOUBLE_EQ(c.selection[2].value, -2.5);
  EXPECT_EQ(c.origin.at("samples.seq_len"), "cfg.yaml:2:12");
}

TEST(Config, OverridesWinAndAreChecked) {
  const Config c = parse_config("samples: {seq_len: 64}\n", "cfg.yaml",
                                {"samples.seq_len=32", "selection.relative_to_max=0.8", "statistics.separators=[\".\"]"});
  EXPECT_EQ(c.samples.seq_len, 32);
  EXPECT_EQ(c.selection.size(), 1u);
  EXPECT_EQ(c.selection[0].name(), "relative_to_max=0.8");
  EXPECT_EQ(c.statistics.separators, (std::vector<std::string>{"."}));
  EXPECT_EQ(c.origin.at("samples.seq_len"), "command line");
  EXPECT_HAS(error_of("samples: {}\n", {"samples.seqlen=3"}), "did you mean 'samples.seq_len'?");
  EXPECT_HAS(error_of("samples: {}\n", {"samples.seq_len=abc"}), "command line 'samples.seq_len=abc'");
  EXPECT_HAS(error_of("samples: {}\n", {"noequals"}), "key.sub=value");
}

TEST(Config, EffectiveYamlRoundTrips) {
  const Config a = parse_config("samples: {seq_len: 96, seed: 7}\nselection: [{absolute: 3}, {top_fraction: 0.02}]\n", "cfg.yaml");
  const std::string text = to_yaml(a);
  const Config b = parse_config(text, "effective.yaml");
  EXPECT_EQ(to_yaml(b), text);
  EXPECT_EQ(b.samples.seq_len, 96);
  EXPECT_EQ(b.selection.size(), 2u);
  for (const auto& key : config_keys()) {
    const std::string leaf = key.substr(key.find('.') + 1);
    if (key.rfind("selection.", 0) != 0) { EXPECT_HAS(text, leaf + ":"); }
  }
}

// A run's identity is compared key by key with what a store holds; a stored config that lacks a
// section (written by hand, or by another version) names the keys instead of failing.
TEST(Config, IdentityDifferencesNameKeysAndSurviveMissingSections) {
  const Config ours = parse_config("samples: {seed: 7}\n", "cfg.yaml");
  EXPECT_TRUE(identity_differences(identity_yaml(ours), ours).empty());
  const Config other = parse_config("samples: {seed: 8}\nruntime: {unit_size: 32}\n", "cfg.yaml");
  const auto d = identity_differences(identity_yaml(other), ours);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "samples.seed: 8 → 7");
  EXPECT_HAS(d[1], "runtime.unit_size: 32 → ");
  // A stored config without a section (or key) ran with its defaults: compared as such.
  EXPECT_TRUE(identity_differences("samples: {seed: 7}\n", ours).empty());
  const Config beta = parse_config("samples: {seed: 7}\nstatistics: {attention_threshold: 0.2}\n", "cfg.yaml");
  const auto d_beta = identity_differences("samples: {seed: 7}\n", beta);
  ASSERT_EQ(d_beta.size(), 1u);
  EXPECT_HAS(d_beta[0], "statistics.attention_threshold: 0.1");
  EXPECT_EQ(identity_differences("[1, 2]\n", ours), std::vector<std::string>{"the store's config attribute is not a mapping"});
  // Each job compares the keys it reads: pretrain keys never refuse a run, selection never a pretraining.
  const Config trained = parse_config("samples: {seed: 7}\npretrain: {hidden: 128}\n", "cfg.yaml");
  EXPECT_TRUE(identity_differences(identity_yaml(ours), trained).empty());
  EXPECT_EQ(identity_differences(identity_yaml(ours, job_kind_named("pretrain")), trained, job_kind_named("pretrain")),
            std::vector<std::string>{"pretrain.hidden: 256 → 128"});
  const Config other_rule = parse_config("selection: {absolute: 3}\npretrain: {hidden: 128}\n", "cfg.yaml");
  EXPECT_TRUE(identity_differences(identity_yaml(trained, job_kind_named("pretrain")), other_rule, job_kind_named("pretrain")).empty());
  // samples.seed and num_samples choose a run's samples; pretraining trains on every window.
  EXPECT_TRUE(identity_differences(identity_yaml(Config{}, job_kind_named("pretrain")), ours, job_kind_named("pretrain")).empty());
}

// A job is a row of job_kinds(): the section of a config file says whose it is, and each key
// counts for the identity of the jobs that read it (a row's bit), no other's.
TEST(Config, JobKindsAreRowsOfSectionsAndKeys) {
  for (const char* job : {"run", "segment", "prune", "pretrain"}) EXPECT_STREQ(job_kind_named(job).name(), job);
  EXPECT_EQ(job_kind_of(parse_config("samples: {seed: 7}\n", "cfg.yaml")), job_kind_named("run"));
  for (const JobKindRow& row : job_kinds()) {
    if (!*row.section) continue;
    const JobKind kind = job_kind_of(parse_config(std::string(row.section) + ": {}\n", "cfg.yaml"));
    EXPECT_STREQ(kind.name(), row.name);
    // The keys of a job's own section are read by that job alone.
    for (const Field& f : schema()) {
      if (f.path.rfind(std::string(row.section) + ".", 0) != 0) continue;
      for (const JobKindRow& other : job_kinds()) {
        EXPECT_EQ(f.used_by_job(job_kind_named(other.name)), other.name == std::string(row.name)) << f.path << " " << other.name;
      }
    }
  }
  // An override of a job's key does not make a run's config that job's.
  EXPECT_EQ(job_kind_of(parse_config("samples: {seed: 7}\n", "cfg.yaml", {"segment.seed=3"})), job_kind_named("run"));
}

TEST(ConfigErrors, UnknownKeyListsTheKeys) {
  const std::string m = error_of("samples:\n  windowz_mode: 3\n");
  EXPECT_HAS(m, "cfg.yaml:2:3");
  EXPECT_HAS(m, "samples.windowz_mode: unknown key");
  EXPECT_HAS(m, "seq_len");  // the fix lists the section's keys
}

TEST(ConfigErrors, TypoGetsDidYouMean) {
  EXPECT_HAS(error_of("samples:\n  seq_lenn: 64\n"), "did you mean 'samples.seq_len'?");
  EXPECT_HAS(error_of("sampels:\n  seq_len: 64\n"), "did you mean 'samples'?");
  // A key under the wrong section is pointed to its section.
  EXPECT_HAS(error_of("model:\n  seq_len: 64\n"), "did you mean 'samples.seq_len'?");
  EXPECT_HAS(error_of("selection:\n  - top_fractoin: 0.1\n"), "did you mean 'selection.top_fraction'?");
  EXPECT_HAS(error_of("model: {vector: contxt}\n"), "did you mean 'context'?");
}

TEST(ConfigErrors, WrongType) {
  const std::string m = error_of("samples:\n  seq_len: many\n");
  EXPECT_HAS(m, "cfg.yaml:2:12: samples.seq_len: expected an integer in [3, 8192], got 'many'");
  EXPECT_HAS(m, "fix: set samples.seq_len to a whole number such as 128");
  EXPECT_HAS(error_of("samples: {seq_len: 12.5}\n"), "expected an integer");
  EXPECT_HAS(error_of("output: {overwrite: maybe}\n"), "output.overwrite: expected true or false");
  EXPECT_HAS(error_of("statistics: {separators: \".\"}\n"), "statistics.separators: expected a list of tokens");
  EXPECT_HAS(error_of("samples: 5\n"), "samples: expected a mapping");
  EXPECT_HAS(error_of("selection: 0.01\n"), "selection: expected a rule");
  EXPECT_HAS(error_of("corpus: {path: [a, b]}\n"), "corpus.path: expected a string, got a list");
}

TEST(ConfigErrors, OutOfRange) {
  EXPECT_HAS(error_of("samples: {seq_len: 2}\n"), "samples.seq_len: expected an integer in [3, 8192], got 2");
  EXPECT_HAS(error_of("samples: {num_samples: 0}\n"), "samples.num_samples");
  EXPECT_HAS(error_of("selection: [{top_fraction: 1.5}]\n"), "selection[0].top_fraction: expected a number in (0");
  EXPECT_HAS(error_of("selection: [{top_fraction: 0}]\n"), "use a value in (0");
  EXPECT_HAS(error_of("statistics: {attention_threshold: -0.1}\n"), "statistics.attention_threshold");
  EXPECT_HAS(error_of("statistics: {examples: [0, -1]}\n"), "statistics.examples[1]");
}

TEST(ConfigErrors, MalformedYamlGivesLine) {
  const std::string m = error_of("samples:\n  seq_len: 64\n  windows: [sentences\n");
  EXPECT_HAS(m, "cfg.yaml:");
  EXPECT_HAS(m, "malformed YAML");
  const std::string tab = error_of("samples:\n  seq_len: 64\n bad: : :\n");
  EXPECT_HAS(tab, "cfg.yaml:3:");
}

TEST(ConfigErrors, EmptyFile) {
  EXPECT_HAS(error_of(""), "cfg.yaml: the config is empty");
  EXPECT_HAS(error_of("# only a comment\n"), "the config is empty");
  EXPECT_HAS(error_of("- a\n- b\n"), "expected a mapping of sections");
}

TEST(ConfigErrors, OneDocumentPerFileAndAStrayCommaEndsToo) {
  EXPECT_HAS(error_of("samples: {seq_len: 64}\n---\nsamples: {seq_len: 32}\n"), "cfg.yaml:2:1: a second YAML document starts here");
  // yaml-cpp 0.7's LoadAll loops forever on these (fuzzing found it): an error, at once.
  EXPECT_HAS(error_of("- a\n, b\n"), "a second YAML document starts here");
  EXPECT_HAS(error_of("  ,"), "a second YAML document starts here");
  EXPECT_HAS(error_of("samples: {seq_len: 64}\n,\n"), "cfg.yaml:");
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_HAS(error_of("samples:\n  seq_len: 64\n  seq_len: 32\n"), "cfg.yaml:3:3: samples.seq_len: the key appears twice");
}

TEST(ConfigErrors, MissingFilesNameTheKeyAndLine) {
  test::TempDir dir;
  const auto p = dir.write("c.yaml", "corpus:\n  path: /no/such/corpus\nmodel:\n  vocab: /no/vocab.txt\n");
  const Config c = load_config(p);
  try {
    check_paths(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_HAS(m, p + ":2:9: corpus.path: '/no/such/corpus' does not exist");
    EXPECT_HAS(m, "scripts/setup.sh");
  }
  EXPECT_THROW(load_config((dir.path / "missing.yaml").string()), Error);
  try {
    load_config((dir.path / "missing.yaml").string());
  } catch (const Error& e) { EXPECT_HAS(std::string(e.what()), "the config file does not exist"); }
}

TEST(ShippedConfigs, DefaultAndPaperValidate) {
  CTXSIM_REQUIRE_DATA();
  for (const char* name : {"configs/default.yaml", "configs/paper.yaml"}) {
    const Config c = load_config(name);
    EXPECT_NO_THROW(check_paths(c)) << name;
    EXPECT_EQ(c.samples.seq_len, 128) << name;
  }
  EXPECT_EQ(load_config("configs/default.yaml").samples.num_samples, 2000);
  EXPECT_EQ(load_config("configs/paper.yaml").samples.num_samples, 20000);
  EXPECT_EQ(load_config("configs/paper.yaml").model.name, "bert-base-uncased");
}

TEST(Sweep, CartesianProductInOrderWithDeterministicNames) {
  const Config c = parse_config(
      "output: {dir: out}\nsweep:\n  name: s\n  model.vector: [context, projected]\n"
      "  samples.seq_len: [64, 128, 256]\n",
      "cfg.yaml");
  const SweepPlan p = expand_sweep(c);
  EXPECT_EQ(p.name, "s");
  ASSERT_EQ(p.points.size(), 6u);
  EXPECT_EQ(p.points[0].name, "model.vector-context__samples.seq_len-64");
  EXPECT_EQ(p.points[1].name, "model.vector-context__samples.seq_len-128");
  EXPECT_EQ(p.points[5].name, "model.vector-projected__samples.seq_len-256");
  EXPECT_EQ(p.points[5].output_dir, "out/s/model.vector-projected__samples.seq_len-256");
  EXPECT_EQ(p.points[5].values, (std::vector<std::string>{"model.vector=projected", "samples.seq_len=256"}));
  EXPECT_EQ(p.points[5].overrides, (std::vector<std::string>{"model.vector=projected", "samples.seq_len=256",
                                                             "output.dir=out/s/model.vector-projected__samples.seq_len-256"}));
  // Applying a point's overrides gives that point's config.
  const Config point = parse_config("output: {dir: out}\n", "cfg.yaml", p.points[3].overrides);
  EXPECT_EQ(point.model.vector, HeadVector::Projected);
  EXPECT_EQ(point.samples.seq_len, 64);
  EXPECT_EQ(expand_sweep(c).points[4].name, p.points[4].name);  // deterministic
}

TEST(Sweep, ZipGroupsVaryTogether) {
  const Config c = parse_config(
      "sweep:\n  zip:\n    - {model.path: [a/m1, b/m2], model.dtype: [float32, float64]}\n"
      "  samples.seed: [1, 2]\n",
      "grid.yaml");
  const SweepPlan p = expand_sweep(c);
  EXPECT_EQ(p.name, "grid");  // the file's stem
  ASSERT_EQ(p.points.size(), 4u);
  EXPECT_EQ(p.points[0].name, "model.path-m1__model.dtype-float32__samples.seed-1");
  EXPECT_EQ(p.points[3].name, "model.path-m2__model.dtype-float64__samples.seed-2");
  EXPECT_EQ(p.points[3].values, (std::vector<std::string>{"model.path=b/m2", "model.dtype=float64", "samples.seed=2"}));
}

// Folder names of sweep points hold only the portable file name characters, so that no shell
// word splits or globs them and every file system takes them; the values are in the store.
TEST(Sweep, PointFoldersAreSafeForEveryShellAndFileSystem) {
  const auto portable = [](const std::string& s) {
    return !s.empty() && s.size() <= 200 && s[0] != '-' && s[0] != '.' &&
           s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  };
  EXPECT_EQ(safe_folder_name("a b*c?[d]$e`f'g\"h;i&j|k<l>m(n)o{p}q,r=s:t%u"), "a_b_c__d__e_f_g_h_i_j_k_l_m_n_o_p_q_r_s_t_u");
  EXPECT_EQ(safe_folder_name("-rf"), "_rf");
  EXPECT_EQ(safe_folder_name(".hidden"), "_hidden");
  EXPECT_EQ(safe_folder_name(".."), "_..");
  EXPECT_EQ(safe_folder_name("\xc3\xa9t\xc3\xa9"), "__t__");  // UTF-8 bytes too
  const std::string long_a(300, 'a'), long_b = std::string(299, 'a') + "b";
  EXPECT_TRUE(portable(safe_folder_name(long_a)));
  EXPECT_NE(safe_folder_name(long_a), safe_folder_name(long_b));  // the digest of the whole tells them apart
  const Config c = parse_config(
      "output: {dir: out}\nsweep:\n  corpus.path: [\"data/my corpus\", \"-x;rm *\"]\n  statistics.top_anchors: [1, 2]\n", "w e=ird.yaml");
  const SweepPlan p = expand_sweep(c);
  EXPECT_EQ(p.name, "w_e_ird");
  ASSERT_EQ(p.points.size(), 4u);
  EXPECT_EQ(p.points[0].name, "corpus.path-my_corpus__statistics.top_anchors-1");
  EXPECT_EQ(p.points[2].name, "corpus.path--x_rm____statistics.top_anchors-1");
  for (const auto& point : p.points) EXPECT_TRUE(portable(point.name)) << point.name;
  EXPECT_EQ(p.points[2].values, (std::vector<std::string>{"corpus.path=-x;rm *", "statistics.top_anchors=1"}));
}

TEST(Sweep, RuleAxesAreFoldedIntoOneRun) {
  const Config c = parse_config(
      "sweep:\n  selection.top_fraction: [0.005, 0.01]\n  selection.absolute: [2.5]\n"
      "  samples.seq_len: [64, 128]\n",
      "cfg.yaml");
  const SweepPlan p = expand_sweep(c);
  ASSERT_EQ(p.points.size(), 2u);  // only seq_len makes jobs
  EXPECT_EQ(p.folded.size(), 2u);
  const Config point = parse_config("samples: {}\n", "cfg.yaml", p.points[0].overrides);
  ASSERT_EQ(point.selection.size(), 3u);
  EXPECT_EQ(point.selection[0].name(), "top_fraction=0.005");
  EXPECT_EQ(point.selection[2].name(), "absolute=2.5");
  const Config only_rules = parse_config("sweep: {selection.relative_to_max: [0.8, 0.9]}\n", "cfg.yaml");
  EXPECT_EQ(expand_sweep(only_rules).points.size(), 1u);
  EXPECT_EQ(expand_sweep(only_rules).points[0].name, "all");
}

TEST(Sweep, AttentionThresholdAndSeparatorAxesAreFoldedToo) {
  const Config c = parse_config(
      "selection: [{top_fraction: 0.01}]\nsweep:\n  statistics.attention_threshold: [0.05, 0.2]\n"
      "  statistics.separators: [[\".\"], [\",\", \"[SEP]\"]]\n  samples.seed: [1, 2]\n",
      "cfg.yaml");
  const SweepPlan p = expand_sweep(c);
  ASSERT_EQ(p.points.size(), 2u);  // only the seed makes jobs
  EXPECT_EQ(p.folded.size(), 2u);
  const Config point = parse_config("samples: {}\n", "cfg.yaml", p.points[1].overrides);
  ASSERT_EQ(point.selection.size(), 4u);  // 1 rule x 2 thresholds x 2 separator sets
  EXPECT_EQ(point.selection[0].name(), "top_fraction=0.01,beta=0.05,separators=.");
  EXPECT_EQ(point.selection[3].name(), "top_fraction=0.01,beta=0.2,separators=,|[SEP]");
  EXPECT_EQ(point.samples.seed, 2);
  // The effective YAML keeps the per-rule settings (a store's identity).
  EXPECT_NE(to_yaml(point).find("attention_threshold: 0.2"), std::string::npos);
  EXPECT_HAS(error_of("selection: [{top_fraction: 0.01, absolute: 2}]\n"), "a rule has one selection key");
  EXPECT_HAS(error_of("selection: [{attention_threshold: 0.2}]\n"), "no selection key");
}

TEST(Sweep, BadAxesGetConfigErrors) {
  EXPECT_HAS(error_of("sweep:\n  samples.seqlen: [64]\n"), "sweep.samples.seqlen: unknown key; fix: did you mean 'samples.seq_len'?");
  EXPECT_HAS(error_of("sweep:\n  samples.seq_len: [64, lots]\n"), "sweep.samples.seq_len[1]: samples.seq_len: expected an integer");
  EXPECT_HAS(error_of("sweep:\n  samples.seq_len: 64\n"), "expected a non-empty list");
  EXPECT_HAS(error_of("sweep:\n  selection.top_fraction: [2]\n"), "expected a number in (0");
  EXPECT_HAS(error_of("sweep:\n  zip:\n    - {samples.seed: [1, 2], samples.seq_len: [64]}\n"), "same number of values");
  EXPECT_HAS(error_of("sweep:\n  output.dir: [a, b]\n"), "cannot be swept");
}

TEST(ShippedSweeps, ExpandAsDocumented) {
  EXPECT_EQ(expand_sweep(load_config("configs/sweeps/thresholds.yaml")).points.size(), 1u);
  EXPECT_EQ(expand_sweep(load_config("configs/sweeps/vectors.yaml")).points.size(), 4u);
  EXPECT_EQ(expand_sweep(load_config("configs/sweeps/control.yaml")).points.size(), 4u);
}

TEST(DidYouMean, PicksCloseSpellingsOnly) {
  EXPECT_EQ(did_you_mean("seqlen", {"seq_len", "seed"}), "seq_len");
  EXPECT_EQ(did_you_mean("zzzzzz", {"seq_len", "seed"}), "");
}

}  // namespace
}  // namespace ctxsim

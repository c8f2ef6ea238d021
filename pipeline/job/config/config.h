// The run configuration: one struct mirroring the YAML sections (defaults and units in
// comments), loaded from a file plus `key.sub=value` overrides and validated with errors that
// name the file, line, key path and fix. The schema is the key table in config_schema.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stages/base/precision.h"
#include "stages/stats/selection.h"
#include "stages/text/corpus.h"
#include "stages/text/samples.h"

namespace ctxsim {

// The choice keys' values (their spellings are in the schema table of config.cpp).
enum class HeadVector { Context, Projected };  // SPEC §2: o_i, or o_i W_O[h]
enum class Device { Auto, Cpu, Cuda };
enum class LowerCase { Auto, True, False };  // Auto: tokenizer_config.json, else true
enum class SaveDtype { Float32, Float16 };   // pretrain: dtype of the exported weights

// A choice value as the config spells it ("sentences", "float32", …).
template <class E>
std::string name_of(E value);

// One axis of a sweep: a key with its values, or a zip group of keys whose values vary together.
struct SweepAxis {
  std::vector<std::string> keys;                 // dotted config keys
  std::vector<std::vector<std::string>> values;  // [key][i]: each value as YAML (flow) text
  std::string where;                             // file:line:col of the axis, for messages
  size_t size() const { return values.empty() ? 0 : values[0].size(); }
};

struct Config {
  struct Corpus {
    CorpusFormat format = CorpusFormat::Brown;      // brown | text | jsonl
    std::string path = "data/brown";                // folder or file, relative to the working directory
    std::string text_field = "text";                // jsonl: member holding each document's text
    InvalidUtf8 invalid_utf8 = InvalidUtf8::Error;  // error | replace (with U+FFFD)
    int64_t max_documents = 0;                      // 0 = all documents, else the first N
    int64_t heldout_every = 0;                      // N > 0: documents N-1, 2N-1, … are held out (never pretrained on)
    DocumentSplit split = DocumentSplit::All;       // run: all | train | heldout documents
  } corpus;
  struct Samples {
    int64_t seq_len = 128;                       // T: tokens per sample incl. [CLS] and [SEP]
    WindowMode windows = WindowMode::Sentences;  // sentences | documents
    int64_t stride_sentences = 1;                // sentences mode: a window every N sentence starts
    int64_t num_samples = 20000;                 // windows drawn (all when fewer exist)
    int64_t seed = 42;                           // SplitMix64 seed of the draw
  } samples;
  struct Model {
    std::string path;                           // Hugging Face model folder (config.json, model.safetensors, vocab.txt)
    std::string name;                           // or a name resolved offline in the HF cache, e.g. bert-base-uncased
    std::string vocab;                          // vocab.txt; empty = <model folder>/vocab.txt
    LowerCase do_lower_case = LowerCase::Auto;  // auto (tokenizer_config.json, else true) | true | false
    Precision dtype = Precision::Float32;       // float32 | bfloat16 | float64
    HeadVector vector = HeadVector::Context;    // context | projected (SPEC §2)
    bool tf32 = false;                          // CUDA: float32 matmuls in TF32 (faster; moves near-tied pairs)
  } model;
  std::vector<SelectionRule> selection = {SelectionRule{}};  // SPEC §3; evaluated in one pass
  struct Statistics {
    double attention_threshold = 0.1;                           // beta of SPEC §4.6
    std::vector<std::string> separators = {".", ",", "[SEP]"};  // tokens of SPEC §4.7
    std::vector<int64_t> examples = {0};                        // sample ids whose full matrices are stored
    int64_t top_anchors = 10;                                   // anchors listed per head in reports
  } statistics;
  // `ctxsim pretrain` (masked-LM training of a BERT encoder on the corpus); run ignores it.
  struct Pretrain {
    std::string family = "bert";                // the family trained (its layers and its head's objective)
    int64_t layers = 6;                         // encoder layers
    int64_t hidden = 256;                       // hidden size
    int64_t heads = 8;                          // attention heads (divide hidden)
    int64_t intermediate = 1024;                // feed-forward size
    int64_t steps = 1000;                       // optimizer steps
    int64_t batch_size = 32;                    // samples per step, over all ranks together
    double learning_rate = 1e-3;                // peak, after warmup
    int64_t warmup_steps = 100;                 // linear warmup from 0, then linear decay to 0 at `steps`
    double weight_decay = 0.01;                 // AdamW, decoupled; not on biases and LayerNorm
    double clip_norm = 1.0;                     // global gradient norm clip; 0 = off
    double dropout = 0.1;                       // hidden and attention-probability dropout
    double mask_fraction = 0.15;                // of the non-special tokens: 80% [MASK], 10% random, 10% kept
    int64_t seed = 0;                           // initial weights, sample order, masks and dropout
    int64_t checkpoint_steps = 100;             // a durable checkpoint every N steps (and on SIGTERM/SIGINT)
    int64_t eval_steps = 100;                   // held-out loss and accuracy every N steps
    int64_t eval_samples = 256;                 // held-out samples evaluated (fixed masks)
    SaveDtype save_dtype = SaveDtype::Float32;  // float32 | float16: the exported weights
    std::string model_out;                      // the trained HF folder; empty = <output.dir>/model
    std::string init_out;                       // the step-0 HF folder; empty = <output.dir>/init
  } pretrain;
  // `ctxsim segment` (topic segmentation on Choi's benchmark regenerated from the corpus); run
  // and pretrain ignore it.
  struct Segment {
    int64_t documents = 0;             // test documents per subset; 0 = Choi's (400 of 3-11, 100 each of 3-5, 6-8, 9-11)
    int64_t dev_documents = 100;       // documents of 3-11 (another seed) on which the best layer is chosen
    int64_t seed = 2000;               // draws the test documents
    int64_t block_window = 3;          // sentences per block on each side of a gap (depth-score methods)
    int64_t smoothing = 1;             // gap scores averaged over +-N gaps; 0 = none
    int64_t c99_mask = 11;             // side of C99's rank mask (odd)
    int64_t attention_layers = 2;      // final layers whose gap attention `attention-final` averages
    std::string method = "heads-c99";  // what `segment --text` uses: heads-c99 | heads-depth | attention
    int64_t layer = -1;                // the layer `segment --text` uses; -1 = the last
  } segment;
  // `ctxsim prune` (head importance, ablation and pruning curves on a masked-LM, SPEC §8); the
  // other jobs ignore it.
  struct Prune {
    int64_t random_seeds = 5;                    // random orders (seeds 1 … N), their curves a band
    std::string scores_from;                     // a run store whose per-head score is one more order; empty = none
    std::vector<std::string> score = {"noise"};  // its scores, an order each (stages/prune/prune.h's rows)
  } prune;
  struct Output {
    std::string dir = "runs/default";     // store.h5 and report go here
    bool overwrite = false;               // replace an existing store with a different config
    bool report = true;                   // write the report at the end of a run
    int64_t report_max_bytes = 25 << 20;  // size budget of report.html
  } output;
  struct Runtime {
    int64_t threads = 0;                 // per rank; 0 = OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else cores
    int64_t batch_size = 8;              // samples per forward pass
    int64_t unit_size = 64;              // samples per work unit (never derived from rank count)
    int64_t attention_rows = 0;          // query rows per attention tile; 0 = by size, >= T = whole maps
    Device device = Device::Auto;        // auto | cpu | cuda
    double progress_seconds = 30;        // seconds between progress lines in non-terminal logs
    int64_t flush_units = 1;             // make progress durable every N completed units …
    double flush_seconds = 60;           // … or every N seconds, whichever comes first
    std::string launcher = "srun-pmix";  // how the job scripts start the ranks (ctxsim submit)
  } runtime;

  // `sweep:` — cartesian product of the axes (zip groups vary together); empty = one run.
  std::string sweep_name;  // default: the config file's stem
  std::vector<SweepAxis> sweep;

  // Where each key's value came from ("configs/x.yaml:4:9", "command line", absent = default):
  // later checks (missing files) use it to point at the line to edit.
  std::map<std::string, std::string> origin;
  std::string source;                      // the config file
  std::vector<std::string> file_sections;  // the sections the file itself has (not the overrides'), in order

  std::string where(const std::string& key) const;  // "configs/x.yaml:4:9: corpus.path"
};

// Loads `path`, applies overrides ("samples.seq_len=64"), validates types and ranges.
// Throws ctxsim::Error with file:line:column, key path and fix.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Same from YAML text; `name` stands for the file in messages.
Config parse_config(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides = {});

// Checks that the files the config points to exist (corpus.path, model.path, model.vocab),
// naming the key and its line when one does not.
void check_paths(const Config& config);

// The effective config as YAML, every key present, with a comment on each.
// omit: a section left out (identity_yaml: "segment" for run and pretrain).
std::string to_yaml(const Config& config, bool with_comments = true, const std::string& omit = "");

// What reads a config: a job (run, segment, prune, pretrain), a row of job_kinds() each
// (config_schema.cpp, beside the keys each reads). A store's or a checkpoint's identity holds only
// the keys its job reads that determine its results. What the shell does for a job is its row of
// the job table (pipeline/commands/job_shell.h), found by name.
struct JobKindRow {
  const char* name;     // the subcommand; "run" is the default job
  const char* section;  // a config file with this section is this job's ("" for run)
};
const std::vector<JobKindRow>& job_kinds();
struct JobKind {
  int row = 0;  // in job_kinds(); 0: run
  const char* name() const { return job_kinds()[size_t(row)].name; }
  friend bool operator==(JobKind a, JobKind b) { return a.row == b.row; }
  friend bool operator!=(JobKind a, JobKind b) { return a.row != b.row; }
};
// The job named `name` (a name without a row is a programming error).
JobKind job_kind_named(const std::string& name);

// The YAML of the settings that determine a run's results: to_yaml with the keys that only steer
// how it runs (marked so in the schema: output.dir, .overwrite and .report; runtime threads,
// device, progress and flush intervals) at their defaults. Two runs may share a store only when these agree.
// For another job (pretrain) the same over the keys it reads.
std::string identity_yaml(Config config, JobKind kind = {});

// The job a config file is for, from the sections the file itself has (an override of a
// segment.* key does not make a run's config a segmentation job's): the job whose section it has
// (segment:, prune:, pretrain:), else run. `ctxsim submit` and `ctxsim plan` use it.
JobKind job_kind_of(const Config& config);

// How a store's identity (its config attribute) differs from this config's, key by key:
// "runtime.unit_size: 64 → 32". Empty when the two describe the same results; keys that only
// steer a run are not compared, so a store written by an older ctxsim that kept them still matches.
std::vector<std::string> identity_differences(const std::string& stored, const Config& config, JobKind kind = {});

// All key paths of the schema ("corpus.format", …, "selection.top_fraction", …).
std::vector<std::string> config_keys();

}  // namespace ctxsim

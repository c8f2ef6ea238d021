// The inputs of a job from its config: where the model files are (model.path, or model.name
// resolved offline in the Hugging Face cache), the tokenizer, the corpus read and cut into
// samples, and the statistics options. Shared by run, plan and samples.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "pipeline/job/config/config.h"
#include "stages/base/error.h"
#include "stages/model/family.h"
#include "stages/stats/statistics_options.h"
#include "stages/text/corpus.h"
#include "stages/text/samples.h"
#include "stages/text/tokenizer.h"
#include "stages/text/tokenizer_files.h"

namespace ctxsim {

// The snapshot folder of `name` ("bert-base-uncased", "org/name") in the local HF cache:
// $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub, honouring refs/main.
// Throws, saying where it looked, when it is not there.
std::string resolve_hf_cache(const std::string& name);

// model.path, else the cache folder of model.name, else "" (only model.vocab given).
std::string model_dir(const Config& config);

// model.vocab, else <model dir>/vocab.txt (unless the model's family is byte-level BPE), else the
// model folder (a byte-level BPE's vocab.json + merges.txt, or its tokenizer.json).
std::string vocab_path(const Config& config);
// The tokenizer kind of the model's family (config.json's model_type), which decides in a folder
// that holds both kinds of files; none without a model folder with a config.json, or with model.vocab.
std::optional<TokenizerKind> family_tokenizer_kind(const Config& config);
// The same for a folder: its config.json's family's kind; none for no folder, no config.json or
// one ctxsim does not read.
std::optional<TokenizerKind> folder_tokenizer_kind(const std::string& dir);
// The vocabulary as a store keeps it (/vocab/text) and its digest covers it: a vocab.txt as it is,
// a byte-level BPE's tokens one per line in id order (their vocab.json spelling).
std::string vocab_text(const Config& config);
// A byte-level BPE given as model.vocab (outside the model folder, whose files model_config_sha256
// covers): the SHA-256 of its merges and rules (BpeModel::sha256), which the vocabulary's text does
// not hold; "" for any other tokenizer.
std::string tokenizer_sha256(const Config& config);

// The SHA-256 of what a run's results depend on besides its config: the model's weights, its
// vocabulary and the corpus files it reads (the store records them; a resume or a rerun
// compares). model is "" when the config has no model folder.
// scores: a pruning job's, the SHA-256 of the scores it takes from prune.scores_from (the job
// computes it; "" when none or not computed, and then not compared).
struct InputDigests {
  std::string model, model_config, vocab, corpus, scores, tokenizer;  // tokenizer: tokenizer_sha256
};
InputDigests input_digests(const Config& config);
// The SHA-256 of the files besides the weights that decide a model's outputs: config.json
// (activation, epsilon, shapes, …) and tokenizer_config.json (do_lower_case), each named, so that
// a moved or removed file changes it too; and a byte-level BPE folder's merges (merges.txt, or the
// tokenizer.json it is read from), which the stored vocabulary does not hold.
std::string model_config_sha256(const std::string& model_dir);
// What changed between recorded and current digests, one phrase each ("the model's weights
// (<dir>/model.safetensors)"); a digest not recorded (a store of an older ctxsim) is not compared.
std::vector<std::string> changed_inputs(const InputDigests& recorded, const InputDigests& now, const Config& config);

// The model family of the config's model folder (its config.json's model_type), BERT when the folder
// has none; a job without a model folder (pretrain) makes the family pretrain.family names.
const FamilySpec& model_family(const Config& config);

// The tokenizer of a job and its samples' frame in the model's family (SPEC §7): vocab_path's
// files (WordPiece with do_lower_case from the config, else tokenizer_config.json, else true; or
// byte-level BPE), the family's special tokens looked up in them. A tokenizer of another kind than
// the family's (a RoBERTa folder with a vocab.txt) is an Error naming model.vocab.
struct JobTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  SampleFrame frame;
  const FamilySpec* family = nullptr;
  const Vocab& vocab() const { return tokenizer->vocab(); }
  Tokenizer& operator*() const { return *tokenizer; }
  Tokenizer* operator->() const { return tokenizer.get(); }
};
JobTokenizer make_tokenizer(const Config& config);

// Every id the tokenizer can give indexes the model's embedding table: a vocabulary longer than
// the model's vocab_size is refused, naming model.vocab (run, segment, segment --text).
void check_vocab_fits(const Config& config, const Vocab& vocab, int64_t model_vocab_size);

// A model's max_position_embeddings hold samples.seq_len tokens (run, segment), else an Error
// naming the key.
void check_positions(const Config& config, int64_t max_position_embeddings);

// A stage's Error that names a quantity (kSeqLen.quantity, kDocumentSplit, …) rethrown naming
// the config key that set it, and where in the config it was set; any other error as it is.
[[noreturn]] void rethrow_at_key(const Config& config, const Error& e);
// `f()`, its stage errors named by their keys.
template <class F>
auto at_config_keys(const Config& config, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) { rethrow_at_key(config, e); }
}

CorpusOptions corpus_options(const Config& config);
SampleOptions sample_options(const Config& config);

// The config's corpus read (its notes said once in the log) and tokenized.
struct TokenizedInputs {
  TokenizedCorpus corpus;
  std::string corpus_sha256;  // Corpus::sha256
};
TokenizedInputs read_and_tokenize(const Config& config, JobTokenizer& tokenizer);

// How much of the corpus prepare_samples tokenizes: only the sentences the drawn windows take (a
// run: its start-up does not grow with the corpus), or all of it, to count the corpus's tokens.
enum class CorpusTokens { DrawnOnly, Counted };

// Corpus → drawn samples, with the counts the `samples` command prints (corpus_tokens is -1
// unless counted). The samples are the same either way.
struct PreparedSamples {
  SampleSet samples;
  std::string corpus_sha256;  // Corpus::sha256
  int64_t documents = 0, sentences = 0, corpus_tokens = -1, dropped_sentences = 0;
};
PreparedSamples prepare_samples(const Config& config, JobTokenizer& tokenizer, CorpusTokens tokens = CorpusTokens::DrawnOnly);

// Rules, thresholds, separator ids (global and per rule) and the frame's special ids, shared by
// `run` and the calibration of `plan` so that both measure the same arithmetic. Separators are
// spelled as the vocabulary spells them; [CLS], [SEP] and [PAD] name the frame's own tokens in
// every family (RoBERTa's <s>, </s>, <pad>), and [SEP] is left out, said once, for a family without
// an end token (GPT-2). In a byte-level BPE, "," names both "," and "Ġ," (after a space). Throws,
// naming the key, when a separator is not a token of the vocabulary.
StatisticsOptions statistics_options(const Config& config, const JobTokenizer& tokenizer);

}  // namespace ctxsim

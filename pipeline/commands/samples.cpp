// `ctxsim samples`, `tokenize` and `bench-tokenizer`: the text side of a config, shown.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>
#include "pipeline/commands/commands.h"

#include "pipeline/job/config/inputs.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"
#include "stages/base/stopwatch.h"
#include "stages/text/bpe.h"
#include "stages/text/corpus.h"
#include "stages/text/tokenizer_files.h"
#include "stages/text/utf8.h"

namespace ctxsim {

std::string describe_sample(const SampleSet& set, int64_t n, const Tokenizer& tokenizer) {
  const size_t T = static_cast<size_t>(set.seq_len);
  const int32_t* tok = &set.token_ids[static_cast<size_t>(n) * T];
  const int16_t* sent = &set.sentence_ids[static_cast<size_t>(n) * T];
  const size_t valid = static_cast<size_t>(set.n_valid[static_cast<size_t>(n)]);
  std::ostringstream s;
  size_t i = 0;
  while (i < valid) {
    size_t j = i + 1;
    while (j < valid && sent[j] == sent[i]) ++j;
    if (sent[i] < 0) {
      s << (i ? " | " : "") << tokenizer.decode(tok + i, j - i);
    } else {
      const std::string text = tokenizer.decode(tok + i, j - i);
      s << " | s" << sent[i] << ": " << (text.rfind(' ', 0) == 0 ? text.substr(1) : text);  // BPE's prefix space (SPEC §7)
    }
    i = j;
  }
  if (valid < T) s << " | " << (T - valid) << " x " << tokenizer.vocab().token(tok[valid]) << " (padding)";
  return s.str();
}

int cmd_samples(const std::string& path, const std::vector<std::string>& overrides, int64_t show, std::ostream& out) {
  const Config c = load_config(path, overrides);
  check_paths(c);
  JobTokenizer tokenizer = make_tokenizer(c);
  const PreparedSamples p = prepare_samples(c, tokenizer, CorpusTokens::Counted);
  const SampleSet& s = p.samples;
  const int64_t shown = std::min<int64_t>(show, s.size());
  for (int64_t n = 0; n < shown; ++n) {
    out << "sample " << n << "  (document " << s.source[n].document << ", sentence " << s.source[n].sentence << ", candidate "
        << s.candidate[n] << ", " << s.n_valid[n] << " valid tokens)\n  " << describe_sample(s, n, *tokenizer) << "\n";
  }
  out << "documents:           " << p.documents << "\n"
      << "sentences:           " << p.sentences << "\n"
      << "corpus tokens:       " << p.corpus_tokens << "\n"
      << "candidates:          " << s.num_candidates << " (" << name_of(c.samples.windows) << " windows)\n"
      << "drawn samples:       " << s.size() << " of " << s.requested << " requested (seed " << c.samples.seed << ")\n"
      << "sample tokens:       " << s.valid_tokens() << " valid of " << s.size() * s.seq_len << " (T=" << s.seq_len << ")\n"
      << "truncated sentences: " << s.truncated_sentences << "\n";
  if (p.dropped_sentences) out << "dropped sentences:   " << p.dropped_sentences << " (no token after cleaning)\n";
  return 0;
}

int cmd_tokenize(const std::string& vocab_path, const std::string& model_dir, bool cased, bool tokens, std::istream& in,
                 std::ostream& out) {
  if (vocab_path.empty() && model_dir.empty())
    throw Error("tokenize", "no tokenizer given", "pass --vocab FILE|DIR or --model DIR (e.g. --vocab data/vocab/gpt2)");
  // A model folder's WordPiece options come from its tokenizer_config.json; --cased overrides.
  TokenizerOptions o = model_dir.empty() ? TokenizerOptions{} : read_tokenizer_options(model_dir, true);
  if (cased) o.lower_case = o.strip_accents = false;
  // A model folder's family (config.json's model_type) decides where both kinds of files are there.
  const std::string source = model_dir.empty() ? vocab_path : model_dir;
  const std::unique_ptr<Tokenizer> owned = open_tokenizer(source, o, folder_tokenizer_kind(source));
  Tokenizer& tokenizer = *owned;
  std::string line;
  int64_t line_no = 0;
  Encoding enc;
  while (std::getline(in, line)) {
    ++line_no;
    const size_t bad = utf8::find_invalid(line);
    if (bad != utf8::npos)
      throw Error("stdin:" + std::to_string(line_no), "invalid UTF-8 at byte " + std::to_string(bad) + " of the line",
                  "feed UTF-8 text (e.g. iconv -f latin1 -t utf-8)");
    enc = tokenizer.encode(line);
    const std::vector<std::string> strings = tokens ? tokenizer.tokens(enc.ids) : std::vector<std::string>{};
    for (size_t i = 0; i < enc.ids.size(); ++i) {
      if (i) out << ' ';
      if (tokens)
        out << strings[i];
      else
        out << enc.ids[i];
    }
    out << '\n';
  }
  return 0;
}

int cmd_bench_tokenizer(const std::string& path, const std::vector<std::string>& overrides, int repeat,
                        const std::vector<std::string>& others, std::ostream& out) {
  const Config c = load_config(path, overrides);
  check_paths(c);
  JobTokenizer tokenizer = make_tokenizer(c);
  Stopwatch clock;
  const Corpus corpus = read_corpus(corpus_options(c));
  const double read_s = clock.seconds();
  int64_t bytes = 0;
  for (const auto& d : corpus.documents)
    for (const auto& s : d.sentences) bytes += static_cast<int64_t>(s.size());
  out << "corpus: " << corpus.documents.size() << " documents, " << corpus.num_sentences() << " sentences, " << bytes / 1e6
      << " MB of text, read in " << read_s << " s\n";
  const auto report = [&](const std::string& name, int r, int64_t tokens, double s) {
    out << name << " round " << r + 1 << ": " << tokens << " tokens in " << std::fixed << std::setprecision(3) << s << " s ("
        << std::setprecision(2) << tokens / s / 1e6 << " M tokens/s, " << bytes / s / 1e6 << " MB/s, one thread)\n"
        << std::defaultfloat;
  };
  for (int r = 0; r < repeat; ++r) {
    // A fresh tokenizer each round: the first round pays for the word-piece cache, like a real run.
    JobTokenizer fresh = make_tokenizer(c);
    clock.restart();
    const TokenizedCorpus tc = tokenize_corpus(corpus, *fresh, fresh.frame);
    report(std::string("config's ") + fresh->kind(), r, tc.num_tokens, clock.seconds());
  }
  // Each other tokenizer over the same sentences, each as " " + text for a byte-level BPE (SPEC §7).
  for (const std::string& path : others) {
    for (int r = 0; r < repeat; ++r) {
      const std::unique_ptr<Tokenizer> t = open_tokenizer(path, TokenizerOptions{});
      const bool prefix = dynamic_cast<const BpeTokenizer*>(t.get()) != nullptr;
      Encoding e;
      std::string text;
      int64_t tokens = 0;
      clock.restart();
      for (const auto& d : corpus.documents)
        for (const auto& s : d.sentences) {
          e.ids.clear(), e.word_ids.clear(), e.num_words = 0;
          text.assign(prefix ? " " : "").append(s);
          t->encode(text, e);
          tokens += int64_t(e.ids.size());
        }
      report(std::string(t->kind()) + " " + path, r, tokens, clock.seconds());
    }
  }
  return 0;
}

}  // namespace ctxsim

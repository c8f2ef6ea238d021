// `ctxsim segment CONFIG --text FILE [--segments K]`: one plain-text file (a sentence per line)
// segmented with the config's model and method (segment.method at segment.layer), printed as
// its sentences, one per line, with one empty line between segments: nothing else on stdout,
// so anyone can score it.
#include <fstream>
#include <ostream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/segment_inputs.h"
#include "pipeline/job/config/inputs.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/segment/encode.h"
#include "stages/segment/similarity_methods.h"
#include "stages/text/utf8.h"

namespace ctxsim {
namespace {

// The file's sentences: its non-empty lines, whitespace-trimmed. One clear error for what
// cannot be a text to segment.
std::vector<std::string> read_sentences(const std::string& path) {
  const std::string bytes = read_file_bytes(path, size_t(256) << 20, "a text file", "give a UTF-8 text file with one sentence per line");
  if (bytes.find('\0') != std::string::npos)
    throw Error(path, "holds NUL bytes: a binary file, not text", "give a UTF-8 text file with one sentence per line");
  if (const size_t bad = utf8::find_invalid(bytes); bad != utf8::npos)
    throw Error(path + ": byte " + std::to_string(bad), "is not valid UTF-8 text",
                "convert the file to UTF-8 (e.g. iconv -t UTF-8), one sentence per line");
  std::vector<std::string> out;
  for (const auto& line : split_lines(bytes)) {
    const size_t a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
    if (a != std::string::npos) out.push_back(line.substr(a, b - a + 1));
  }
  if (out.empty()) throw Error(path, "has no sentences (no non-empty line)", "give a text file with one sentence per line");
  return out;
}

}  // namespace

int cmd_segment_text(const std::string& config_path, const std::vector<std::string>& overrides, const std::string& text_path,
                     int64_t segments, std::ostream& out) {
  // One file, one process: under mpiexec or srun only the first rank segments it (the others
  // would print it again).
  if (started_by_launcher() && launcher_rank() != 0) return 0;
  const Config c = load_config(config_path, overrides);
  check_paths(c);
  check_one_cpu_configuration(c, "segment --text");  // as the segmentation job: no sweep, the CPU, a dtype it computes in
  const std::vector<std::string> lines = read_sentences(text_path);
  if (segments > int64_t(lines.size()))
    throw Error("--segments " + std::to_string(segments), text_path + " has only " + std::to_string(lines.size()) + " sentences",
                "ask for at most " + std::to_string(lines.size()) + " segments, or leave --segments out to let the method decide");
  const std::string dir = model_dir(c);
  if (dir.empty()) throw Error(c.where("model.path"), "segment needs a model", "set model.path to a Hugging Face model folder");
  configure_threads(c.runtime.threads);
  configure_compute_libraries();
  JobTokenizer tokenizer = make_tokenizer(c);
  const TransformerEncoder model = TransformerEncoder::load(dir, torch_dtype(c.model.dtype));
  const int32_t T = segment_window(c, model.config());
  check_vocab_fits(c, tokenizer.vocab(), model.config().vocab_size);
  std::vector<segment::TokenIds> sentences;
  for (size_t i = 0; i < lines.size(); ++i) {
    sentences.push_back(tokenizer.frame.encode(*tokenizer, lines[i]).ids);
    if (sentences.back().empty()) sentences.back().push_back(tokenizer.vocab().unk_id());  // a line of characters BERT drops
    if (int64_t(sentences.back().size()) > tokenizer.frame.room(T))
      throw Error(text_path + ":" + std::to_string(i + 1),
                  "this sentence has " + std::to_string(sentences.back().size()) + " tokens, more than the window's " +
                      std::to_string(tokenizer.frame.room(T)) + " (samples.seq_len minus the frame's " +
                      std::to_string(T - tokenizer.frame.room(T)) + ")",
                  "split the line into shorter sentences, or raise samples.seq_len up to the model's positions");
  }
  const int64_t L = model.config().num_layers;
  const int64_t layer = c.segment.layer < 0 ? L - 1 : c.segment.layer;
  if (layer >= L)
    throw Error(c.where("segment.layer"), std::to_string(layer) + " but the model has " + std::to_string(L) + " layers",
                "use 0 to " + std::to_string(L - 1) + ", or -1 for the last");
  const segment::EncodedDocument e = segment::encode_document(model, sentences, T, tokenizer.frame, c.runtime.batch_size);
  const segment::MethodOptions o = segment_method_options(c, tokenizer);
  const int32_t n = int32_t(sentences.size());
  const int32_t count = segments > 0 ? int32_t(segments - 1) : segment::kEstimate;
  segment::Boundaries b;
  if (n > 1) {
    if (c.segment.method == "attention") {
      b = segment::boundaries_from_gap_scores(segment::gap_attention(e, layer, layer + 1), o.block, count);
    } else if (c.segment.method == "heads-depth") {
      b = segment::block_comparison(e.similarity(layer, -1), n, o.block, count);
    } else {
      b = segment::c99(e.similarity(layer, -1), n, o.c99, count);
    }
  }
  size_t next = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (next < b.size() && b[next] == i) out << "\n", ++next;
    out << lines[size_t(i)] << "\n";
  }
  log_info(text_path + ": " + std::to_string(n) + " sentences in " + std::to_string(b.size() + 1) + " segments (" + c.segment.method +
           ", layer " + std::to_string(layer) + ")");
  return 0;
}

}  // namespace ctxsim

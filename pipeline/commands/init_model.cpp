// `ctxsim init-model` (seeded random Hugging Face checkpoints) and `model-info` (a checkpoint loaded
// and described).
#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

#include "pipeline/commands/commands.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/stats/analysis.h"
#include "stages/base/cpu_features.h"
#include "stages/model/model.h"
#include "stages/model/random_checkpoint.h"
#include "stages/base/stopwatch.h"
#include "stages/model/safetensors.h"

namespace ctxsim {

int cmd_init_model(const InitModelArgs& a, std::ostream& out) {
  BertConfig c = BertConfig::preset(a.preset);
  if (a.layers > 0) c.num_layers = a.layers;
  if (a.hidden > 0) c.hidden_size = a.hidden;
  if (a.heads > 0) c.num_heads = a.heads;
  if (a.ffn > 0) c.intermediate_size = a.ffn;
  if (a.positions > 0) c.max_position_embeddings = a.positions;
  c.check("init-model: ", "pick sizes within those limits (a head count that divides the hidden size)");
  write_random_checkpoint(c, a.seed, a.vocab, a.out);
  out << "wrote " << a.out << ": " << a.preset << " shape (" << c.num_layers << " layers, hidden " << c.hidden_size << ", "
      << c.num_heads << " heads, ffn " << c.intermediate_size << "), seed " << a.seed << "\n";
  return 0;
}

int cmd_model_info(const std::string& dir, const std::string& dtype, std::ostream& out) {
  LoadReport r;
  const BertModel m = BertModel::load(dir, parse_dtype(dtype), &r);
  const BertConfig& c = m.config();
  out << "model:       " << dir << "\n"
      << "shape:       " << c.num_layers << " layers, hidden " << c.hidden_size << ", " << c.num_heads << " heads (d="
      << c.head_dim() << "), ffn " << c.intermediate_size << ", vocab " << c.vocab_size << ", positions "
      << c.max_position_embeddings << "\n"
      << "tensors:     " << r.tensors_in_file << " in the file: " << r.encoder_tensors << " BERT (encoder + pooler), "
      << r.ignored.size() << " ignored (heads, buffers), " << r.unexpected.size() << " unexpected\n"
      << "sha256:      " << sha256_file(r.weights_path) << "\n";
  if (!r.unexpected.empty()) {
    std::cerr << "ctxsim: warning: unexpected tensors ignored:";
    for (const auto& u : r.unexpected) std::cerr << " " << u;
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace ctxsim

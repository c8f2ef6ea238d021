#include "pipeline/job/inputs.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "stages/error.h"

namespace fs = std::filesystem;

namespace ctxsim {

std::string resolve_hf_cache(const std::string& name) {
  std::string hub;
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) {
    hub = v;
  } else if (const char* h = std::getenv("HF_HOME"); h && *h) {
    hub = (fs::path(h) / "hub").string();
  } else {
    const char* home = std::getenv("HOME");
    hub = (fs::path(home ? home : "/") / ".cache" / "huggingface" / "hub").string();
  }
  std::string folder = "models--" + name;
  for (size_t p = folder.find('/'); p != std::string::npos; p = folder.find('/')) folder.replace(p, 1, "--");
  const fs::path repo = fs::path(hub) / folder;
  const fs::path snapshots = repo / "snapshots";
  const std::string fix = "download it once where there is network (huggingface-cli download " + name +
                          ") and copy the cache here, or set model.path to a folder with config.json, "
                          "model.safetensors and vocab.txt";
  if (!fs::is_directory(snapshots))
    throw Error("model.name: " + name, "not found in the Hugging Face cache (looked in " + snapshots.string() + ")", fix);
  std::ifstream ref(repo / "refs" / "main");
  std::string revision;
  if (ref && std::getline(ref, revision) && !revision.empty()) {
    const fs::path snap = snapshots / revision;
    if (fs::is_directory(snap)) return snap.string();
    throw Error("model.name: " + name, "refs/main names snapshot " + revision + ", which is missing from " + snapshots.string(), fix);
  }
  // No refs/main: accept a single snapshot, refuse to guess among several.
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(snapshots))
    if (e.is_directory()) found.push_back(e.path());
  if (found.size() == 1) return found[0].string();
  throw Error("model.name: " + name,
              found.empty() ? "no snapshot in " + snapshots.string()
                            : "several snapshots in " + snapshots.string() + " and no refs/main to choose one",
              fix);
}

std::string model_dir(const Config& c) {
  if (!c.model.path.empty()) return c.model.path;
  if (!c.model.name.empty()) return resolve_hf_cache(c.model.name);
  return {};
}

BertTokenizer make_tokenizer(const Config& c) {
  const std::string dir = model_dir(c);
  std::string vocab_path = c.model.vocab;
  if (vocab_path.empty()) {
    vocab_path = (fs::path(dir) / "vocab.txt").string();
    if (!fs::exists(vocab_path))
      throw Error(c.where("model.vocab"), "no vocab.txt in the model folder " + dir,
                  "add the model's vocab.txt there or set model.vocab");
  }
  TokenizerOptions options;
  if (c.model.do_lower_case == LowerCase::Auto) {
    options = dir.empty() ? TokenizerOptions{} : read_tokenizer_options(dir, true);
  } else {
    options.lower_case = options.strip_accents = c.model.do_lower_case == LowerCase::True;
  }
  return BertTokenizer(Vocab::load(vocab_path), options);
}

}  // namespace ctxsim

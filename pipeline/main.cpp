// ctxsim command line: parse → dispatch to pipeline/commands. Only here are errors caught:
// one line "ctxsim: error: …" and a non-zero exit.
#include <CLI/CLI.hpp>

#include <iostream>

#include "pipeline/commands.h"
#include "stages/error.h"

int main(int argc, char** argv) {
  CLI::App app{"ctxsim: context-similarity statistics of transformer attention heads (SPEC in docs/)", "ctxsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ctxsim::version_string());
  app.footer("Config values can be overridden after CONFIG as key.sub=value, e.g. samples.seq_len=64.\n");

  std::string config, vocab;
  std::vector<std::string> overrides;
  int64_t show = 3;
  bool cased = false, as_tokens = false;
  int repeat = 3;

  const auto with_config = [&](CLI::App* sub) {
    sub->add_option("config", config, "YAML config (e.g. configs/default.yaml)")->required();
    sub->add_option("overrides", overrides, "key.sub=value overrides of config values");
  };
  auto* validate = app.add_subcommand("validate", "check a config and print it with defaults filled in");
  with_config(validate);
  auto* samples = app.add_subcommand("samples", "build the sample set and print counts and a few decoded samples");
  with_config(samples);
  samples->add_option("--show", show, "how many samples to print")->check(CLI::NonNegativeNumber);
  auto* tokenize = app.add_subcommand("tokenize", "stdin lines → WordPiece ids (no [CLS]/[SEP]), one line each");
  tokenize->add_option("--vocab", vocab, "vocab.txt")->required();
  tokenize->add_flag("--cased", cased, "keep case and accents (cased vocabularies)");
  tokenize->add_flag("--tokens", as_tokens, "print token strings instead of ids");
  auto* run = app.add_subcommand("run", "run the job a config describes");
  with_config(run);
  auto* bench = app.add_subcommand("bench-tokenizer", "time tokenizing the config's whole corpus (one thread)");
  with_config(bench);
  bench->add_option("--repeat", repeat, "rounds")->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (*validate) return ctxsim::cmd_validate(config, overrides, std::cout);
    if (*samples) return ctxsim::cmd_samples(config, overrides, show, std::cout);
    if (*tokenize) return ctxsim::cmd_tokenize(vocab, cased, as_tokens, std::cin, std::cout);
    if (*run) return ctxsim::cmd_run(config, overrides, std::cout);
    if (*bench) return ctxsim::cmd_bench_tokenizer(config, overrides, repeat, std::cout);
  } catch (const ctxsim::Error& e) {
    std::cerr << "ctxsim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ctxsim: internal error: " << e.what() << " (please report it with the command line)\n";
    return 3;
  }
  return 0;
}

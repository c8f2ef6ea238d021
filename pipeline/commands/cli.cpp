#include "pipeline/commands/cli.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <limits>
#include <tuple>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/job/config/config.h"
#include "pipeline/job/config/head_list.h"
#include "pipeline/job/config/sweep.h"
#include "pipeline/report/compare.h"
#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/limits.h"
#include "stages/base/suggest.h"
#include "stages/model/family.h"

namespace ctxsim {
namespace {

// Every subcommand's arguments, in one place the table's options bind to.
struct Args {
  std::string config, vocab, store, dir, out, dtype = "float32";
  std::vector<std::string> tokenizers;
  std::vector<std::string> overrides, heads, stores;
  int64_t show = 3, sweep_index = -1, ranks = 1, batches = 2, segments = 0;
  std::string text;
  bool cased = false, tokens = false;
  int repeat = 3;
  SummaryOptions summary;
  SubmitArgs submit;
  ReportArgs report;
  CompareArgs compare;
  InitModelArgs init;
  ModelInfoArgs info;
  InspectArgs inspect;
  BenchModelArgs bench;
};

// A whole-number option checked against [lo, hi] with a message that names both bounds.
CLI::Validator whole_in(int64_t lo, int64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
          return "expected a whole number in " + range + ", got '" + text + "'";
        return "";
      },
      "INT in " + range);
}

// A number of seconds in [lo, hi] (finite: inf or nan would never end a measurement).
CLI::Validator seconds_in(double lo, double hi) {
  const std::string range = "[" + std::to_string(lo).substr(0, 4) + ", " + std::to_string(int64_t(hi)) + "]";
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || !(v >= lo && v <= hi))
          return "expected seconds in " + range + ", got '" + text + "'";
        return "";
      },
      "SECONDS in " + range);
}

void with_config(CLI::App& sub, Args& a) {
  sub.add_option("config", a.config, "YAML config (e.g. configs/default.yaml)")->required();
  sub.add_option("overrides", a.overrides, "key.sub=value overrides of config values");
  sub.footer(
      "Config values can be overridden after CONFIG as key.sub=value, e.g. samples.seq_len=64 output.dir=runs/short;\n"
      "'ctxsim validate CONFIG' lists every key with its value and meaning.");
}

std::vector<Subcommand> config_commands(Args& a) {
  return {
      {"validate", "check a config and print it with defaults filled in", "ctxsim validate configs/default.yaml samples.num_samples=100",
       [&](CLI::App& s) { with_config(s, a); }, [&] { return cmd_validate(a.config, a.overrides, std::cout); }},
      {"samples", "build the sample set and print counts and a few decoded samples", "ctxsim samples configs/default.yaml --show 2",
       [&](CLI::App& s) {
         with_config(s, a);
         s.add_option("--show", a.show, "how many samples to print")->check(whole_in(0, 1000000));
       },
       [&] { return cmd_samples(a.config, a.overrides, a.show, std::cout); }},
      {"tokenize", "stdin lines → token ids (WordPiece or byte-level BPE; no special tokens), one line each",
       "echo 'The cat sat.' | ctxsim tokenize --model models/brown-bert --tokens",
       [&](CLI::App& s) {
         auto* vocab = s.add_option("--vocab", a.vocab, "vocab.txt, tokenizer.json, or a folder with vocab.json + merges.txt");
         auto* model = s.add_option("--model", a.dir, "a model folder: its tokenizer, whatever the family");
         vocab->excludes(model);
         s.add_flag("--cased", a.cased, "WordPiece: keep case and accents (cased vocabularies)");
         s.add_flag("--tokens", a.tokens, "print token strings instead of ids");
       },
       [&] { return cmd_tokenize(a.vocab, a.dir, a.cased, a.tokens, std::cin, std::cout); }},
  };
}

// The jobs' subcommands, a row of the job table each (job_shell.h); a job with options of its
// own adds them, and its action, here.
std::vector<Subcommand> job_commands(Args& a) {
  struct OwnOptions {
    const char* job;
    std::function<void(CLI::App&)> options;
    std::function<int()> run;
  };
  const std::vector<OwnOptions> own = {
      {"run",
       [&](CLI::App& s) {
         s.add_option("--sweep-index", a.sweep_index, "run only this point of the config's sweep (0-based)")
             ->check(whole_in(0, int64_t(kMaxSweepPoints) - 1));
       },
       [&] { return cmd_run(a.config, a.overrides, a.sweep_index, std::cout); }},
      {"segment",
       [&](CLI::App& s) {
         s.add_option("--text", a.text, "segment this plain-text file (one sentence per line) and print it, segments apart");
         s.add_option("--segments", a.segments, "with --text: the number of segments, when known")->check(whole_in(1, 1000000));
       },
       [&] {
         if (a.text.empty()) {
           if (a.segments > 0) throw UsageError("--segments", "goes with --text", "add --text FILE, or drop --segments");
           return cmd_segment(a.config, a.overrides, std::cout);
         }
         return cmd_segment_text(a.config, a.overrides, a.text, a.segments, std::cout);
       }},
  };
  std::vector<Subcommand> commands;
  for (const JobRow& job : job_rows()) {
    Subcommand c{job.name, job.help, job.example, [&](CLI::App& s) { with_config(s, a); },
                 [&] { return job.command(a.config, a.overrides, std::cout); }};
    for (const OwnOptions& o : own)
      if (job.name == std::string(o.job)) {
        c.options = [&a, options = o.options](CLI::App& s) {
          with_config(s, a);
          options(s);
        };
        c.run = o.run;
      }
    commands.push_back(std::move(c));
  }
  return commands;
}

std::vector<Subcommand> cluster_commands(Args& a) {
  return {
      {"sweep", "list the points of a config's sweep: section", "ctxsim sweep configs/sweeps/vectors.yaml",
       [&](CLI::App& s) { with_config(s, a); }, [&] { return cmd_sweep(a.config, a.overrides, std::cout); }},
      {"plan", "estimate memory, store size and time of a run or a segmentation job (a short calibration)",
       "ctxsim plan configs/paper.yaml model.path=models/brown-bert --ranks 8",
       [&](CLI::App& s) {
         with_config(s, a);
         s.add_option("--ranks", a.ranks, "ranks the run will use")->check(CLI::PositiveNumber)->capture_default_str();
         s.add_option("--batches", a.batches,
                      "batches timed for the calibration (documents, for a segmentation config); 0: memory and store alone (a run config)")
             ->check(CLI::NonNegativeNumber)
             ->capture_default_str();
       },
       [&] { return cmd_plan(a.config, a.overrides, a.ranks, a.batches, std::cout); }},
      {"submit",
       "check a run, a segmentation, pruning or pretraining job (the config's sections say which) or a sweep (an array job) on this node, "
       "then submit it to SLURM with sbatch, asking for plan's memory and time",
       "ctxsim submit configs/sweeps/vectors.yaml --ranks 4 --account proj42 --array-throttle 2 --then collect",
       [&](CLI::App& s) {
         with_config(s, a);
         s.add_flag("--dry-run", a.submit.dry_run, "check and plan, then print the filled job script and the sbatch command only");
         s.add_flag("--pretrain", a.submit.pretrain, "submit `ctxsim pretrain CONFIG` (requeued on SIGTERM like a run)");
         s.add_option("--ranks", a.submit.ranks, "MPI ranks (--ntasks)")->check(whole_in(1, 1 << 20));
         s.add_option("--cpus-per-task", a.submit.cpus_per_task, "threads per rank")->check(whole_in(1, 4096));
         s.add_option("--time", a.submit.time, "time limit, e.g. 02:00:00 (default: plan's estimate x --margin)");
         s.add_option("--mem", a.submit.mem, "memory per node, e.g. 16G (default: plan's per rank x --margin, as --mem-per-cpu)");
         s.add_option("--margin", a.submit.margin, "factor on plan's time and memory")->capture_default_str();
         s.add_option("--plan-batches", a.submit.plan_batches, "calibration batches per configuration")
             ->check(whole_in(1, 1000))
             ->capture_default_str();
         s.add_option("--job-name", a.submit.job_name, "SLURM job name (default: ctxsim-<sweep or config name>)");
         s.add_option("--array-throttle", a.submit.array_throttle, "a sweep's array tasks running at once (--array=0-N%K)")
             ->check(whole_in(1, 100000));
         s.add_option("--then", a.submit.then, "collect | compare: a dependent job (afterok) over the sweep's stores");
         for (const SbatchOption& o : sbatch_passthrough())
           s.add_option(o.flag, a.submit.sbatch[o.flag], std::string("sbatch ") + o.flag + ": " + o.help);
         s.add_flag("--overcommit", a.submit.overcommit, "allow more tasks than cores (small clusters)");
         s.add_option("--jobs-dir", a.submit.jobs_dir,
                      "folder of ctxsim.sbatch and sweep.sbatch (default: ./jobs, else the installed ones)");
         s.add_option("--logs", a.submit.logs_dir, "folder for the job script and logs");
       },
       [&] { return cmd_submit(a.config, a.overrides, a.submit, std::cout); }},
      {"bench-tokenizer", "time tokenizing the config's whole corpus (one thread), with its tokenizer and others",
       "ctxsim bench-tokenizer configs/default.yaml --repeat 2",
       [&](CLI::App& s) {
         with_config(s, a);
         s.add_option("--repeat", a.repeat, "rounds")->check(CLI::PositiveNumber);
         s.add_option("--tokenizer", a.tokenizers, "another tokenizer to time (as tokenize --vocab takes it, e.g. data/vocab/gpt2)");
       },
       [&] { return cmd_bench_tokenizer(a.config, a.overrides, a.repeat, a.tokenizers, std::cout); }},
  };
}

std::vector<Subcommand> store_commands(Args& a) {
  return {
      {"summary", "print per-layer tables of a store's statistics vs chance",
       "ctxsim summary runs/default/all-MiniLM-L6-v2/store.h5 --heads 0:3,5:0",
       [&](CLI::App& s) {
         s.add_option("store", a.store, "store.h5 written by ctxsim run")->required();
         s.add_option("--heads", a.heads, "layer:head list whose top anchors are shown, e.g. 0:3,11:0")->delimiter(',');
         s.add_option("--top", a.summary.top, "anchors shown per head")->check(whole_in(1, 1000))->capture_default_str();
       },
       [&] {
         a.summary.heads = parse_head_list(a.heads);
         return print_summary(a.store, a.summary, std::cout);
       }},
      {"report", "figures (PNG, SVG) and a self-contained report.html with an example explorer",
       "ctxsim report runs/default/all-MiniLM-L6-v2/store.h5 --out runs/default/report-L5 --heads 5:0,5:7",
       [&](CLI::App& s) {
         s.add_option("store", a.store, "store.h5 of a finished run")->required();
         s.add_option("--out", a.report.out_dir, "folder (default: next to the store)");
         s.add_option("--max-bytes", a.report.max_bytes, "size budget of report.html")->capture_default_str();
         s.add_option("--rule", a.report.rule, "selection rule the figures use, as the store names it (default: the first)");
         s.add_flag("--overwrite", a.report.overwrite, "replace a report of another store in --out");
         s.add_flag("--list-figures", a.report.list_figures,
                    "print the stems of the figures this report makes (figures/<stem>.svg) and write nothing");
         s.add_option("--heads", a.report.heads,
                      "layer:head list drawn as figures per example, e.g. 3:5,11:0 (default: layers 0, L/2, L-1, head 0)")
             ->delimiter(',');
       },
       [&] { return cmd_report(a.store, a.report, std::cout); }},
      {"compare", "several finished runs drawn together: per-layer figures (PNG + SVG) and one compare.html",
       "ctxsim compare runs/default/all-MiniLM-L6-v2 runs/default/all-MiniLM-L6-v2-random --labels trained,random --out runs/compare",
       [&](CLI::App& s) {
         s.add_option("stores", a.stores, "store.h5 files, or folders searched for complete stores")->required();
         s.add_option("--out", a.compare.out_dir, "folder for compare.html and figures/")->required();
         s.add_option("--labels", a.compare.labels, "one name per store, in order (default: each store's folder)")->delimiter(',');
         s.add_option("--rule", a.compare.rule, "selection rule every store has (default: the first store's first)");
         s.add_option("--title", a.compare.title, "the page's title")->capture_default_str();
         s.add_option("--note", a.compare.note, "a paragraph under the title");
         s.add_option("--max-bytes", a.compare.max_bytes, "size budget of compare.html")->capture_default_str();
         s.add_flag("--overwrite", a.compare.overwrite, "replace a comparison of other stores in --out");
       },
       [&] { return cmd_compare(a.stores, a.compare, std::cout); }},
      {"collect", "one CSV of the headline statistics of every store in a sweep folder", "ctxsim collect runs/sweeps/vectors",
       [&](CLI::App& s) {
         s.add_option("sweep_dir", a.dir, "the sweep's folder (output.dir/<sweep name>)")->required();
         s.add_option("--out", a.out, "CSV path (default: SWEEP_DIR/collect.csv)");
       },
       [&] { return cmd_collect(a.dir, a.out, std::cout); }},
      {"status", "where a run stands: complete, or units done (from its resume state)",
       "ctxsim status runs/default/all-MiniLM-L6-v2/store.h5",
       [&](CLI::App& s) { s.add_option("store", a.store, "store.h5 of a run")->required(); },
       [&] { return cmd_status(a.store, std::cout); }},
  };
}

// init-model's options: a family and preset, or --like a model; the shape's overrides; the
// tokenizer, the seed, the head and the output.
void init_model_options(CLI::App& s, Args& a) {
  s.add_option("--family", a.init.family, "the model_type whose layout it writes: " + supported_model_types())->capture_default_str();
  auto* preset =
      s.add_option("--preset", a.init.preset,
                   "a shape: bert-base | distilbert-base | bert-mini | bert-tiny | roberta-base | roberta-tiny | gpt2 | gpt2-tiny | "
                   "smollm2-135m | llama-3.2-1b | qwen3-0.6b")
          ->capture_default_str();
  s.add_option("--like", a.init.like,
               "a model folder or GGUF file: its family and shape (the random control of that model), its tokenizer unless "
               "--vocab")
      ->excludes(preset)
      ->excludes("--family");
  const std::tuple<const char*, int64_t*, const char*> overrides[] = {{"--layers", &a.init.layers, "layer count"},
                                                                      {"--hidden", &a.init.hidden, "hidden size"},
                                                                      {"--heads", &a.init.heads, "head count"},
                                                                      {"--ffn", &a.init.ffn, "intermediate size"}};
  // A shape is positive (0 or less used to mean "the preset's" without a word).
  for (const auto& [flag, value, what] : overrides)
    s.add_option(flag, *value, std::string("override the preset's ") + what)->check(whole_in(1, 1 << 20));
  s.add_option("--positions", a.init.positions, "override max_position_embeddings (longest sample the model takes)")
      ->check(whole_in(1, 65536));
  s.add_option("--seed", a.init.seed, "random seed (same seed, same bytes)")
      ->check(whole_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  s.add_option(
      "--vocab", a.init.vocab,
      "the tokenizer: a vocab.txt or WordPiece tokenizer.json (BERT, DistilBERT), GPT-2's vocab.json + merges.txt folder or a "
      "tokenizer.json (GPT-2, RoBERTa), a tokenizer.json or its folder or a GGUF file (the Llama lineage); its size sets vocab_size; "
      "required unless --like");
  s.add_flag(
      "--mlm", a.init.mlm,
      "write the family's language-model class (BertForMaskedLM, RobertaForMaskedLM, GPT2LMHeadModel, ...), its head included (what `ctxsim prune` evaluates)");
  s.add_option("--dtype", a.init.dtype, "the weights' file dtype: float32 | bfloat16 (as large models ship)")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  s.add_option("--out", a.init.out, "output folder")->required();
  s.add_flag("--overwrite", a.init.overwrite, "replace another model in --out");
}

std::vector<Subcommand> model_commands(Args& a) {
  return {
      {"inspect", "one text through a model: an explorer page of every layer and head, and the per-head arrays in HDF5",
       "ctxsim inspect --text \"The cat sat on the mat. It purred.\" --model models/brown-bert",
       [&](CLI::App& s) {
         auto* text = s.add_option("--text", a.inspect.text, "the text (sentences end at . ! ? or a line break)");
         auto* file = s.add_option("--file", a.inspect.file, "a UTF-8 text file (1 MiB at most)");
         text->excludes(file);
         s.add_option("--model", a.inspect.model, "Hugging Face model folder (any family)")->capture_default_str();
         s.add_option("--out", a.inspect.out, "folder for report.html, heads.h5 and the run's store")->capture_default_str();
         s.add_option("--top-fraction", a.inspect.top_fraction, "share of a head's pairs selected (SPEC §3)")
             ->check(CLI::Range(1e-6, 1.0))
             ->capture_default_str();
         s.add_flag("--overwrite", a.inspect.overwrite, "replace the inspection of another text or model in --out");
       },
       [&] { return cmd_inspect(a.inspect, std::cout); }},
      {"init-model", "write a seeded random checkpoint of any family (BERT … GPT-2, the Llama lineage) in the Hugging Face format",
       "ctxsim init-model --preset bert-tiny --seed 1 --vocab models/brown-bert/vocab.txt --out runs/models/tiny",
       [&](CLI::App& s) { init_model_options(s, a); }, [&] { return cmd_init_model(a.init, std::cout); }},
      {"model-info", "load a Hugging Face model folder or a GGUF file and report its family, shape, tensors and sha256",
       "ctxsim model-info models/brown-bert",
       [&](CLI::App& s) {
         s.add_option("dir", a.info.dir, "a Hugging Face model folder of any family (" + supported_model_types() + ") or a GGUF file")
             ->required();
         s.add_option("--dtype", a.info.dtype, "float32 | bfloat16 | float64")->capture_default_str();
         s.add_option("--dump-heads", a.info.dump,
                      "developer check: write the per-head context vectors and attention maps of the --ids samples as float64 "
                      ".npy files into this folder");
         s.add_option("--ids", a.info.ids, "one sample's token ids, comma-separated (repeat for more samples)")->allow_extra_args(false);
       },
       [&] { return cmd_model_info(a.info, std::cout); }},
      {"bench-model", "forward-pass speed: plain vs handing out per-head vectors and maps",
       "ctxsim bench-model --model models/brown-bert --batch 8 --seconds 2",
       [&](CLI::App& s) {
         s.add_option("--preset", a.bench.preset, "model shape")->capture_default_str();
         s.add_option("--family", a.bench.family, "the preset's family: " + supported_model_types())->capture_default_str();
         s.add_option("--model", a.bench.model, "a Hugging Face folder (any family) instead of the preset's random weights");
         s.add_option("--rules", a.bench.rules,
                      "selection rules of (c): 1 (top_fraction 0.01), 3 (+ relative_to_max 0.9, absolute 1.0), 7 "
                      "(configs/sweeps/thresholds.yaml)")
             ->capture_default_str();
         s.add_option("--batch", a.bench.batches, "batch sizes")->delimiter(',')->check(whole_in(1, 4096));
         s.add_option("--dtype", a.bench.dtypes, "float32,bfloat16,float64")
             ->delimiter(',')
             ->check(CLI::IsMember({"float32", "bfloat16", "float64"}));
         s.add_option("--seq-len", a.bench.seq_len, "tokens per sample (at most the model's max_position_embeddings)")
             ->check(whole_in(kSeqLen.lo, kSeqLen.hi))
             ->capture_default_str();
         s.add_option("--threads", a.bench.threads, "0 = OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else all cores")
             ->check(whole_in(0, kMaxThreadsOption));
         s.add_option("--seconds", a.bench.seconds, "seconds per measurement")->check(seconds_in(0.01, 3600))->capture_default_str();
         s.add_option("--profile", a.bench.profile,
                      "after the table, write a Chrome trace of the plain forward's operators (each batch size, 5 passes) to this file "
                      "(scripts/profile_forward.sh sums it)");
         s.add_option("--device", a.bench.device, "cpu | cuda (the first GPU) | auto")
             ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
             ->capture_default_str();
       },
       [&] { return cmd_bench_model(a.bench, std::cout); }},
  };
}

}  // namespace

CommandTable command_table() {
  auto args = std::make_shared<Args>();
  CommandTable t;
  for (auto* part : {&config_commands, &job_commands, &cluster_commands, &store_commands, &model_commands})
    for (auto& c : (*part)(*args)) t.commands.push_back(std::move(c));
  t.args = args;
  return t;
}

int run_command_line(int argc, char** argv) {
  CLI::App app{"ctxsim: context-similarity statistics of transformer attention heads (SPEC in docs/)", "ctxsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::function<std::string()>(version_report));
  const CommandTable table = command_table();
  std::vector<CLI::App*> subs;
  for (const auto& c : table.commands) {
    subs.push_back(app.add_subcommand(c.name, c.help));
    c.options(*subs.back());
    // The example goes under the options, before the footer the options may have set.
    const std::string footer = subs.back()->get_footer();
    subs.back()->footer("Example:\n  " + c.example + (footer.empty() ? "" : "\n\n" + footer));
  }
  // After the subcommands: CLI11 gives each new subcommand the footer its parent has then.
  app.footer(
      "'ctxsim SUBCOMMAND --help' shows its options and an example. First steps:\n"
      "  ctxsim run configs/default.yaml                     # the BERT trained here on held-out Brown text\n"
      "  ctxsim inspect --text \"The cat sat. It purred.\"    # one text: every head's maps in an explorer page");
  // A mistyped subcommand is an error even with --help after it (CLI11 would print the main help).
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& c : table.commands) names.push_back(c.name);
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string guess = did_you_mean(argv[1], names);
      throw UsageError(std::string("ctxsim ") + argv[1], "unknown subcommand",
                       (guess.empty() ? "" : "did you mean '" + guess + "'? ") + "'ctxsim --help' lists them");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line like every other user error: the subcommand, what CLI11 found wrong, the fix.
    std::string where = "ctxsim";
    for (const auto* sub : app.get_subcommands()) where += " " + sub->get_name();
    throw UsageError(where, e.what(), "see '" + where + " --help'");
  }
  for (size_t i = 0; i < subs.size(); ++i)
    if (*subs[i]) return table.commands[i].run();
  return 0;
}

}  // namespace ctxsim

// ctxsim command line: parse → dispatch to pipeline/commands. Only here are errors caught:
// one line "ctxsim: error: …" and a non-zero exit.
#include <CLI/CLI.hpp>

#include <malloc.h>

#include <iostream>
#include <sstream>

#include "pipeline/job/log.h"
#include "pipeline/commands/run.h"

#include <mpi.h>

#include "pipeline/commands/commands.h"
#include "stages/error.h"

namespace {

// An error only this rank knows about: report it once and, when other ranks may be waiting in
// a collective, end the whole job instead of leaving them to hang.
int fail(const std::string& message, int code) {
  ctxsim::log_error(message);
  int ready = 0, finalized = 0, size = 1;
  MPI_Initialized(&ready);
  MPI_Finalized(&finalized);
  if (ready && !finalized) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // LibTorch's multi-MB per-layer temporaries would otherwise get a fresh mmap (and page
  // faults) on every use under glibc's default thresholds; keep them on the heap. 32 MB is the
  // largest threshold glibc accepts on 64-bit (it refuses more and keeps its default).
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 512 << 20) != 1)
    std::cerr << "ctxsim: warning: mallopt refused the allocator thresholds; runs may be slower\n";
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
  int64_t sweep_index = -1;
  auto* run = app.add_subcommand("run", "run the job a config describes (every point of a sweep, or one)");
  with_config(run);
  run->add_option("--sweep-index", sweep_index, "run only this point of the config's sweep (0-based)");
  auto* sweep = app.add_subcommand("sweep", "list the points of a config's sweep: section");
  with_config(sweep);
  std::string store_path, heads_text;
  ctxsim::SummaryOptions summary_opts;
  auto* summary = app.add_subcommand("summary", "print per-layer tables of a store's statistics vs chance");
  summary->add_option("store", store_path, "store.h5 written by ctxsim run")->required();
  summary->add_option("--heads", heads_text, "layer:head list whose top anchors are shown, e.g. 0:3,11:0");
  summary->add_option("--top", summary_opts.top, "anchors shown per head")->capture_default_str();
  int64_t plan_ranks = 1, plan_batches = 2;
  auto* plan = app.add_subcommand("plan", "estimate memory, store size and time of a run (a short calibration)");
  with_config(plan);
  plan->add_option("--ranks", plan_ranks, "ranks the run will use")->check(CLI::PositiveNumber)->capture_default_str();
  plan->add_option("--batches", plan_batches, "batches timed for the calibration")->check(CLI::PositiveNumber)->capture_default_str();
  ctxsim::SubmitArgs submit_args;
  auto* submit = app.add_subcommand("submit", "submit a run (or a sweep as an array job) to SLURM with sbatch");
  with_config(submit);
  submit->add_flag("--dry-run", submit_args.dry_run, "print the filled job script and the sbatch command only");
  submit->add_option("--ranks", submit_args.ranks, "MPI ranks (--ntasks)");
  submit->add_option("--cpus-per-task", submit_args.cpus_per_task, "threads per rank");
  submit->add_option("--time", submit_args.time, "time limit, e.g. 02:00:00");
  submit->add_option("--partition", submit_args.partition, "SLURM partition");
  submit->add_flag("--overcommit", submit_args.overcommit, "allow more tasks than cores (small clusters)");
  submit->add_option("--jobs-dir", submit_args.jobs_dir, "folder of ctxsim.sbatch and sweep.sbatch")->capture_default_str();
  submit->add_option("--logs", submit_args.logs_dir, "folder for the job script and logs");
  std::string report_store;
  ctxsim::ReportArgs report_args;
  auto* report = app.add_subcommand("report", "figures (PNG, SVG) and a self-contained report.html with an example explorer");
  report->add_option("store", report_store, "store.h5 of a finished run")->required();
  report->add_option("--out", report_args.out_dir, "folder (default: next to the store)");
  report->add_option("--max-bytes", report_args.max_bytes, "size budget of report.html")->capture_default_str();
  report->add_option("--rule", report_args.rule, "selection rule the figures use, as the store names it (default: the first)");
  report->add_option("--heads", report_args.heads, "layer:head list drawn as figures per example, e.g. 3:5,11:0 (default: layers 0, L/2, L-1, head 0)")
      ->delimiter(',');
  std::string collect_dir, collect_out;
  auto* collect = app.add_subcommand("collect", "one CSV of the headline statistics of every store in a sweep folder");
  collect->add_option("sweep_dir", collect_dir, "the sweep's folder (output.dir/<sweep name>)")->required();
  collect->add_option("--out", collect_out, "CSV path (default: SWEEP_DIR/collect.csv)");
  auto* status = app.add_subcommand("status", "where a run stands: complete, or units done (from its resume state)");
  status->add_option("store", store_path, "store.h5 of a run")->required();
  ctxsim::InitModelArgs init_args;
  auto* init = app.add_subcommand("init-model", "write a seeded random BERT checkpoint in the Hugging Face format");
  init->add_option("--preset", init_args.preset, "bert-base | bert-mini | bert-tiny")->capture_default_str();
  init->add_option("--layers", init_args.layers, "override the preset's layer count");
  init->add_option("--hidden", init_args.hidden, "override the preset's hidden size");
  init->add_option("--heads", init_args.heads, "override the preset's head count");
  init->add_option("--ffn", init_args.ffn, "override the preset's intermediate size");
  init->add_option("--positions", init_args.positions, "override max_position_embeddings (longest sample the model takes)");
  init->add_option("--seed", init_args.seed, "random seed (same seed, same bytes)")->capture_default_str();
  init->add_option("--vocab", init_args.vocab, "vocab.txt to copy in (its size sets vocab_size)")->required();
  init->add_option("--out", init_args.out, "output folder")->required();
  std::string model_dir, model_dtype = "float32";
  auto* info = app.add_subcommand("model-info", "load a Hugging Face BERT folder and report its shape, tensors and sha256");
  info->add_option("dir", model_dir, "model folder")->required();
  info->add_option("--dtype", model_dtype, "float32 | bfloat16 | float64")->capture_default_str();
  ctxsim::BenchModelArgs bench_args;
  auto* bench_model = app.add_subcommand("bench-model", "forward-pass speed: plain vs handing out per-head vectors and maps");
  bench_model->add_option("--preset", bench_args.preset, "model shape")->capture_default_str();
  bench_model->add_option("--model", bench_args.model, "a Hugging Face BERT folder instead of the preset's random weights");
  bench_model->add_option("--rules", bench_args.rules, "selection rules of (c): 1 (top_fraction 0.01), 3 (+ relative_to_max 0.9, absolute 1.0), 7 (configs/sweeps/thresholds.yaml)")->capture_default_str();
  bench_model->add_option("--batch", bench_args.batches, "batch sizes")->delimiter(',');
  bench_model->add_option("--dtype", bench_args.dtypes, "float32,bfloat16,float64")->delimiter(',');
  bench_model->add_option("--seq-len", bench_args.seq_len, "tokens per sample")->capture_default_str();
  bench_model->add_option("--threads", bench_args.threads, "0 = OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, else all cores");
  bench_model->add_option("--seconds", bench_args.seconds, "seconds per measurement")->capture_default_str();
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
    if (*run) return ctxsim::cmd_run(config, overrides, sweep_index, std::cout);
    if (*sweep) return ctxsim::cmd_sweep(config, overrides, std::cout);
    if (*bench) return ctxsim::cmd_bench_tokenizer(config, overrides, repeat, std::cout);
    if (*summary) {
      std::stringstream list(heads_text);
      std::string item;
      while (std::getline(list, item, ',')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos)
          throw ctxsim::Error("--heads " + heads_text, "'" + item + "' is not layer:head", "write e.g. --heads 0:3,11:0");
        summary_opts.heads.emplace_back(std::stoll(item.substr(0, colon)), std::stoll(item.substr(colon + 1)));
      }
      return ctxsim::print_summary(store_path, summary_opts, std::cout);
    }
    if (*plan) return ctxsim::cmd_plan(config, overrides, plan_ranks, plan_batches, std::cout);
    if (*submit) return ctxsim::cmd_submit(config, overrides, submit_args, std::cout);
    if (*report) return ctxsim::cmd_report(report_store, report_args, std::cout);
    if (*collect) return ctxsim::cmd_collect(collect_dir, collect_out, std::cout);
    if (*status) return ctxsim::cmd_status(store_path, std::cout);
    if (*init) return ctxsim::cmd_init_model(init_args, std::cout);
    if (*info) return ctxsim::cmd_model_info(model_dir, model_dtype, std::cout);
    if (*bench_model) return ctxsim::cmd_bench_model(bench_args, std::cout);
  } catch (const ctxsim::JobExit& e) {
    return e.code();  // every rank agreed to stop; the reason is already printed
  } catch (const ctxsim::Error& e) {
    return fail(e.what(), 1);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what() + " (please report it with the command line)", 3);
  }
  return 0;
}

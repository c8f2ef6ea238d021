#include "pipeline/job/parallel/signals.h"

#include <unistd.h>

#include <csignal>

namespace ctxsim {
namespace {

volatile std::sig_atomic_t g_stop = 0;  // the signal number
extern "C" void on_stop_signal(int sig) {
  if (sig == SIGINT && g_stop == SIGINT) {  // Ctrl-C twice: the user wants out now
    static const char msg[] = "\nctxsim: second Ctrl-C: exiting without saving the round in flight\n";
    const ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
    ::_exit(128 + SIGINT);
  }
  if (sig == SIGINT) {
    static const char msg[] = "\nctxsim: Ctrl-C: saving progress after this round (Ctrl-C again to exit at once)\n";
    const ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
  }
  g_stop = sig;
}
using Handler = void (*)(int);
Handler g_previous_term = SIG_DFL, g_previous_int = SIG_DFL;

}  // namespace

StopSignals::StopSignals() {
  g_stop = 0;
  g_previous_term = std::signal(SIGTERM, on_stop_signal);
  g_previous_int = std::signal(SIGINT, on_stop_signal);
}

StopSignals::~StopSignals() {
  std::signal(SIGTERM, g_previous_term == SIG_ERR ? SIG_DFL : g_previous_term);
  std::signal(SIGINT, g_previous_int == SIG_ERR ? SIG_DFL : g_previous_int);
}

bool StopSignals::requested() const { return g_stop != 0; }

const char* StopSignals::which() const {
  if (g_stop == SIGTERM) return "SIGTERM";
  if (g_stop == SIGINT) return "SIGINT";
  return "a stop signal on another rank";
}

void StopSignals::request() { g_stop = SIGTERM; }

}  // namespace ctxsim

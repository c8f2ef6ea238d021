#include "pipeline/job/signals.h"

#include <csignal>

namespace ctxsim {
namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int) { g_stop = 1; }
using Handler = void (*)(int);
Handler g_previous = SIG_DFL;

}  // namespace

StopSignals::StopSignals() {
  g_stop = 0;
  g_previous = std::signal(SIGTERM, on_stop_signal);
}

StopSignals::~StopSignals() { std::signal(SIGTERM, g_previous == SIG_ERR ? SIG_DFL : g_previous); }

bool StopSignals::requested() const { return g_stop != 0; }

void StopSignals::request() { g_stop = 1; }

}  // namespace ctxsim

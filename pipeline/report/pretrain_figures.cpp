#include "pipeline/report/pretrain_figures.h"

#include <cmath>

#include "stages/figures/figure.h"
#include "stages/figures/render.h"

namespace ctxsim::report {

void write_training_curves(const std::string& dir, const std::vector<TrainingPoint>& points, Unigram unigram, int64_t batch, bool causal) {
  if (points.empty() || !figures_available()) return;
  Series train{"training loss (per step)", {}, {}, Rgb{160, 190, 220}};
  Series held{"held-out loss", {}, {}, Rgb{31, 119, 180}};
  Series acc{"held-out accuracy", {}, {}, Rgb{31, 119, 180}};
  for (const auto& r : points) {
    train.x.push_back(double(r.step));
    train.y.push_back(r.train_loss);
    if (std::isnan(r.heldout_loss)) continue;
    held.x.push_back(double(r.step));
    held.y.push_back(r.heldout_loss);
    acc.x.push_back(double(r.step));
    acc.y.push_back(100 * r.heldout_accuracy);
  }
  const double last = double(points.back().step);
  Series uni_loss{"unigram baseline", {0, last}, {unigram.loss, unigram.loss}, Rgb{214, 39, 40}, true};
  Series uni_acc{"unigram baseline", {0, last}, {100 * unigram.accuracy, 100 * unigram.accuracy}, Rgb{214, 39, 40}, true};
  PlotSpec loss, accuracy;
  loss.title = causal ? "next-token loss" : "masked-LM loss";
  loss.x_label = accuracy.x_label = "step";
  loss.y_label = "cross-entropy (nats)";
  loss.series = {train, held, uni_loss};
  accuracy.title = "held-out accuracy";
  accuracy.y_label = causal ? "next tokens predicted (%)" : "masked tokens predicted (%)";
  accuracy.series = {acc, uni_acc};
  write_figure(plot_figure({loss, accuracy}, 2, 420, 300, "ctxsim pretrain: loss curves",
                           std::to_string(points.size()) + " steps of " + std::to_string(batch) + " samples"),
               dir, "loss");
}

}  // namespace ctxsim::report

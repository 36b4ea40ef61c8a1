// Embedding tune in a C++ program: tune a function of two hyperparameters
// in-process, then read the best result.
//
//   ./quadratic_tuning [STORAGE_DIR]
#include <cmath>
#include <iostream>

#include "tuner/tuner.h"

int main(int argc, char** argv) {
  tune::init(argc, argv);

  tune::SweepSpec spec;
  spec.name = "quadratic";
  spec.metric = "loss";
  spec.mode = "min";
  spec.num_samples = 30;
  spec.search.seed = 42;
  spec.stop.training_iteration = 5;
  spec.param_space.add("x", tune::uniform(-4, 4))
      .add("lr", tune::loguniform(1e-4, 1.0))
      .add("model.depth", tune::randint(1, 5));

  tune::RunConfig run;
  run.storage_path = argc > 1 ? argv[1] : "./tune_results";
  run.verbose = false;

  auto trainable = [](tune::Session& session) {
    const double x = session.config()["x"];
    const double lr = session.config()["lr"];
    const int depth = session.config()["model"]["depth"];
    for (int step = 1; step <= 5; ++step) {
      double loss = (x - 1) * (x - 1) + std::pow(std::log10(lr) + 2, 2) + 0.1 * depth + 1.0 / step;
      session.report({{"loss", loss}});
    }
  };

  tune::Tuner tuner(trainable, spec, run);
  tune::ResultGrid results = tuner.fit();
  tune::Result best = results.best();
  std::cout << "trials: " << results.size() << " errors: " << results.num_errors() << "\n";
  std::cout << "best " << best.trial_name << " loss " << best.metrics["loss"] << " config " << best.config.dump()
            << "\n";
  return 0;
}

// serve_bench CHECKPOINT_DIR INSTANCE_JSON [--repeat N]: the bare model's
// time per single-row request, without HTTP: the instance parsed into a
// table (as `tune serve` does with a request's "instances"), the saved
// preprocessors, the model, the JSON answer. Prints one JSON line
// {"p50_us", "p99_us", "mean_us", "repeat"}: bench/serve/run.sh subtracts it
// from wrk's latency to get what serving adds.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "trainer/tabular/model.h"
#include "trainer/tabular/table.h"
#ifdef TUNE_WITH_TORCH
#include "trainer/torch/trainables.h"
#endif
#ifdef TUNE_WITH_XGBOOST
#include "trainer/xgboost/xgboost_trainable.h"
#endif

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: serve_bench CHECKPOINT_DIR INSTANCE_JSON [--repeat N]\n";
    return 2;
  }
#ifdef TUNE_WITH_TORCH
  tune::register_torch_trainables();
  torch::set_num_threads(1);
#endif
#ifdef TUNE_WITH_XGBOOST
  tune::register_xgboost_trainable();
#endif
  int repeat = 20000;
  if (argc >= 5 && std::string(argv[3]) == "--repeat") repeat = std::atoi(argv[4]);
  const tune::tabular::LoadedModel model = tune::tabular::load_model(argv[1]);
  const tune::Json instances = tune::Json::array({tune::Json::parse(argv[2])});
  const auto& schema = model.schema.pipeline.input_schema();
  std::vector<double> us;
  us.reserve(static_cast<size_t>(repeat));
  std::string sink;
  for (int i = 0; i < repeat + repeat / 10; ++i) {  // the first tenth warms up
    const auto t0 = std::chrono::steady_clock::now();
    const tune::Json answer = {{"predictions", tune::tabular::predict_json(model, tune::tabular::table_from_json(instances, schema))}};
    sink = answer.dump();
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= repeat / 10) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  std::cout << tune::Json{{"trainable", model.trainable},
                          {"p50_us", us[us.size() / 2]},
                          {"p99_us", us[us.size() * 99 / 100]},
                          {"mean_us", sum / static_cast<double>(us.size())},
                          {"repeat", repeat},
                          {"answer_bytes", sink.size()}}
                   .dump()
            << "\n";
  return 0;
}

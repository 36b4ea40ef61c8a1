// The "xgboost" trainable: gradient-boosted trees (Debian's libxgboost) on
// the sweep's CSV (`data:` + `preprocess:`, trainer/tabular/dataset.h).
//
//   trainable: xgboost
//   data: {path: adult.csv, label: income, task: classification}
//   preprocess: [{one_hot: [workclass, education]}]
//   param_space:
//     eta: {loguniform: [0.01, 0.3]}
//     max_depth: {randint: [2, 10]}
//     num_boost_round: 200
//
// One boosting round is one training_iteration: each round reports
// val_loss (log loss, or mean squared error for regression) and
// val_accuracy (classification) or val_rmse (regression) on the validation
// split, so ASHA and median stopping cut bad configs early. A checkpoint
// (the booster as UBJSON, the fitted preprocessors) is written every
// `checkpoint_interval` rounds (default 1) and at the last round; a
// restored trial continues boosting from it.
//
// Config keys: num_boost_round (default 100), checkpoint_interval (1), seed
// (0), and XGBoost's booster parameters (eta/learning_rate, max_depth,
// min_child_weight, subsample, colsample_bytree, lambda, alpha, gamma,
// tree_method (default hist), max_bin, ...; an unknown key fails the trial
// with a did-you-mean). The objective follows data.task (binary:logistic,
// multi:softprob, reg:squarederror). Threads: resources.cpus_per_worker.
// One rank: XGBoost's own distributed mode is not used (workers must be 1).
#pragma once

namespace tune {

// Registers the "xgboost" trainable and the loader `tune predict` and
// `tune serve` use for its checkpoints. Idempotent; thread safe.
void register_xgboost_trainable();

}  // namespace tune

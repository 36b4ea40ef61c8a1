// Checkpoint files kept in step with the store: pruning to the best N (plus
// the latest), and cloning a donor's checkpoint for an exploit.
#include "tuner/driver/checkpoints.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "test_util.h"

namespace tune::internal {
namespace {

using testing::TempDir;

class Checkpoints : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = Store::open(dir_.file("store"));
    ExperimentRecord e;
    e.name = "e";
    e.status = "RUNNING";
    experiment_ = store_->create_experiment(e);
    trial_ = store_->add_trial(experiment_, 0, Json::object());
  }
  std::string add(int64_t iteration, std::optional<double> score) {
    const std::string path = dir_.file("c" + std::to_string(iteration));
    std::filesystem::create_directories(path);
    std::ofstream(path + "/w") << iteration;
    store_->add_checkpoint(trial_, iteration, path, score, 1.0 * iteration);
    return path;
  }
  std::vector<int64_t> live() {
    std::vector<int64_t> iterations;
    for (const auto& c : store_->checkpoints(trial_)) iterations.push_back(c.iteration);
    return iterations;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  int64_t experiment_ = 0, trial_ = 0;
};

TEST_F(Checkpoints, PruningKeepsTheBestAndTheLatestAndDeletesTheRest) {
  const std::string worst = add(1, 0.9);
  add(2, 0.1);
  add(3, 0.5);
  const std::string unscored = add(4, std::nullopt);
  add(5, 0.7);  // the latest: always kept
  CheckpointOptions keep_two;
  keep_two.num_to_keep = 2;
  prune_checkpoints(*store_, trial_, keep_two, "min");
  EXPECT_EQ(live(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_FALSE(std::filesystem::exists(worst));
  EXPECT_FALSE(std::filesystem::exists(unscored));
}

TEST_F(Checkpoints, PruningFollowsTheScoreOrderAndKeepsAllByDefault) {
  add(1, 0.9);
  add(2, 0.1);
  add(3, 0.5);
  prune_checkpoints(*store_, trial_, CheckpointOptions{}, "min");
  EXPECT_EQ(live().size(), 3u);
  CheckpointOptions keep_one_max;
  keep_one_max.num_to_keep = 1;
  keep_one_max.score_order = "max";
  prune_checkpoints(*store_, trial_, keep_one_max, "min");
  EXPECT_EQ(live(), (std::vector<int64_t>{1, 3}));
}

TEST_F(Checkpoints, CloningCopiesTheDonorsFilesUnderTheTrialsOwnName) {
  const std::string donor = add(4, 0.1);
  const auto copy = clone_target(dir_.file("trial_00002"), 3, 7, 2);
  copy_checkpoint(donor, copy);
  EXPECT_EQ(copy.filename(), "checkpoint_000003_exploit2_from_trial_00007");
  std::ifstream in(copy / "w");
  int content = 0;
  in >> content;
  EXPECT_EQ(content, 4);
  EXPECT_THROW(copy_checkpoint(dir_.file("missing"), clone_target(dir_.file("trial_00002"), 3, 7, 1)), Error);
}

}  // namespace
}  // namespace tune::internal

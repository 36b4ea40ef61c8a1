// Results that run ahead of their answer (Verdict::kRunAhead,
// RunConfig::run_ahead): the session's side (at most one result in flight, the
// answer read before anything else is sent, checkpoints always wait), its
// wire form, and whole sweeps that must not change with it.
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "schedulers/scheduler.h"
#include "storage/store.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/session_base.h"
#include "tuner/tuner.h"
#include "tuner_test_util.h"

namespace tune::internal {
namespace {

// A session whose driver is a script of answers; it logs what crosses the wire.
class ScriptedSession : public SessionBase {
 public:
  ScriptedSession(TrialStart start, std::deque<Verdict> answers)
      : SessionBase(std::move(start)), answers_(std::move(answers)) {}
  const void* mpi_communicator_handle() const override { return nullptr; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }

  std::vector<std::string> wire;

 protected:
  bool send(const Json& metrics, const std::string& checkpoint_dir) override {
    wire.push_back("send " + metrics["i"].dump() + (checkpoint_dir.empty() ? "" : " +checkpoint"));
    return true;
  }
  Verdict await_answer(int64_t iteration) override {
    wire.push_back("await " + std::to_string(iteration));
    if (answers_.empty()) return Verdict::kStop;
    const Verdict v = answers_.front();
    answers_.pop_front();
    return v;
  }

 private:
  std::deque<Verdict> answers_;
};

TrialStart start_with(bool run_ahead) {
  TrialStart start;
  start.config = Json::object();
  start.run_ahead = run_ahead;
  return start;
}

TEST(RunAheadSession, SendsTheNextResultOnlyAfterReadingTheAnswerBefore) {
  ScriptedSession s(start_with(false), {Verdict::kRunAhead, Verdict::kRunAhead, Verdict::kContinue, Verdict::kStop});
  s.report({{"i", 1}});  // waits: the start allowed nothing
  s.report({{"i", 2}});  // runs ahead
  s.report({{"i", 3}});  // reads 2's answer (run ahead again), sends, returns
  EXPECT_THROW(s.report({{"i", 4}}), TrialStopped) << "3 was answered kContinue, so 4 waited: kStop";
  const std::vector<std::string> expected = {"send 1", "await 1", "send 2", "await 2", "send 3", "await 3", "send 4",
                                             "await 4"};
  EXPECT_EQ(s.wire, expected);
  EXPECT_EQ(s.iteration(), 4);
  EXPECT_FALSE(s.settle().has_value()) << "nothing in flight after a result that waited";
}

TEST(RunAheadSession, AStopFoundLateEndsTheTrialBeforeItsNextResultIsSent) {
  ScriptedSession s(start_with(true), {Verdict::kStop});
  s.report({{"i", 1}});  // runs ahead (the start allowed it)
  EXPECT_THROW(s.report({{"i", 2}}), TrialStopped);
  const std::vector<std::string> expected = {"send 1", "await 1"};
  EXPECT_EQ(s.wire, expected) << "result 2 never leaves the trial";
  EXPECT_EQ(s.iteration(), 1);
}

TEST(RunAheadSession, AResultWithACheckpointWaitsAndSettleReadsWhatIsInFlight) {
  ScriptedSession s(start_with(true), {Verdict::kRunAhead, Verdict::kRunAhead, Verdict::kContinue});
  s.report({{"i", 1}}, "/tmp/checkpoint_1");  // waits although the start allowed running ahead
  s.report({{"i", 2}});                        // runs ahead
  EXPECT_EQ(s.settle(), Verdict::kRunAhead);   // the end of the attempt reads it
  EXPECT_FALSE(s.settle().has_value());
  const std::vector<std::string> expected = {"send 1 +checkpoint", "await 1", "send 2", "await 2"};
  EXPECT_EQ(s.wire, expected);
}

TEST(RunAheadProtocol, VerdictsRoundTripAndMalformedOnesAreRefused) {
  for (Verdict v : {Verdict::kContinue, Verdict::kStop, Verdict::kRunAhead}) {
    auto decoded = decode_down(encode(DownMessage{VerdictMessage{v}}));
    ASSERT_TRUE(decoded && std::holds_alternative<VerdictMessage>(*decoded));
    EXPECT_EQ(std::get<VerdictMessage>(*decoded).verdict, v);
  }
  EXPECT_FALSE(decode_down(Json{{"type", "verdict"}, {"continue", true}, {"ahead", 1}}));
  EXPECT_FALSE(decode_down(Json{{"type", "verdict"}, {"continue", false}, {"ahead", true}}));
  auto old_peer = decode_down(Json{{"type", "verdict"}, {"continue", true}});
  ASSERT_TRUE(old_peer);
  EXPECT_EQ(std::get<VerdictMessage>(*old_peer).verdict, Verdict::kContinue);
  TrialStart start = start_with(true);
  EXPECT_TRUE(TrialStart::from_json(start.to_json()).run_ahead);
  Json run = encode(DownMessage{RunMessage{start}});
  run["trial"]["run_ahead"] = "yes";
  EXPECT_FALSE(decode_down(run)) << "a start whose run_ahead is not a boolean is a bad frame";
}

}  // namespace
}  // namespace tune::internal

namespace tune {
namespace {

// A whole sweep, in-process, one slot (so the order of results is fixed):
// `iterations` reports a trial, ASHA stopping trials at its rungs.
std::vector<std::pair<std::string, int64_t>> asha_sweep(bool run_ahead) {
  testing::TempDir dir;
  SweepSpec spec = testing::one_parameter_spec("run-ahead", 12, 5);
  spec.scheduler.type = "asha";
  spec.scheduler.params = {{"max_t", 9}, {"reduction_factor", 3}, {"backfill", false}};
  RunConfig run;
  run.storage_path = dir.path();
  run.slots = 1;
  run.verbose = false;
  run.run_ahead = run_ahead;
  Tuner tuner(
      [](Session& s) {
        const double x = s.config()["x"].get<double>();
        for (int i = 1; i <= 9; ++i) s.report({{"loss", (x - 0.3) * (x - 0.3) + 1.0 / i}});
      },
      spec, run);
  tuner.fit();
  std::vector<std::pair<std::string, int64_t>> outcome;
  auto store = Store::open(dir.path());
  const auto experiment = store->find_experiment("run-ahead");
  for (const auto& trial : store->trials(experiment->id)) {
    const auto results = store->results(trial.id);
    outcome.emplace_back(trial.status, static_cast<int64_t>(results.size()));
    for (size_t k = 0; k < results.size(); ++k) EXPECT_EQ(results[k].iteration, static_cast<int64_t>(k + 1));
  }
  return outcome;
}

TEST(RunAheadSweep, AshaStopsTheSameTrialsAtTheSameRungsAndEveryResultIsStored) {
  const auto waiting = asha_sweep(false);
  const auto ahead = asha_sweep(true);
  ASSERT_EQ(waiting.size(), 12u);
  EXPECT_EQ(ahead, waiting);
  int64_t stopped_early = 0;
  for (const auto& [status, results] : waiting) {
    EXPECT_EQ(status, kTerminated);
    stopped_early += results < 9 ? 1 : 0;
  }
  EXPECT_GT(stopped_early, 3) << "ASHA cut trials at rungs 1 and 3";
}

}  // namespace
}  // namespace tune

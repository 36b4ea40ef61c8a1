// The driver and the hosts of a multi-host sweep, a step at a time with a fake
// executor and clock: the preflight refuses a host before anything is
// created; a lost attempt counts only against the host blamed for it; a host
// taken out is checked again and rejoins; with no host left the sweep stops
// (NoHostsLeft) only after the taken-out hosts fail a check; hosts join and
// drain on request.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "driver_test_util.h"
#include "tuner/driver/driver.h"
#include "tuner_test_util.h"

namespace tune {
namespace {

using internal::AttemptId;
using internal::HostCheckRequest;
using internal::HostCheckResult;
using testing::Harness;

const std::vector<std::string> kHosts = {"127.0.0.2", "127.0.0.3"};

SweepSpec hosts_spec(int64_t samples, int max_host_failures = 1, double check_interval = 30) {
  SweepSpec spec = testing::one_parameter_spec("fake", samples, 1);
  spec.failure.max_host_failures = max_host_failures;
  spec.failure.host_check_interval_s = check_interval;
  return spec;
}

std::vector<std::string> event_kinds(Harness& h) {
  std::vector<std::string> kinds;
  for (const auto& e : h.driver->store().events(h.driver->experiment_id())) kinds.push_back(e.kind);
  return kinds;
}

bool has_event(Harness& h, const std::string& kind) {
  const auto kinds = event_kinds(h);
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

// The host a trial's latest attempt runs on.
std::string host_of(Harness& h, int64_t trial) { return h.fake->latest(trial)->placement.hosts.at(0).host; }

TEST(DriverHosts, APreflightFailureRefusesTheSweepBeforeTheStoreExists) {
  testing::TempDir dir;
  const std::string storage = dir.file("store");
  Harness h(storage);
  h.answer = [](const HostCheckRequest& r) {
    return HostCheckResult{r.host, r.host != "127.0.0.3", "host " + r.host + " cannot run tune-full (not found there)",
                           false};
  };
  try {
    h.open(hosts_spec(2), 1, nullptr, false, true, kHosts);
    FAIL() << "a host that cannot run tune did not refuse the sweep";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "host 127.0.0.3 cannot run tune-full (not found there)");
  }
  EXPECT_FALSE(std::filesystem::exists(storage)) << "a refused sweep created its store";
  ASSERT_NE(h.fake, nullptr);
  // Every host was checked, the failing one twice (a second chance).
  EXPECT_EQ(h.fake->checks.size(), 3u);
}

TEST(DriverHosts, EveryHostPassingThePreflightRuns) {
  Harness h;
  h.open(hosts_spec(2), 1, nullptr, false, true, kHosts);
  ASSERT_EQ(h.fake->checks.size(), 2u);
  EXPECT_TRUE(h.step());
  EXPECT_EQ(h.fake->started.size(), 2u);
}

// At the end every host removes the experiment's scratch; a host whose clean
// fails (its link down for a moment) is asked again, not left with it.
TEST(DriverHosts, AHostWhoseScratchCleanFailsIsAskedAgainAtTheEnd) {
  Harness h;
  std::map<std::string, int> cleans;
  h.answer = [&cleans](const HostCheckRequest& r) {
    if (r.clean_experiment.empty()) return HostCheckResult{r.host, true, "", false};
    const int n = ++cleans[r.host];
    return HostCheckResult{r.host, r.host != "127.0.0.3" || n > 2, "host " + r.host + " unreachable", true};
  };
  h.open(hosts_spec(2), 1, nullptr, false, true, kHosts);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 2u);
  h.fake->end({0, 1}, false);
  h.fake->end({1, 1}, false);
  while (h.step()) {
  }
  const auto begun = std::chrono::steady_clock::now();
  h.finish();
  EXPECT_EQ(cleans["127.0.0.2"], 1);
  EXPECT_EQ(cleans["127.0.0.3"], 3) << "the failed clean was not asked again";
  EXPECT_GE(std::chrono::steady_clock::now() - begun, std::chrono::seconds(2)) << "asked again at once, not a second apart";
}

TEST(DriverHosts, ALostAttemptCountsOnlyAgainstTheBlamedHost) {
  Harness h;
  h.open(hosts_spec(3), 1, nullptr, false, true, kHosts);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 2u);
  const std::string blamed = host_of(h, 1);
  const std::string other = host_of(h, 0);
  ASSERT_NE(blamed, other);
  // Trial 1's group died with its host; trial 0's ended with it but the
  // executor blamed the other host.
  h.fake->crash({1, 1}, "host lost", /*lost=*/true, {blamed});
  h.fake->crash({0, 1}, "host lost", /*lost=*/true, {blamed});
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.driver->status(0), TrialStatus::kRunning) << "retried at once on the healthy host";
  EXPECT_EQ(host_of(h, 0), other);
  EXPECT_TRUE(has_event(h, "hosts_excluded"));
  const auto events = h.driver->store().events(h.driver->experiment_id());
  for (const auto& e : events) {
    if (e.kind == "hosts_excluded") EXPECT_EQ(e.detail["host"], blamed);
    if (e.kind == "trial_retry") EXPECT_EQ(e.detail["hosts"], Json::array({blamed}));
  }
}

TEST(DriverHosts, AHostTakenOutIsCheckedAgainAndRejoinsWhenItPasses) {
  Harness h;
  h.open(hosts_spec(4, 1, /*check_interval=*/10), 1, nullptr, false, true, kHosts);
  ASSERT_TRUE(h.step());
  const std::string bad = host_of(h, 1);
  h.fake->hold_checks = true;
  h.fake->crash({1, 1}, "host lost", true, {bad});
  ASSERT_TRUE(h.step());
  const size_t asked = h.fake->checks.size();
  h.clock.advance(9);
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->checks.size(), asked) << "checked before host_check_interval_s";
  h.clock.advance(2);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->checks.size(), asked + 1);
  EXPECT_EQ(h.fake->checks.back().host, bad);
  // It fails: the next check waits twice as long.
  h.fake->answer_check(bad, false, "host " + bad + " did not answer");
  ASSERT_TRUE(h.step());
  h.clock.advance(19);
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->checks.size(), asked + 1);
  h.clock.advance(2);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->checks.size(), asked + 2);
  // It passes: it takes trials again (trial 1's retry and trial 2 wait for slots).
  h.fake->answer_check(bad, true);
  h.fake->end({0, 1}, false);
  const size_t before = h.fake->started.size();
  ASSERT_TRUE(h.step());
  ASSERT_TRUE(h.step());
  EXPECT_TRUE(has_event(h, "host_readmitted"));
  std::set<std::string> used;
  for (size_t i = before; i < h.fake->started.size(); ++i) used.insert(h.fake->started[i].placement.hosts.at(0).host);
  EXPECT_EQ(used.size(), 2u) << "both hosts take trials again";
  EXPECT_TRUE(used.count(bad)) << "no trial started on the readmitted host";
}

TEST(DriverHosts, WithNoHostLeftTheSweepStopsOnlyAfterTheyFailACheck) {
  Harness h;
  h.open(hosts_spec(4), 1, nullptr, false, true, kHosts);
  ASSERT_TRUE(h.step());
  h.fake->hold_checks = true;
  h.fake->crash({0, 1}, "host lost", true, {host_of(h, 0)});
  h.fake->crash({1, 1}, "host lost", true, {host_of(h, 1)});
  ASSERT_TRUE(h.step()) << "the driver stops while taken-out hosts are being checked";
  ASSERT_TRUE(h.step());
  EXPECT_TRUE(has_event(h, "no_hosts_left"));
  EXPECT_EQ(h.fake->checks.size(), 4u) << "both hosts checked at once, not after the interval";
  // One comes back: the sweep goes on.
  h.fake->answer_check(kHosts[0], true);
  h.fake->answer_check(kHosts[1], false, "no");
  ASSERT_TRUE(h.step());
  EXPECT_TRUE(has_event(h, "host_readmitted"));
  ASSERT_TRUE(h.step());
  EXPECT_FALSE(h.fake->live_attempts().empty());
  // Lost again, and this time both fail their checks: NoHostsLeft.
  for (const auto& attempt : std::set<AttemptId>(h.fake->live_attempts()))
    h.fake->crash(attempt, "host lost", true, {kHosts[0]});
  ASSERT_TRUE(h.step());
  const size_t asked = h.fake->checks.size();
  h.fake->answer_check(kHosts[0], false, "no");
  h.fake->answer_check(kHosts[1], false, "no");
  EXPECT_TRUE(h.step());  // the answers: the sweep stops
  EXPECT_FALSE(h.step()) << "nothing can run and no host is being checked: the sweep is over";
  EXPECT_EQ(h.fake->checks.size(), asked);
  h.fake->hold_checks = false;  // the scratch clean at the end is answered
  try {
    h.finish();
    FAIL() << "finish() should throw NoHostsLeft";
  } catch (const internal::NoHostsLeft& e) {
    EXPECT_NE(std::string(e.what()).find("tune resume fake"), std::string::npos) << e.what();
  }
  EXPECT_EQ(h.driver->store().find_experiment("fake")->status, "INTERRUPTED");
  for (const auto& trial : h.driver->store().trials(h.driver->experiment_id()))
    EXPECT_NE(trial.status, kRunning) << trial.trial_index;
}

TEST(DriverHosts, HostsJoinAfterACheckAndDrainOnRequest) {
  Harness h;
  h.open(hosts_spec(6), 1, nullptr, false, true, {kHosts[0]});
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 1u);
  Store& store = h.driver->store();
  const int64_t id = h.driver->experiment_id();
  h.clock.advance(1);
  store.add_event(id, std::nullopt, "host_request", {{"action", "add"}, {"host", kHosts[1]}, {"slots", 1}},
                  h.clock.unix_time());
  store.add_event(id, std::nullopt, "host_request", {{"action", "add"}, {"host", kHosts[0]}}, h.clock.unix_time());
  store.add_event(id, std::nullopt, "host_request", {{"action", "fly"}, {"host", kHosts[0]}}, h.clock.unix_time());
  h.clock.advance(1.5);
  ASSERT_TRUE(h.step());
  ASSERT_TRUE(h.step());
  EXPECT_TRUE(has_event(h, "host_added"));
  ASSERT_EQ(h.fake->started.size(), 2u) << "a trial starts on the new host";
  EXPECT_EQ(host_of(h, 1), kHosts[1]);
  int refused = 0;
  for (const auto& e : store.events(id))
    if (e.kind == "host_request_failed") ++refused;
  EXPECT_EQ(refused, 2) << "adding a host already there, and an unknown request, are refused";
  // Draining the first host: its trial finishes, no new one starts there.
  store.add_event(id, std::nullopt, "host_request", {{"action", "drain"}, {"host", kHosts[0]}}, h.clock.unix_time());
  h.clock.advance(1.5);
  ASSERT_TRUE(h.step());
  EXPECT_TRUE(has_event(h, "host_drained"));
  h.fake->end({0, 1}, false);
  ASSERT_TRUE(h.step());
  EXPECT_EQ(h.fake->started.size(), 2u) << "a trial started on the drained host";
  h.fake->end({1, 1}, false);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 3u);
  EXPECT_EQ(host_of(h, 2), kHosts[1]);
}

TEST(DriverHosts, AGroupNoHostCanBeBlamedForMakesSuspectsWhoseCheckDecides) {
  Harness h;
  h.open(hosts_spec(3, /*max_host_failures=*/1), 2, nullptr, false, true, kHosts);
  h.fake->hold_checks = true;
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 3u);
  const std::string guilty = host_of(h, 0);
  const std::string innocent = guilty == kHosts[0] ? kHosts[1] : kHosts[0];
  const size_t asked = h.fake->checks.size();
  h.fake->crash({0, 1}, "could not start", true, kHosts, /*uncertain=*/true);
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->checks.size(), asked + 2) << "each suspect is checked";
  EXPECT_FALSE(has_event(h, "hosts_excluded")) << "nobody is blamed before the checks";
  EXPECT_EQ(h.fake->started.size(), 3u) << "trial 0's retry was placed on a suspect";
  h.fake->answer_check(innocent, true);
  h.fake->answer_check(guilty, false, "host " + guilty + " did not start OpenMPI's daemon");
  ASSERT_TRUE(h.step());
  ASSERT_TRUE(h.step());
  std::vector<std::string> excluded;
  for (const auto& e : h.driver->store().events(h.driver->experiment_id()))
    if (e.kind == "hosts_excluded") excluded.push_back(e.detail["host"]);
  EXPECT_EQ(excluded, std::vector<std::string>{guilty});
  ASSERT_EQ(h.fake->started.size(), 4u) << "the retry starts once its suspect host is cleared";
  EXPECT_EQ(host_of(h, 0), innocent);
  h.fake->hold_checks = false;
}

TEST(DriverHosts, ASweepWhoseOnlyHostsAreSuspectsWaitsForTheirChecksNotFinishes) {
  // Chaos schedule 7: the last trials' hosts were all suspects (their checks
  // out), nothing ran, and step() ended the sweep FINISHED with trials left.
  Harness h;
  h.open(hosts_spec(1, /*max_host_failures=*/2), 2, nullptr, false, true, kHosts);
  h.fake->hold_checks = true;
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 1u);
  h.fake->crash({0, 1}, "could not start", true, kHosts, /*uncertain=*/true);
  ASSERT_TRUE(h.step());
  EXPECT_TRUE(h.fake->live_attempts().empty());
  EXPECT_TRUE(h.step()) << "every host is being checked: the sweep waits for the answers";
  EXPECT_TRUE(h.step());
  EXPECT_EQ(h.status(0), "PENDING");
  h.fake->answer_check(kHosts[0], true);
  h.fake->answer_check(kHosts[1], true);
  ASSERT_TRUE(h.step());
  ASSERT_TRUE(h.step());
  ASSERT_EQ(h.fake->started.size(), 2u) << "the retry starts once the suspects are cleared";
  h.fake->hold_checks = false;
}

TEST(DriverHosts, ThePreflightAsksEveryHostForTheProgramAndFolderTheTrialsUse) {
  SweepSpec spec = hosts_spec(1);
  spec.trainable = "command";
  spec.command = {{"argv", {"/opt/train.py", "--x", "{x}"}}, {"cwd", "/work/run"}};
  Harness h;
  h.open(spec, 2, nullptr, false, true, kHosts);
  ASSERT_GE(h.fake->checks.size(), kHosts.size());
  for (size_t i = 0; i < kHosts.size(); ++i)
    EXPECT_EQ(h.fake->checks[i].paths, (std::vector<std::string>{"/opt/train.py", "/work/run"}));
  // A program found in PATH, or one named by a parameter, is not a path to check.
  SweepSpec in_path = hosts_spec(1);
  in_path.trainable = "command";
  in_path.command = {{"argv", {"python3", "train.py"}}};
  Harness h2;
  h2.open(in_path, 2, nullptr, false, true, kHosts);
  ASSERT_FALSE(h2.fake->checks.empty());
  EXPECT_TRUE(h2.fake->checks[0].paths.empty());
}

}  // namespace
}  // namespace tune

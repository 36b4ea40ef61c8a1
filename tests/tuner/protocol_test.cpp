// The worker protocol: every message round-trips; frames and fields that are
// not the protocol decode to nothing (the peer is then treated as gone).
#include "tuner/exec/protocol.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace tune::internal {
namespace {

std::string frame_of(const std::string& body) {
  const auto n = static_cast<uint32_t>(body.size());
  std::string frame = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                       static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  return frame + body;
}

TrialStart sample_trial() {
  TrialStart trial;
  trial.experiment = "e";
  trial.trainable = "t";
  trial.trial_index = 7;
  trial.trial_dir = "/tmp/x";
  trial.config = {{"lr", 0.1}};
  trial.iteration = 3;
  trial.exploits = 1;
  trial.checkpoint = Checkpoint{"/tmp/x/checkpoint_000003", 3};
  return trial;
}

TEST(Protocol, EveryMessageRoundTrips) {
  TrialStart trial = sample_trial();
  trial.setup = {{"data", {{"path", "a.csv"}}}, {"preprocess", nullptr}};
  auto run = decode_down(encode(DownMessage{RunMessage{trial}}));
  ASSERT_TRUE(run && std::holds_alternative<RunMessage>(*run));
  EXPECT_EQ(std::get<RunMessage>(*run).trial.to_json(), trial.to_json());

  auto verdict = decode_down(encode(DownMessage{VerdictMessage{Verdict::kContinue}}));
  ASSERT_TRUE(verdict && std::holds_alternative<VerdictMessage>(*verdict));
  EXPECT_EQ(std::get<VerdictMessage>(*verdict).verdict, Verdict::kContinue);
  EXPECT_TRUE(std::holds_alternative<ShutdownMessage>(*decode_down(encode(DownMessage{ShutdownMessage{}}))));

  auto result = decode_up(encode(UpMessage{ResultMessage{{{"loss", 0.5}}, "/c"}}));
  ASSERT_TRUE(result && std::holds_alternative<ResultMessage>(*result));
  EXPECT_EQ(std::get<ResultMessage>(*result).metrics, (Json{{"loss", 0.5}}));
  EXPECT_EQ(std::get<ResultMessage>(*result).checkpoint, "/c");
  auto hello = decode_up(encode(UpMessage{HelloMessage{3, 1234, 2}}));
  ASSERT_TRUE(hello && std::holds_alternative<HelloMessage>(*hello));
  EXPECT_EQ(std::get<HelloMessage>(*hello).world_size, 2);
  EXPECT_TRUE(std::get<DoneMessage>(*decode_up(encode(UpMessage{DoneMessage{true}}))).stopped);
  EXPECT_EQ(std::get<ErrorMessage>(*decode_up(encode(UpMessage{ErrorMessage{"boom", ""}}))).message, "boom");
  EXPECT_TRUE(std::get<ErrorMessage>(*decode_up(encode(UpMessage{ErrorMessage{"boom", ""}}))).host_fault.empty());
  const auto full = std::get<ErrorMessage>(*decode_up(encode(UpMessage{ErrorMessage{"boom", "its scratch is full"}})));
  EXPECT_EQ(full.host_fault, "its scratch is full");
  EXPECT_FALSE(decode_up(Json{{"type", "error"}, {"message", "boom"}, {"host_fault", 3}}));
}

TEST(Protocol, MalformedMessagesDecodeToNothing) {
  EXPECT_FALSE(decode_up(Json::array()));
  EXPECT_FALSE(decode_up(Json{{"type", 5}}));
  EXPECT_FALSE(decode_up(Json{{"type", "result"}}));                       // no metrics
  EXPECT_FALSE(decode_up(Json{{"type", "result"}, {"metrics", 1}, {"checkpoint", 2}}));
  EXPECT_FALSE(decode_up(Json{{"type", "hello"}, {"group", 1}, {"pid", 2}, {"world_size", 0}}));
  EXPECT_FALSE(decode_up(Json{{"type", "hello"}, {"group", 1e20}, {"pid", 2}, {"world_size", 1}}));
  EXPECT_FALSE(decode_up(Json{{"type", "shutdown"}}));                     // a down message going up
  EXPECT_FALSE(decode_down(Json{{"type", "run"}, {"trial", {{"experiment", "e"}}}}));  // fields missing
  EXPECT_FALSE(decode_down(Json{{"type", "verdict"}, {"continue", "yes"}}));
  EXPECT_FALSE(decode_down(Json{{"type", "result"}, {"metrics", {}}, {"checkpoint", ""}}));
}

// A run message whose integer fields hold floats or numbers out of range is a
// bad frame, not a trial started at a garbage index (the fuzzer found
// "trial_index": 1e114 converted to int64_t: undefined behaviour).
TEST(Protocol, ARunMessageWithNonIntegerNumbersDecodesToNothing) {
  const Json good = encode(DownMessage{RunMessage{sample_trial()}});
  ASSERT_TRUE(decode_down(good));
  const std::vector<Json> bad_numbers = {1e114, -1e114, 2.5, Json(uint64_t{1} << 63), "7", nullptr};
  for (const char* field : {"trial_index", "iteration", "exploits", "cpus"}) {
    for (const Json& bad : bad_numbers) {
      Json frame = good;
      frame["trial"][field] = bad;
      EXPECT_FALSE(decode_down(frame)) << field << " = " << bad.dump();
    }
  }
  for (const Json& bad : bad_numbers) {
    Json frame = good;
    frame["trial"]["checkpoint"]["iteration"] = bad;
    EXPECT_FALSE(decode_down(frame)) << "checkpoint.iteration = " << bad.dump();
  }
  Json zero_cpus = good;
  zero_cpus["trial"]["cpus"] = 0;
  EXPECT_FALSE(decode_down(zero_cpus));
  Json old_peer = good;  // a frame from before "exploits" existed still decodes
  old_peer["trial"].erase("exploits");
  auto decoded = decode_down(old_peer);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(std::get<RunMessage>(*decoded).trial.exploits, 0);
}

TEST(Protocol, FramesAreExactAndBounded) {
  EXPECT_EQ(*parse_frame(frame_of(R"({"type":"done"})")), (Json{{"type", "done"}}));
  EXPECT_FALSE(parse_frame(frame_of(R"({"type":"done"})") + "x"));  // trailing bytes
  EXPECT_FALSE(parse_frame(frame_of("[1, 2]")));                     // not an object
  EXPECT_FALSE(parse_frame(frame_of("{\"a\": ")));                   // truncated JSON
  EXPECT_FALSE(parse_frame(std::string("\xff\xff\xff\xff", 4)));     // 4 GiB claimed
  EXPECT_FALSE(parse_frame("ab"));
}

TEST(Protocol, MessagesCrossASocketIntact) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const Json big = {{"type", "result"}, {"metrics", {{"blob", std::string(1 << 20, 'x')}}}, {"checkpoint", ""}};
  bool sent = false;
  std::thread writer([&] {  // 1 MiB does not fit the socket's buffer: write while the test reads
    sent = send_message(fds[0], encode(UpMessage{HelloMessage{1, 2, 3}})) && send_message(fds[0], big);
    ::close(fds[0]);
  });
  EXPECT_EQ(*receive_message(fds[1]), encode(UpMessage{HelloMessage{1, 2, 3}}));
  EXPECT_EQ(*receive_message(fds[1]), big);
  writer.join();
  EXPECT_TRUE(sent);
  EXPECT_FALSE(receive_message(fds[1])) << "EOF";
  ::close(fds[1]);
}

}  // namespace
}  // namespace tune::internal

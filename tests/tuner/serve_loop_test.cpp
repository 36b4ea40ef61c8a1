// The connection loop (tuner/serve/serve_loop.h): limits too small to reach
// through ServeOptions (the request bodies it holds at once), and which
// requests it answers on its own thread.
#include "tuner/serve/serve_loop.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve_test_util.h"
#include "tuner/serve/serve_routes.h"
#include "tuner/serve/serve_socket.h"

namespace tune::serve_detail {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace serve_testing;

// A ConnectionLoop serving the fake model on a thread of its own.
class RunningLoop {
 public:
  explicit RunningLoop(LoopOptions options, ServedModel model = fake_model())
      : routes_(std::move(model), ServeOptions{}, metrics_),
        listener_(listen_on("127.0.0.1", 0)),
        port_(bound_port(listener_)),
        loop_(listener_, routes_, metrics_, options),
        thread_([this] { loop_.run(); }) {}
  ~RunningLoop() {
    loop_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  Metrics metrics_;
  Routes routes_;
  int listener_;
  int port_;
  ConnectionLoop loop_;
  std::thread thread_;
};

std::string body_of(size_t size) {
  std::string body = R"({"instances": [{"a": 1}], "padding": ")";
  body += std::string(size - body.size() - 2, 'x') + "\"}";
  return body;
}

TEST(ServeLoop, BodiesBeyondTheBudgetAreA503AndTheOthersGoOn) {
  LoopOptions options;
  options.limits.max_body_bytes = 800;
  options.body_budget = 1000;
  RunningLoop running(options);
  const std::string body = body_of(800);
  const std::string head =
      "POST /v1/models/iris:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\nConnection: close\r\n\r\n";
  int fds[2] = {connect_to(running.port()), connect_to(running.port())};
  ASSERT_GE(fds[0], 0);
  ASSERT_GE(fds[1], 0);
  for (int fd : fds) ASSERT_TRUE(send_all(fd, head + body.substr(0, 600)));
  // Whichever body came second does not fit beside the first.
  std::string answers[2];
  auto deadline = Clock::now() + std::chrono::seconds(10);
  int refused = -1;
  while (refused < 0 && Clock::now() < deadline) {
    for (int i = 0; i < 2 && refused < 0; ++i) {
      answers[i] += read_until_closed(fds[i], std::chrono::milliseconds(20));
      if (!answers[i].empty()) refused = i;
    }
  }
  ASSERT_GE(refused, 0) << "neither request was refused";
  bool closed = false;
  answers[refused] += read_until_closed(fds[refused], std::chrono::seconds(10), &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(answers[refused], StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(answers[refused], HasSubstr("Retry-After: 1\r\n"));
  int kept = fds[1 - refused];
  ASSERT_TRUE(send_all(kept, body.substr(600)));
  std::string answered = read_until_closed(kept, std::chrono::seconds(10));
  EXPECT_THAT(answered, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(answered, HasSubstr("{\"predictions\":[1.0]}"));
  for (int fd : fds) ::close(fd);
}

// Quick answers are given on the loop's thread (no hand-off to a worker and
// back); a model that turns slow holds the loop up once, and then slow or
// not, requests go to the workers while the loop goes on reading and writing.
TEST(ServeLoop, AModelThatTurnsSlowHoldsUpTheLoopOnceAndThenGoesToTheWorkers) {
  ModelProbe probe;
  LoopOptions options;
  options.threads = 2;
  RunningLoop running(options, fake_model(&probe));
  httplib::Client client("127.0.0.1", running.port());
  client.set_read_timeout(10);
  for (int i = 0; i < 400; ++i) ASSERT_EQ(predict(client, R"({"instances": [{"a": 1}]})")->status, 200) << i;
  ASSERT_EQ(predict(client, R"({"instances": [{"sleep_ms": 200}]})")->status, 200);  // the once
  std::thread slow([&] {
    httplib::Client other("127.0.0.1", running.port());
    other.set_read_timeout(10);
    EXPECT_EQ(predict(other, R"({"instances": [{"sleep_ms": 3000}]})")->status, 200);
  });
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (probe.sleeping == 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(probe.sleeping.load(), 1);
  EXPECT_EQ(predict(client, R"({"instances": [{"a": 2}]})")->status, 200);
  EXPECT_EQ(probe.sleeping.load(), 1) << "the quick request waited for the slow one";
  slow.join();
}

}  // namespace
}  // namespace tune::serve_detail

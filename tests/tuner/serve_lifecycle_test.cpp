// The lifecycle of a `tune serve` Server (tuner/serve/serve.cpp): options
// checked before binding, ports, stopping with requests in flight, and
// serve_until_signal, over real sockets on 127.0.0.1 only.
#include "tuner/serve/serve.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "base/error.h"
#include "serve_test_util.h"

namespace tune {
namespace {

using namespace serve_testing;

TEST(Serve, ANonLoopbackHostNeedsAToken) {
  ServeOptions options = loopback_options();
  options.host = "0.0.0.0";
  try {
    Server server(fake_model(), options);
    FAIL() << "0.0.0.0 without a token was accepted";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(),
                 "tune serve: --host 0.0.0.0 listens beyond this machine: give --token (or TUNE_SERVE_TOKEN)");
  }
  for (const char* host : {"::", "192.168.1.10", "example.com"}) {
    options.host = host;
    EXPECT_THROW(Server(fake_model(), options), ConfigError) << host;
  }
}

TEST(Serve, BadOptionsAreOneLineConfigErrors) {
  ServeOptions options = loopback_options();
  options.port = 70000;
  EXPECT_THROW(
      {
        try {
          Server server(fake_model(), options);
        } catch (const ConfigError& error) {
          EXPECT_STREQ(error.what(), "tune serve: --port 70000 is outside 0..65535");
          throw;
        }
      },
      ConfigError);
  options.port = 0;
  options.token = "short";
  EXPECT_THROW(Server(fake_model(), options), ConfigError);
  options.token = "0123456789abcdef has spaces";
  EXPECT_THROW(Server(fake_model(), options), ConfigError);
  ServedModel model = fake_model();
  model.name = "a/b";
  EXPECT_THROW(Server(model, loopback_options()), ConfigError);
  model = fake_model();
  model.predict = nullptr;
  EXPECT_THROW(Server(model, loopback_options()), ConfigError);
}

TEST(Serve, StopLetsTheRequestsInFlightFinish) {
  ModelProbe probe;
  RunningServer running(fake_model(&probe));
  constexpr int kSlowRequests = 3;
  std::vector<int> statuses(kSlowRequests, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kSlowRequests; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client client = running.client();
      auto result = predict(client, R"({"instances": [{"sleep_ms": 400}]})");
      statuses[i] = result ? result->status : -1;
    });
  }
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (probe.sleeping < kSlowRequests && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(probe.sleeping.load(), kSlowRequests);
  auto stopping = Clock::now();
  running.stop();  // returns once run() has returned
  EXPECT_LT(Clock::now() - stopping, std::chrono::seconds(3));
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(statuses, std::vector<int>(kSlowRequests, 200));

  httplib::Client late("127.0.0.1", running.port());
  late.set_connection_timeout(1);
  EXPECT_FALSE(late.Get("/healthz"));
}

TEST(Serve, AnIdleKeptAliveConnectionDoesNotDelayStop) {
  RunningServer running;
  httplib::Client client = running.client();
  ASSERT_EQ(client.Get("/healthz")->status, 200);  // the connection stays open
  auto stopping = Clock::now();
  running.stop();
  EXPECT_LT(Clock::now() - stopping, std::chrono::milliseconds(1000));
}

TEST(Serve, StopBeforeRunMakesRunReturnAtOnce) {
  Server server(fake_model(), loopback_options());
  server.stop();
  auto started = Clock::now();
  server.run();
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(1));
}

TEST(Serve, PortZeroGivesARealPort) {
  RunningServer running;
  EXPECT_GT(running.port(), 0);
  EXPECT_LE(running.port(), 65535);
  httplib::Client client = running.client();
  EXPECT_EQ(client.Get("/healthz")->status, 200);
}

TEST(Serve, ATakenPortIsAOneLineError) {
  Server first(fake_model(), loopback_options());
  ServeOptions options = loopback_options();
  options.port = first.port();
  try {
    Server second(fake_model(), options);
    FAIL() << "bound a taken port";
  } catch (const ConfigError& error) {
    FAIL() << error.what();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "tune serve: cannot listen on 127.0.0.1:" +
                                             std::to_string(first.port()) + " (Address already in use)");
  }
}

// Reads one line from `fd` within `timeout`; "" if none came.
std::string read_line(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  auto deadline = Clock::now() + timeout;
  char c = 0;
  while (Clock::now() < deadline) {
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, 50) <= 0) continue;
    if (::read(fd, &c, 1) != 1 || c == '\n') return line;
    line += c;
  }
  return "";
}

// waitpid with a deadline; the child is killed (and -1 returned) after it.
int wait_for_exit(pid_t child, std::chrono::seconds timeout) {
  auto deadline = Clock::now() + timeout;
  int status = 0;
  while (Clock::now() < deadline) {
    if (::waitpid(child, &status, WNOHANG) == child) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  return -1;
}

// serve_until_signal in a child: where it serves, a health check, then
// `signal` ends it with 0 within 10 s.
void serve_then_stop_with(int signal) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the child leaves through _exit only, never through gtest
    ::close(pipe_fds[0]);
    int code = 98;
    try {
      std::ofstream out("/dev/fd/" + std::to_string(pipe_fds[1]));
      code = serve_until_signal(fake_model(), loopback_options(), out);
    } catch (...) {
      code = 99;
    }
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::string line = read_line(pipe_fds[0], std::chrono::milliseconds(10000));
  ::close(pipe_fds[0]);
  std::smatch match;
  bool serving = std::regex_match(
      line, match,
      std::regex(R"(serving iris \(trial 7, metric val_loss=0.5\) at http://127\.0\.0\.1:(\d+)/v1/models/iris)"));
  EXPECT_TRUE(serving) << line;
  if (serving) {
    httplib::Client client("127.0.0.1", std::stoi(match[1]));
    client.set_connection_timeout(5);
    auto result = client.Get("/healthz");
    EXPECT_TRUE(result && result->status == 200);
  }
  ASSERT_EQ(::kill(child, signal), 0);
  int status = wait_for_exit(child, std::chrono::seconds(10));
  ASSERT_NE(status, -1) << "serve_until_signal did not return within 10 s of signal " << signal;
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ServeUntilSignal, PrintsWhereItServesAndReturnsZeroOnSigterm) { serve_then_stop_with(SIGTERM); }

// A closed terminal (SIGHUP) stops it as SIGTERM does, after the requests in
// flight; it used to kill the process outright.
TEST(ServeUntilSignal, AHangupStopsItGracefullyToo) { serve_then_stop_with(SIGHUP); }

}  // namespace
}  // namespace tune

// The driver <-> worker transport: a Unix socket in a private directory or TCP
// on one loopback address; only a peer that proves the secret gets through,
// a peer that does not (or says nothing, or trickles) is dropped in bounded
// time, and none of them delays a worker that holds the secret.
#include "tuner/exec/transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <atomic>
#include <regex>
#include <set>
#include <thread>

#include "base/error.h"
#include "tuner/exec/mpi_launcher.h"
#include "tuner/exec/protocol.h"

namespace tune::internal {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Closes a descriptor at the end of a scope.
struct Fd {
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int fd;
};

// Receive/send time limits, so that no test can hang on a socket.
void bound(int fd, int seconds) {
  timeval t{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

// A plain connection to a Listener's endpoint, without any handshake.
int connect_raw(const std::string& endpoint) {
  int fd = -1;
  if (endpoint.rfind("unix:", 0) == 0) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = endpoint.substr(5);
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return -1;
    }
  } else {
    const auto colon = endpoint.rfind(':');
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
    ::inet_pton(AF_INET, endpoint.substr(4, colon - 4).c_str(), &address.sin_addr);
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return -1;
    }
  }
  bound(fd, 5);
  return fd;
}

// A worker on another thread: connects with `secret`, says hello, then
// answers one message with a "pong" echoing its "n", and one raw frame
// reversed.
std::future<void> start_worker(const std::string& endpoint, const Secret& secret) {
  return std::async(std::launch::async, [endpoint, secret] {
    Fd fd(connect_driver(endpoint, secret));
    bound(fd.fd, 3);
    if (!send_message(fd.fd, {{"type", "hello"}, {"group", 1}})) throw Error("worker: cannot say hello");
    const auto ping = receive_message(fd.fd);
    if (!ping || ping->value("type", "") != "ping") throw Error("worker: no ping");
    if (!send_message(fd.fd, {{"type", "pong"}, {"n", ping->value("n", -1)}})) throw Error("worker: cannot send");
    std::string bytes;
    if (!receive_bytes(fd.fd, bytes, 1024)) throw Error("worker: no bytes");
    std::string reversed(bytes.rbegin(), bytes.rend());
    if (!send_bytes(fd.fd, reversed.data(), reversed.size())) throw Error("worker: cannot send bytes");
  });
}

// Accepts the worker start_worker runs and talks with it both ways.
void accept_and_talk(Listener& listener, std::future<void>& worker) {
  auto peer = listener.accept_one(5000);
  Fd fd(peer ? peer->fd : -1);
  if (peer) EXPECT_EQ(peer->first, (Json{{"type", "hello"}, {"group", 1}}));
  std::optional<Json> pong;
  std::string bytes;
  if (fd.fd >= 0) {
    bound(fd.fd, 3);
    const std::string raw("\x00\x01tune\xff", 7);
    if (send_message(fd.fd, {{"type", "ping"}, {"n", 7}})) pong = receive_message(fd.fd);
    if (send_bytes(fd.fd, raw.data(), raw.size())) receive_bytes(fd.fd, bytes, 1024);
  }
  EXPECT_NO_THROW(worker.get());
  ASSERT_GE(fd.fd, 0);
  ASSERT_TRUE(pong);
  EXPECT_EQ(*pong, (Json{{"type", "pong"}, {"n", 7}}));
  EXPECT_EQ(bytes, std::string("\xff" "enut\x01\x00", 7));
}

TEST(Transport, UnixSocketAcceptsAWorkerWithTheToken) {
  auto listener = Listener::unix_socket(Secret::random());
  ASSERT_EQ(listener->endpoint().rfind("unix:", 0), 0u) << listener->endpoint();
  EXPECT_EQ(listener->endpoint().substr(listener->endpoint().size() - 12), "/driver.sock");
  auto worker = start_worker(listener->endpoint(), listener->secret());
  accept_and_talk(*listener, worker);
}

// A driver killed with -9 leaves its listener's folder (TEMP/tune-driver-XXXXXX
// with driver.sock); the next driver's listener removes it, and not a folder
// whose driver runs or that holds anything else.
// OpenMPI's shared-memory segments of a job whose ranks someone else killed
// (Slurm past KillWait): a new executor removes this user's that are a
// minute old and that no process maps; a segment a live rank maps, a fresh
// one and any other file stay.
TEST(MpirunLeftovers, OrphanedSegmentsOfAJobKilledElsewhereAreRemovedAndNothingElse) {
  testing::TempDir dir;
  const std::string uid = std::to_string(::geteuid());
  auto make = [&](const std::string& name, int age_s) {
    const std::string path = dir.file(name);
    std::ofstream(path) << std::string(4096, 'x');
    const timespec times[2] = {{::time(nullptr) - age_s, 0}, {::time(nullptr) - age_s, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    return path;
  };
  const std::string orphan = make("vader_segment.node." + uid + ".2c800001.0", 120);
  const std::string orphan2 = make("vader_segment.node." + uid + ".2c800001.1", 3600);
  const std::string live = make("vader_segment.node." + uid + ".41530001.0", 120);
  const std::string fresh = make("vader_segment.node." + uid + ".51530001.0", 5);
  const std::string other = make("not_a_segment", 3600);
  Fd fd(::open(live.c_str(), O_RDWR));
  void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);  // a rank still running
  ASSERT_NE(map, MAP_FAILED);
  EXPECT_EQ(remove_orphaned_segments(dir.path(), 60), 2);
  EXPECT_FALSE(std::filesystem::exists(orphan));
  EXPECT_FALSE(std::filesystem::exists(orphan2));
  EXPECT_TRUE(std::filesystem::exists(live)) << "mapped by a live process";
  EXPECT_TRUE(std::filesystem::exists(fresh)) << "younger than a minute: a job may be starting";
  EXPECT_TRUE(std::filesystem::exists(other));
  ::munmap(map, 4096);
  EXPECT_EQ(remove_orphaned_segments(dir.path(), 60), 1) << "unmapped now";
  EXPECT_FALSE(std::filesystem::exists(live));
}

TEST(Transport, AListenerFolderOfAKilledDriverIsRemovedByTheNextOne) {
  testing::TempDir tmp;
  struct TmpDir {  // TMPDIR set for this test, restored however it ends
    explicit TmpDir(const std::string& path) : had(std::getenv("TMPDIR") != nullptr) {
      if (had) saved = std::getenv("TMPDIR");
      ::setenv("TMPDIR", path.c_str(), 1);
    }
    ~TmpDir() { had ? ::setenv("TMPDIR", saved.c_str(), 1) : ::unsetenv("TMPDIR"); }
    bool had;
    std::string saved;
  } tmpdir(tmp.path());
  // A "driver" that makes its listener and dies without ending it; its folder.
  auto killed_driver = [&]() {
    int pipe_fds[2];
    EXPECT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      auto listener = Listener::unix_socket(Secret::random());
      const std::string endpoint = listener->endpoint();
      (void)!::write(pipe_fds[1], endpoint.data(), endpoint.size());
      ::_exit(0);  // no destructor, as kill -9
    }
    ::close(pipe_fds[1]);
    char buffer[512];
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    ::close(pipe_fds[0]);
    EXPECT_EQ(::waitpid(child, nullptr, 0), child);
    const std::string endpoint(buffer, n > 0 ? static_cast<size_t>(n) : 0);
    return std::filesystem::path(endpoint.substr(5)).parent_path();  // unix:DIR/driver.sock
  };
  const auto with_more = killed_driver();
  std::ofstream(with_more / "model.pt") << "not tune's";
  const auto abandoned = killed_driver();  // its listener left `with_more` alone
  ASSERT_TRUE(std::filesystem::exists(with_more / "driver.sock"));
  ASSERT_TRUE(std::filesystem::exists(abandoned / "driver.sock"));
  ASSERT_EQ(abandoned.filename().string().rfind("tune-driver-", 0), 0u) << abandoned;
  {
    auto running = Listener::unix_socket(Secret::random());
    const auto running_dir = std::filesystem::path(running->endpoint().substr(5)).parent_path();
    EXPECT_FALSE(std::filesystem::exists(abandoned)) << "the killed driver's folder is removed";
    EXPECT_TRUE(std::filesystem::exists(with_more / "model.pt")) << "a folder holding something else stays";
    auto second = Listener::unix_socket(Secret::random());
    EXPECT_TRUE(std::filesystem::exists(running_dir / "driver.sock")) << "a running driver's folder stays";
  }
  size_t left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path())) left += entry.path() != with_more;
  EXPECT_EQ(left, 0u) << "both listeners removed their folders";
}

TEST(Transport, TcpOnLoopbackAcceptsAWorkerWithTheToken) {
  auto listener = Listener::tcp("127.0.0.1", Secret::random());
  const std::regex form(R"(tcp:127\.0\.0\.1:([0-9]+))");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(listener->endpoint(), match, form)) << listener->endpoint();
  const int port = std::stoi(match[1].str());
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  EXPECT_EQ(listener->endpoint().find("0.0.0.0"), std::string::npos);
  auto worker = start_worker(listener->endpoint(), listener->secret());
  accept_and_talk(*listener, worker);
  // The listener keeps accepting: a second worker gets through too.
  auto second = start_worker(listener->endpoint(), listener->secret());
  accept_and_talk(*listener, second);
}

TEST(Transport, TcpOnIpv6LoopbackBracketsTheAddress) {
  std::unique_ptr<Listener> listener;
  try {
    listener = Listener::tcp("::1", Secret::random());
  } catch (const Error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  EXPECT_TRUE(std::regex_match(listener->endpoint(), std::regex(R"(tcp:\[::1\]:[0-9]+)"))) << listener->endpoint();
  auto worker = start_worker(listener->endpoint(), listener->secret());
  accept_and_talk(*listener, worker);
}

TEST(Transport, WrongSecretIsRefusedBothWays) {
  std::vector<std::unique_ptr<Listener>> listeners;
  listeners.push_back(Listener::unix_socket(Secret::random()));
  listeners.push_back(Listener::tcp("127.0.0.1", Secret::random()));
  for (auto& listener : listeners) {
    SCOPED_TRACE(listener->endpoint());
    const Secret wrong = Secret::random();
    ASSERT_NE(wrong.key, listener->secret().key);
    auto impostor = std::async(std::launch::async, [&] { return connect_driver(listener->endpoint(), wrong); });
    const auto start = Clock::now();
    auto peer = listener->accept_one(1500);
    EXPECT_FALSE(peer);
    if (peer) ::close(peer->fd);
    EXPECT_EQ(listener->dropped(), 1u);
    try {
      const int worker_fd = impostor.get();
      ::close(worker_fd);
      ADD_FAILURE() << "connect_driver accepted a wrong token";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(listener->endpoint()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("key"), std::string::npos) << e.what();
    }
    // The listener still takes the real worker afterwards.
    auto worker = start_worker(listener->endpoint(), listener->secret());
    accept_and_talk(*listener, worker);
  }
}

TEST(Transport, GarbagePeersAreDroppedQuickly) {
  auto listener = Listener::unix_socket(Secret::random());
  const auto start = Clock::now();
  {
    Fd peer(connect_raw(listener->endpoint()));  // sends text, not frames
    ASSERT_GE(peer.fd, 0);
    const std::string garbage = "hello driver, let me in\n";
    ASSERT_EQ(::send(peer.fd, garbage.data(), garbage.size(), MSG_NOSIGNAL), static_cast<ssize_t>(garbage.size()));
    EXPECT_FALSE(listener->accept_one(1000));
  }
  {
    Fd peer(connect_raw(listener->endpoint()));  // a well-formed answer with a bogus proof
    ASSERT_GE(peer.fd, 0);
    auto accepted = std::async(std::launch::async, [&] { return listener->accept_one(1000); });
    const auto challenge = receive_message(peer.fd);
    if (challenge)
      send_message(peer.fd, {{"type", "answer"}, {"nonce", random_token()}, {"proof", random_token()}});
    EXPECT_FALSE(accepted.get());
    ASSERT_TRUE(challenge);
    EXPECT_EQ(challenge->value("type", ""), "challenge");
    EXPECT_FALSE(receive_message(peer.fd)) << "the driver should hang up";
  }
  {
    Fd peer(connect_raw(listener->endpoint()));  // hangs up at once
    ASSERT_GE(peer.fd, 0);
    ::close(peer.fd);
    peer.fd = -1;
    EXPECT_FALSE(listener->accept_one(1000));
  }
  EXPECT_EQ(listener->dropped(), 3u);  // each one, long before its 5 s were up
  EXPECT_LT(seconds_since(start), 4.5);
  auto worker = start_worker(listener->endpoint(), listener->secret());
  accept_and_talk(*listener, worker);
}

TEST(Transport, ASilentPeerNeverDelaysAWorkerAndIsDroppedAtItsDeadline) {
  ListenerLimits limits;
  limits.handshake_s = 2;
  auto listener = Listener::tcp("127.0.0.1", Secret::random(), limits);
  Fd silent(connect_raw(listener->endpoint()));  // connects, then says nothing
  ASSERT_GE(silent.fd, 0);
  EXPECT_FALSE(listener->accept_one(100));  // takes it in
  EXPECT_EQ(listener->pending(), 1u);
  auto worker = start_worker(listener->endpoint(), listener->secret());  // arrives behind it
  const auto start = Clock::now();
  accept_and_talk(*listener, worker);
  EXPECT_LT(seconds_since(start), 1.5) << "the worker waited for the silent peer";
  EXPECT_EQ(listener->dropped(), 0u);
  // Its deadline (the whole handshake) passes: dropped, and it sees the end.
  EXPECT_FALSE(listener->accept_one(3000));
  EXPECT_EQ(listener->dropped(), 1u);
  EXPECT_EQ(listener->pending(), 0u);
  char byte;
  ::recv(silent.fd, &byte, 1, 0);  // the challenge's first byte, or the end
  std::string rest(64, '\0');
  while (::recv(silent.fd, rest.data(), rest.size(), 0) > 0) {
  }
  EXPECT_GE(seconds_since(start), 1.0);
}

// A frame header announcing 1,000 bytes, then a byte at a time: the whole
// handshake has one deadline, however the bytes trickle.
TEST(Transport, ATricklingPeerIsDroppedAtTheHandshakeDeadline) {
  ListenerLimits limits;
  limits.handshake_s = 2;
  auto listener = Listener::tcp("127.0.0.1", Secret::random(), limits);
  std::atomic<bool> done{false};
  auto trickler = std::async(std::launch::async, [&] {
    Fd peer(connect_raw(listener->endpoint()));
    const char header[4] = {static_cast<char>(0xe8), 0x03, 0, 0};
    ::send(peer.fd, header, 4, MSG_NOSIGNAL);
    int sent = 0;
    while (!done && sent < 100 && ::send(peer.fd, "x", 1, MSG_NOSIGNAL) == 1) {
      ++sent;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return sent;
  });
  const auto start = Clock::now();
  for (int i = 0; i < 40 && listener->dropped() == 0; ++i) EXPECT_FALSE(listener->accept_one(100));
  const double waited = seconds_since(start);
  done = true;
  EXPECT_EQ(listener->dropped(), 1u);
  EXPECT_GE(waited, 1.5);
  EXPECT_LT(waited, 3.9);
  EXPECT_LT(trickler.get(), 25);  // it could not keep trickling
}

TEST(Transport, AHandshakeFrameOverItsLimitIsDroppedAtOnce) {
  auto listener = Listener::tcp("127.0.0.1", Secret::random());
  Fd peer(connect_raw(listener->endpoint()));
  const char header[4] = {0, 0, 0, 0x10};  // 256 MiB
  ASSERT_EQ(::send(peer.fd, header, 4, MSG_NOSIGNAL), 4);
  const auto start = Clock::now();
  for (int i = 0; i < 20 && listener->dropped() == 0; ++i) EXPECT_FALSE(listener->accept_one(50));
  EXPECT_EQ(listener->dropped(), 1u);
  EXPECT_LT(seconds_since(start), 1.0);
}

// 40 silent connections from the worker's own address: the oldest beyond 16
// are dropped as new ones come, and the worker, newest, gets in at once.
TEST(Transport, AFloodOfSilentPeersIsCappedAndTheWorkerStillGetsIn) {
  auto listener = Listener::tcp("127.0.0.1", Secret::random());
  std::vector<std::unique_ptr<Fd>> flood;
  for (int i = 0; i < 40; ++i) flood.push_back(std::make_unique<Fd>(connect_raw(listener->endpoint())));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(listener->accept_one(20));
  EXPECT_EQ(listener->pending(), 16u);
  EXPECT_EQ(listener->dropped(), 24u);
  auto worker = start_worker(listener->endpoint(), listener->secret());
  const auto start = Clock::now();
  accept_and_talk(*listener, worker);
  EXPECT_LT(seconds_since(start), 1.5);
}

// The first frame comes from a peer that holds the secret, but it is still
// bounded in size and nesting (a frame that would crash nlohmann's copy).
TEST(Transport, TheFirstFrameIsBoundedInSizeAndNesting) {
  auto listener = Listener::tcp("127.0.0.1", Secret::random());
  const Secret secret = listener->secret();
  auto deep = std::async(std::launch::async, [&] {
    Fd fd(connect_driver(listener->endpoint(), secret));
    std::string body = "{\"type\":" + std::string(60000, '[') + std::string(60000, ']') + "}";
    const auto n = static_cast<uint32_t>(body.size());
    const char header[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                            static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
    ::send(fd.fd, header, 4, MSG_NOSIGNAL);
    ::send(fd.fd, body.data(), body.size(), MSG_NOSIGNAL);
  });
  for (int i = 0; i < 30 && listener->dropped() == 0; ++i) EXPECT_FALSE(listener->accept_one(100));
  deep.get();
  EXPECT_EQ(listener->dropped(), 1u);
}

TEST(Transport, AcceptOneWithNobodyWaitsTheTimeout) {
  auto listener = Listener::unix_socket(Secret::random());
  const auto start = Clock::now();
  EXPECT_FALSE(listener->accept_one(150));
  const double waited = seconds_since(start);
  EXPECT_GE(waited, 0.14);
}

TEST(Transport, UnixSocketLivesInAPrivateDirectoryRemovedWithTheListener) {
  std::string dir;
  {
    auto listener = Listener::unix_socket(Secret::random());
    const std::string path = listener->endpoint().substr(5);
    dir = std::filesystem::path(path).parent_path().string();
    struct stat info {};
    ASSERT_EQ(::stat(dir.c_str(), &info), 0) << dir;
    EXPECT_TRUE(S_ISDIR(info.st_mode));
    EXPECT_EQ(info.st_mode & 07777, 0700u) << std::oct << (info.st_mode & 07777);
    EXPECT_EQ(info.st_uid, ::getuid());
    ASSERT_EQ(::stat(path.c_str(), &info), 0) << path;
    EXPECT_TRUE(S_ISSOCK(info.st_mode));
    // Each listener gets its own directory and key.
    auto other = Listener::unix_socket(Secret::random());
    EXPECT_NE(other->endpoint(), listener->endpoint());
    EXPECT_NE(other->secret().key, listener->secret().key);
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
}

TEST(Transport, TcpRefusesWhatIsNotAnAddress) {
  for (const std::string address : {"", "localhost", "not-an-ip", "10.0.0.300"}) {
    SCOPED_TRACE(address);
    try {
      Listener::tcp(address, Secret::random());
      ADD_FAILURE() << "listened on '" << address << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + address + "'"), std::string::npos) << e.what();
    }
  }
  // An address this machine does not have cannot be bound.
  EXPECT_THROW(Listener::tcp("192.0.2.254", Secret::random()), Error);
}

TEST(Transport, ConnectDriverErrorsNameTheEndpoint) {
  const Secret token = Secret::random();
  for (const std::string endpoint : {"bogus:1", "unix:/nonexistent-tune-dir/driver.sock", "tcp:127.0.0.1:1"}) {
    SCOPED_TRACE(endpoint);
    try {
      ::close(connect_driver(endpoint, token));
      ADD_FAILURE() << "connected to " << endpoint;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(endpoint), std::string::npos) << e.what();
    }
  }
}

TEST(Transport, RandomTokenIs64HexCharsAndFreshEachTime) {
  const std::string a = random_token(), b = random_token();
  EXPECT_TRUE(std::regex_match(a, std::regex("[0-9a-f]{64}"))) << a;
  EXPECT_TRUE(std::regex_match(b, std::regex("[0-9a-f]{64}"))) << b;
  EXPECT_NE(a, b);
  std::set<std::string> many;
  for (int i = 0; i < 100; ++i) many.insert(random_token());
  EXPECT_EQ(many.size(), 100u);
}

// Runs both sides of the handshake over a socketpair; (driver, worker).
std::pair<bool, bool> handshake(const std::string& driver_token, const std::string& worker_token) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  bound(fds[0], 3);
  bound(fds[1], 3);
  auto worker = std::async(std::launch::async, [&] { return prove_as_worker(fds[1], worker_token); });
  const bool driver = prove_as_driver(fds[0], driver_token);
  ::shutdown(fds[0], SHUT_RDWR);  // a driver that refuses hangs up
  const bool worker_ok = worker.get();
  ::close(fds[0]);
  ::close(fds[1]);
  return {driver, worker_ok};
}

TEST(Transport, HandshakeSucceedsOnlyWithTheSameToken) {
  const std::string token = random_token();
  EXPECT_EQ(handshake(token, token), std::make_pair(true, true));
  EXPECT_EQ(handshake(token, random_token()), std::make_pair(false, false));
  EXPECT_EQ(handshake("", "x"), std::make_pair(false, false));
  EXPECT_EQ(handshake("short", "short"), std::make_pair(true, true));
}

// A fake driver that does not know the token: the worker must not believe it,
// and the token itself never crosses the connection.
TEST(Transport, WorkerChecksTheDriversProofAndNeverSendsTheToken) {
  const std::string token = random_token();
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Fd driver(fds[0]), worker_end(fds[1]);
  bound(driver.fd, 3);
  bound(worker_end.fd, 3);
  auto worker = std::async(std::launch::async, [&] { return prove_as_worker(worker_end.fd, token); });
  std::optional<Json> answer;
  if (send_message(driver.fd, {{"type", "challenge"}, {"nonce", random_token()}})) {
    answer = receive_message(driver.fd);
    send_message(driver.fd, {{"type", "accepted"}, {"proof", random_token()}});
  }
  EXPECT_FALSE(worker.get());
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->value("type", ""), "answer");
  EXPECT_EQ(answer->dump().find(token), std::string::npos);

  // A challenge that is not 64 hex chars long is refused outright.
  int short_pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, short_pair), 0);
  Fd a(short_pair[0]), b(short_pair[1]);
  bound(b.fd, 3);
  ASSERT_TRUE(send_message(a.fd, {{"type", "challenge"}, {"nonce", "abc"}}));
  EXPECT_FALSE(prove_as_worker(b.fd, token));
}

// A private folder for key files, removed at the end.
struct KeyFolder {
  KeyFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tune-keys-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~KeyFolder() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

TEST(ClusterKey, WrittenPrivateAndReadBack) {
  KeyFolder keys;
  const std::string path = keys.file("sub/cluster.key");
  write_cluster_key(path);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  const std::string key = read_cluster_key(path);
  EXPECT_TRUE(std::regex_match(key, std::regex("[0-9a-f]{64}"))) << key;  // the newline is not part of it
  EXPECT_THROW(write_cluster_key(path), Error);  // never overwrites a key
  EXPECT_EQ(read_cluster_key(path), key);
}

TEST(ClusterKey, RefusesKeysOthersCanReadOrThatAreTooShortOrMissing) {
  KeyFolder keys;
  const std::string open = keys.file("open.key"), tiny = keys.file("tiny.key");
  std::ofstream(open) << std::string(64, 'a');
  ::chmod(open.c_str(), 0644);
  std::ofstream(tiny) << "short";
  ::chmod(tiny.c_str(), 0600);
  auto message = [](const std::string& path) {
    try {
      read_cluster_key(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message(open).find("chmod 600 " + open), std::string::npos) << message(open);
  EXPECT_NE(message(tiny).find("shorter than 32 bytes"), std::string::npos) << message(tiny);
  EXPECT_NE(message(keys.file("none")).find("no cluster key at"), std::string::npos);
  EXPECT_NE(message(keys.path).find("not a regular file"), std::string::npos);
}

// Two hosts with the same key file and the run's nonce derive the same
// session key; another nonce (another run) gives another. What travels in
// the environment names the file and the nonce, never a key.
TEST(ClusterKey, SessionKeysComeFromTheFileAndTheNonceAndNeverTravel) {
  KeyFolder keys;
  const std::string path = keys.file("cluster.key");
  write_cluster_key(path);
  const std::string cluster_key = read_cluster_key(path);
  const Secret driver = Secret::from_key_file(path);
  const Secret host = Secret::from_key_file(path, driver.nonce);
  EXPECT_EQ(driver.key, host.key);
  EXPECT_NE(driver.key, cluster_key);
  EXPECT_EQ(driver.nonce.size(), 64u);
  EXPECT_EQ(driver.fingerprint, key_fingerprint(cluster_key));
  EXPECT_NE(Secret::from_key_file(path).key, driver.key);  // a fresh nonce each run
  const auto env = secret_environment(driver);
  ASSERT_FALSE(env.empty());
  for (const auto& [name, value] : env) {
    EXPECT_EQ(value.find(driver.key), std::string::npos) << name;
    EXPECT_EQ(value.find(cluster_key), std::string::npos) << name;
  }
}

TEST(ClusterKey, AWorkerWithAnotherKeyFileIsRefusedAndToldWhich) {
  KeyFolder keys;
  write_cluster_key(keys.file("driver.key"));
  write_cluster_key(keys.file("other.key"));
  auto listener = Listener::tcp("127.0.0.1", Secret::from_key_file(keys.file("driver.key")));
  const Secret other = Secret::from_key_file(keys.file("other.key"), listener->secret().nonce);
  auto impostor = std::async(std::launch::async, [&] { return connect_driver(listener->endpoint(), other); });
  EXPECT_FALSE(listener->accept_one(1500));
  try {
    ::close(impostor.get());
    ADD_FAILURE() << "a worker with another cluster key got in";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(other.fingerprint), std::string::npos) << e.what();
  }
  const Secret same = Secret::from_key_file(keys.file("driver.key"), listener->secret().nonce);
  auto worker = start_worker(listener->endpoint(), same);
  accept_and_talk(*listener, worker);
}

TEST(Transport, InterfaceAddress) {
  EXPECT_EQ(interface_address("lo"), "127.0.0.1");
  EXPECT_EQ(interface_address("10.77.0.1"), "10.77.0.1");  // an address stands for itself
  EXPECT_EQ(interface_address("::1"), "::1");
  EXPECT_EQ(interface_address("tune-no-such-if"), "");
}

TEST(Transport, AddressTowardLoopback) {
  EXPECT_EQ(address_toward("127.0.0.1"), "127.0.0.1");
}

TEST(Transport, NetworkOfALocalAddress) {
  EXPECT_EQ(network_of("127.0.0.1"), "127.0.0.0/8");
  EXPECT_EQ(network_of("not an address"), "");
  // Every IPv4 address of this machine: "A.B.C.D/N" with the host bits cleared.
  std::set<std::string> local;
  ifaddrs* list = nullptr;
  ASSERT_EQ(::getifaddrs(&list), 0);
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    local.insert(text);
  }
  ::freeifaddrs(list);
  for (const auto& address : local) {
    SCOPED_TRACE(address);
    const std::string network = network_of(address);
    std::smatch match;
    ASSERT_TRUE(std::regex_match(network, match, std::regex(R"((\d+\.\d+\.\d+\.\d+)/(\d+))"))) << network;
    const int bits = std::stoi(match[2].str());
    ASSERT_GE(bits, 0);
    ASSERT_LE(bits, 32);
    in_addr net{}, host{};
    ASSERT_EQ(::inet_pton(AF_INET, match[1].str().c_str(), &net), 1);
    ASSERT_EQ(::inet_pton(AF_INET, address.c_str(), &host), 1);
    const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
    EXPECT_EQ(ntohl(net.s_addr), ntohl(host.s_addr) & mask);
  }
  // An address of no interface of this machine has no network here.
  if (!local.count("10.77.0.5")) {
    EXPECT_EQ(network_of("10.77.0.5"), "");
  }
}

}  // namespace
}  // namespace tune::internal

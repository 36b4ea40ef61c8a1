// Checkpoints between hosts: a directory's files named in a manifest, their
// bytes in frames, then a checksum; the receiver ends with the whole
// checkpoint in TARGET or nothing at all (no TARGET.partial either).
#include "tuner/exec/checkpoint_transfer.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <sstream>

#include "base/error.h"
#include "test_util.h"
#include "tuner/exec/protocol.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tune::internal {
namespace {

namespace fs = std::filesystem;
using Tree = std::map<std::string, std::string>;  // relative path -> bytes

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(random() & 0xff);
  return out;
}

void write_tree(const std::string& dir, const Tree& tree) {
  fs::create_directories(dir);
  for (const auto& [path, bytes] : tree) {
    const fs::path full = fs::path(dir) / path;
    fs::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << bytes;
  }
}

// Every regular file under `dir`, with its bytes.
Tree read_tree(const std::string& dir) {
  Tree tree;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    tree[fs::relative(entry.path(), dir).string()] = bytes.str();
  }
  return tree;
}

std::vector<std::pair<std::string, uint64_t>> pairs(const std::vector<CheckpointFile>& files) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& f : files) out.emplace_back(f.path, f.size);
  return out;
}

void bound(int fd, int seconds) {
  timeval t{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

struct Outcome {
  bool sent = false;
  std::string error;
  bool stream_broken = false;
};

// send_checkpoint on a thread, receive_checkpoint here, over a socketpair.
Outcome transfer(const std::string& dir, const std::vector<CheckpointFile>& sent_files,
                 const std::vector<CheckpointFile>& received_files, const std::string& target) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  bound(fds[0], 10);
  bound(fds[1], 10);
  auto sender = std::async(std::launch::async, [&] {
    const bool ok = send_checkpoint(fds[0], dir, sent_files);
    ::shutdown(fds[0], SHUT_WR);  // a sender that stops hangs up
    return ok;
  });
  Outcome outcome;
  const ReceivedCheckpoint got = receive_checkpoint(fds[1], received_files, target);
  outcome.error = got.error;
  outcome.stream_broken = got.stream_broken;
  ::close(fds[1]);  // a receiver that stops early unblocks the sender
  outcome.sent = sender.get();
  ::close(fds[0]);
  return outcome;
}

Outcome transfer(const std::string& dir, const std::vector<CheckpointFile>& files, const std::string& target) {
  return transfer(dir, files, files, target);
}

// What send_checkpoint writes, byte for byte.
std::string capture_stream(const std::string& dir, const std::vector<CheckpointFile>& files) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  auto reader = std::async(std::launch::async, [&] {
    std::string bytes;
    char buffer[65536];
    for (ssize_t n; (n = ::read(fds[1], buffer, sizeof buffer)) > 0;) bytes.append(buffer, static_cast<size_t>(n));
    return bytes;
  });
  EXPECT_TRUE(send_checkpoint(fds[0], dir, files));
  ::shutdown(fds[0], SHUT_WR);
  std::string bytes = reader.get();
  ::close(fds[0]);
  ::close(fds[1]);
  return bytes;
}

// receive_checkpoint of what `write` sends (then the writer hangs up).
template <typename Write>
std::string receive_forged(const std::vector<CheckpointFile>& files, const std::string& target, Write write) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  bound(fds[0], 10);
  bound(fds[1], 10);
  auto writer = std::async(std::launch::async, [&] {
    write(fds[0]);
    ::shutdown(fds[0], SHUT_WR);
  });
  std::string error = receive_checkpoint(fds[1], files, target).error;
  ::close(fds[1]);
  writer.get();
  ::close(fds[0]);
  return error;
}

std::string receive_bytes_stream(const std::vector<CheckpointFile>& files, const std::string& target,
                                 const std::string& stream) {
  return receive_forged(files, target, [&](int fd) {
    for (size_t done = 0; done < stream.size();) {
      const ssize_t n = ::send(fd, stream.data() + done, stream.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  });
}

std::string xxh3_hex(const std::string& bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return text;
}

// Nothing of a failed transfer is left: no TARGET, no TARGET.partial.
void expect_nothing_left(const std::string& target) {
  EXPECT_FALSE(fs::exists(target)) << target;
  EXPECT_FALSE(fs::exists(target + ".partial")) << target << ".partial";
}

TEST(CheckpointTransfer, ListIsSortedRecursiveWithSizes) {
  tune::testing::TempDir dir;
  const std::string root = dir.file("ckpt");
  write_tree(root, {{"b.bin", "abc"}, {"a/z.txt", ""}, {"a/b/c.dat", "0123456789"}, {"A", "x"}, {"a.b", "yy"}});
  fs::create_directories(root + "/empty/dir");  // directories are not files
  EXPECT_EQ(pairs(list_checkpoint(root)), (std::vector<std::pair<std::string, uint64_t>>{
                                              {"A", 1}, {"a.b", 2}, {"a/b/c.dat", 10}, {"a/z.txt", 0}, {"b.bin", 3}}));
  fs::create_directories(dir.file("none"));
  EXPECT_TRUE(list_checkpoint(dir.file("none")).empty());
}

TEST(CheckpointTransfer, ListRefusesLinksSpecialFilesAndMissingDirectories) {
  tune::testing::TempDir dir;
  const std::string root = dir.file("ckpt");
  write_tree(root, {{"model.bin", "weights"}, {"sub/opt.bin", "state"}});
  ASSERT_EQ(pairs(list_checkpoint(root)).size(), 2u);

  fs::create_symlink(root + "/model.bin", root + "/sub/link.bin");
  try {
    list_checkpoint(root);
    ADD_FAILURE() << "a symlink was listed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("link.bin"), std::string::npos) << e.what();
  }
  fs::remove(root + "/sub/link.bin");

  fs::create_directory_symlink(dir.path(), root + "/up");  // a link to a directory (outside, even)
  EXPECT_THROW(list_checkpoint(root), Error);
  fs::remove(root + "/up");

  ASSERT_EQ(::mkfifo((root + "/pipe").c_str(), 0600), 0);
  EXPECT_THROW(list_checkpoint(root), Error);
  fs::remove(root + "/pipe");
  EXPECT_EQ(pairs(list_checkpoint(root)).size(), 2u);

  try {
    list_checkpoint(dir.file("missing"));
    ADD_FAILURE() << "a missing directory was listed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("missing")), std::string::npos) << e.what();
  }
  EXPECT_THROW(list_checkpoint(root + "/model.bin"), Error);  // a file is no directory
}

// Sizes as a peer's manifest carries them: unsigned JSON numbers.
constexpr uint64_t kOne = 1;

TEST(CheckpointTransfer, ManifestRoundTrips) {
  const std::vector<CheckpointFile> files = {
      {"a/b/c.dat", 10}, {"empty", 0}, {".hidden", 1}, {"..dots..", 2}, {"big", uint64_t{1} << 40}};
  const Json json = manifest_json(files);
  ASSERT_TRUE(json.is_array());
  EXPECT_EQ(json.size(), files.size());
  auto back = manifest_from_json(json);
  ASSERT_TRUE(back);
  EXPECT_EQ(pairs(*back), pairs(files));
  // Through its text form, as it crosses the wire.
  back = manifest_from_json(Json::parse(json.dump()));
  ASSERT_TRUE(back);
  EXPECT_EQ(pairs(*back), pairs(files));
  auto none = manifest_from_json(manifest_json({}));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(CheckpointTransfer, ManifestRefusesPathsThatLeaveTheDirectory) {
  for (const std::string& path : std::vector<std::string>{"../x", "/etc/passwd", "a/../../b", "", "..", ".", "./a", "a/./b", "a/..", "a/",
                                 "a//b", "//a", std::string("a\0b", 3)}) {
    SCOPED_TRACE(path);
    EXPECT_FALSE(manifest_from_json(Json::array({{{"path", path}, {"size", kOne}}})));
    EXPECT_FALSE(manifest_from_json(Json::parse(manifest_json({{path, 1}}).dump())));
    // One bad path spoils the whole manifest.
    EXPECT_FALSE(manifest_from_json(Json::array({{{"path", "ok"}, {"size", kOne}}, {{"path", path}, {"size", kOne}}})));
  }
  // The same manifests with safe paths are fine (the refusals above are the paths').
  for (const std::string path : {"a", "a/b", ".a", "a..", "..a/b..", "a.b/c"}) {
    SCOPED_TRACE(path);
    EXPECT_TRUE(manifest_from_json(Json::array({{{"path", path}, {"size", kOne}}})));
    EXPECT_TRUE(manifest_from_json(Json::parse(manifest_json({{path, 1}}).dump())));
    EXPECT_TRUE(manifest_from_json(Json::array({{{"path", "ok"}, {"size", kOne}}, {{"path", path}, {"size", kOne}}})));
  }
}

TEST(CheckpointTransfer, ManifestRefusesMalformedJson) {
  EXPECT_TRUE(manifest_from_json(Json::array({{{"path", "a"}, {"size", kOne}}})));  // the shape of a good one
  const std::vector<Json> bad = {
      Json::object(),
      Json("a"),
      Json::array({1}),
      Json::array({{{"path", "a"}}}),
      Json::array({{{"size", kOne}}}),
      Json::array({{{"path", "a"}, {"size", -1}}}),
      Json::array({{{"path", "a"}, {"size", 1.5}}}),
      Json::array({{{"path", "a"}, {"size", "1"}}}),
      Json::array({{{"path", 3}, {"size", kOne}}}),
      Json::array({{{"path", nullptr}, {"size", kOne}}}),
  };
  for (const auto& json : bad) EXPECT_FALSE(manifest_from_json(json)) << json.dump();
}

TEST(CheckpointTransfer, SendReceiveReproducesTheTreeAndReplacesTarget) {
  tune::testing::TempDir dir;
  const std::string source = dir.file("source"), target = dir.file("target");
  const Tree tree = {
      {"empty.bin", ""},
      {"small.txt", "hello, worker"},
      {"sub/exact.bin", random_bytes(kCheckpointChunk, 1)},
      {"sub/dir/big.bin", random_bytes((size_t{9} << 20) + 17, 2)},
      {"sub/dir/empty", ""},
  };
  write_tree(source, tree);
  write_tree(target, {{"stale.txt", "an older checkpoint"}, {"small.txt", "old"}});
  const auto files = list_checkpoint(source);
  ASSERT_EQ(files.size(), tree.size());

  const Outcome outcome = transfer(source, files, target);
  EXPECT_TRUE(outcome.sent);
  EXPECT_EQ(outcome.error, "");
  EXPECT_TRUE(read_tree(target) == tree) << "the received tree differs";  // stale.txt is gone
  EXPECT_EQ(pairs(list_checkpoint(target)), pairs(files));
  EXPECT_FALSE(fs::exists(target + ".partial"));
  EXPECT_TRUE(read_tree(source) == tree);  // the source is untouched
}

TEST(CheckpointTransfer, EmptyCheckpointArrivesAsAnEmptyDirectory) {
  tune::testing::TempDir dir;
  fs::create_directories(dir.file("source"));
  const Outcome outcome = transfer(dir.file("source"), {}, dir.file("target"));
  EXPECT_TRUE(outcome.sent);
  EXPECT_EQ(outcome.error, "");
  EXPECT_TRUE(fs::is_directory(dir.file("target")));
  EXPECT_TRUE(fs::is_empty(dir.file("target")));
  EXPECT_FALSE(fs::exists(dir.file("target.partial")));
}

TEST(CheckpointTransfer, StreamCutOffMidFileLeavesNothing) {
  tune::testing::TempDir dir;
  const std::string source = dir.file("source"), target = dir.file("target");
  write_tree(source, {{"a.txt", "first"}, {"sub/big.bin", random_bytes(size_t{9} << 20, 3)}});
  const auto files = list_checkpoint(source);
  // The file shrinks after it was listed: the sender stops and hangs up.
  fs::resize_file(source + "/sub/big.bin", size_t{5} << 20);
  const Outcome outcome = transfer(source, files, target);
  EXPECT_FALSE(outcome.sent);
  EXPECT_NE(outcome.error, "");
  EXPECT_NE(outcome.error.find("sub/big.bin"), std::string::npos) << outcome.error;
  EXPECT_TRUE(outcome.stream_broken);  // the connection is out of step: the group is given up
  expect_nothing_left(target);
}

// A failure on the receiving side (here: TARGET's folder cannot be made) still
// reads the stream to its checksum: the message after it is the next one read,
// so the connection goes on (the substring tests it replaced could not say so).
TEST(CheckpointTransfer, AReceiverThatCannotWriteReadsTheStreamToItsEndAndStaysInStep) {
  tune::testing::TempDir dir;
  const std::string source = dir.file("source");
  write_tree(source, {{"a.bin", random_bytes(size_t{5} << 20, 8)}, {"b/c.bin", "tail"}});
  const auto files = list_checkpoint(source);
  std::ofstream(dir.file("plain")) << "a file, not a folder";
  const std::string target = dir.file("plain") + "/target";
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  bound(fds[0], 10);
  bound(fds[1], 10);
  auto sender = std::async(std::launch::async, [&] {
    const bool ok = send_checkpoint(fds[0], source, files) && send_message(fds[0], {{"type", "after"}});
    ::shutdown(fds[0], SHUT_WR);
    return ok;
  });
  const ReceivedCheckpoint got = receive_checkpoint(fds[1], files, target);
  EXPECT_NE(got.error.find("cannot create"), std::string::npos) << got.error;
  EXPECT_FALSE(got.stream_broken);
  const auto next = receive_message(fds[1]);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->value("type", ""), "after");
  ::close(fds[1]);
  EXPECT_TRUE(sender.get());
  ::close(fds[0]);
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

TEST(CheckpointTransfer, SenderHangingUpEarlyLeavesNothing) {
  tune::testing::TempDir dir;
  const std::string target = dir.file("target");
  const std::string bytes = random_bytes(1000, 4);
  const std::vector<CheckpointFile> files = {{"a.bin", 1000}, {"b/c.bin", 10}};
  // Half of the first file's bytes, then the connection closes.
  std::string error = receive_forged(files, target, [&](int fd) { send_bytes(fd, bytes.data(), 500); });
  EXPECT_NE(error.find("a.bin"), std::string::npos) << error;
  expect_nothing_left(target);
  // All the files but no checksum frame.
  error = receive_forged(files, target, [&](int fd) {
    send_bytes(fd, bytes.data(), bytes.size());
    send_bytes(fd, bytes.data(), 10);
  });
  EXPECT_NE(error, "");
  expect_nothing_left(target);
  // Nothing at all.
  error = receive_forged(files, target, [](int) {});
  EXPECT_NE(error, "");
  expect_nothing_left(target);
}

TEST(CheckpointTransfer, ForgedFramesAreCheckedAgainstTheChecksum) {
  tune::testing::TempDir dir;
  const std::string target = dir.file("target");
  const std::string a = random_bytes(3000, 5), b = "tail bytes";
  const std::vector<CheckpointFile> files = {{"a.bin", a.size()}, {"x/b.txt", b.size()}};
  auto forge = [&](const std::string& first, const std::string& checksum) {
    return [&, first, checksum](int fd) {
      send_bytes(fd, first.data(), 1000);  // a file may come in several frames
      send_bytes(fd, first.data() + 1000, first.size() - 1000);
      send_bytes(fd, b.data(), b.size());
      send_message(fd, {{"type", "checksum"}, {"xxh3_128", checksum}});
    };
  };
  // The forger is right: with the true checksum the checkpoint arrives.
  std::string error = receive_forged(files, target, forge(a, xxh3_hex(a + b)));
  ASSERT_EQ(error, "");
  EXPECT_TRUE(read_tree(target) == (Tree{{"a.bin", a}, {"x/b.txt", b}}));
  fs::remove_all(target);

  // One byte changed on the way, the checksum of the original: refused.
  std::string corrupt = a;
  corrupt[1234] = static_cast<char>(corrupt[1234] ^ 0x20);
  error = receive_forged(files, target, forge(corrupt, xxh3_hex(a + b)));
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  expect_nothing_left(target);

  // A wrong checksum, or none where it belongs.
  error = receive_forged(files, target, forge(a, std::string(32, '0')));
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  expect_nothing_left(target);
  error = receive_forged(files, target, [&](int fd) {
    send_bytes(fd, a.data(), a.size());
    send_bytes(fd, b.data(), b.size());
    send_message(fd, {{"type", "done"}});
  });
  EXPECT_NE(error, "");
  expect_nothing_left(target);

  // A frame longer than what is left of the file, or an empty frame.
  const std::string both = a + b;  // (a's bytes then b's: reading past `a` was out of bounds)
  error = receive_forged(files, target, [&](int fd) { send_bytes(fd, both.data(), both.size()); });
  EXPECT_NE(error.find("a.bin"), std::string::npos) << error;
  expect_nothing_left(target);
  error = receive_forged(files, target, [&](int fd) { send_bytes(fd, a.data(), 0); });
  EXPECT_NE(error.find("a.bin"), std::string::npos) << error;
  expect_nothing_left(target);
}

TEST(CheckpointTransfer, CorruptedByteInARealStreamIsCaught) {
  tune::testing::TempDir dir;
  const std::string source = dir.file("source"), target = dir.file("target");
  write_tree(source, {{"m/model.bin", random_bytes(100000, 6)}, {"opt.bin", random_bytes(5000, 7)}});
  const auto files = list_checkpoint(source);
  const std::string stream = capture_stream(source, files);
  ASSERT_GT(stream.size(), 105000u);
  // Untouched, the captured stream is a whole checkpoint.
  ASSERT_EQ(receive_bytes_stream(files, target, stream), "");
  EXPECT_TRUE(read_tree(target) == read_tree(source));
  fs::remove_all(target);

  std::string corrupt = stream;
  corrupt[4 + 50000] = static_cast<char>(corrupt[4 + 50000] ^ 1);  // inside m/model.bin's bytes
  const std::string error = receive_bytes_stream(files, target, corrupt);
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  expect_nothing_left(target);
}

TEST(CheckpointTransfer, FailedTransferKeepsAnExistingTarget) {
  tune::testing::TempDir dir;
  const std::string target = dir.file("target");
  const Tree old = {{"model.bin", "the previous checkpoint"}};
  write_tree(target, old);
  const std::string error = receive_forged({{"model.bin", 100}}, target, [](int fd) { send_bytes(fd, "abc", 3); });
  EXPECT_NE(error, "");
  EXPECT_TRUE(read_tree(target) == old);
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

TEST(CheckpointTransfer, StalePartialDirectoryIsReplaced) {
  tune::testing::TempDir dir;
  const std::string source = dir.file("source"), target = dir.file("target");
  write_tree(source, {{"w.bin", "weights"}});
  write_tree(target + ".partial", {{"junk.bin", "from a transfer that died"}});
  const Outcome outcome = transfer(source, list_checkpoint(source), target);
  EXPECT_EQ(outcome.error, "");
  EXPECT_TRUE(read_tree(target) == (Tree{{"w.bin", "weights"}}));
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

// receive(send(tree)) == tree for random small trees.
TEST(CheckpointTransfer, PropertyTransferReproducesRandomTrees) {
  EXPECT_TRUE(rc::check([] {
    const auto name = rc::gen::container<std::string>(rc::gen::elementOf(std::string("abcxyz019_-.")));
    Tree tree;
    const int count = *rc::gen::inRange(0, 7);
    for (int i = 0; i < count; ++i) {
      // Directories start with 'd', files with 'f': no name is both.
      std::string path;
      const int depth = *rc::gen::inRange(0, 3);
      for (int d = 0; d < depth; ++d) path += "d" + *name + "/";
      path += "f" + *name;
      const size_t size = *rc::gen::weightedOneOf<size_t>(
          {{1, rc::gen::just<size_t>(0)}, {3, rc::gen::inRange<size_t>(0, 200)}, {2, rc::gen::inRange<size_t>(0, 100001)}});
      tree[path] = random_bytes(size, *rc::gen::arbitrary<uint32_t>());
    }
    tune::testing::TempDir dir;
    const std::string source = dir.file("source"), target = dir.file("target");
    write_tree(source, tree);
    const auto files = list_checkpoint(source);
    RC_ASSERT(files.size() == tree.size());
    const auto manifest = manifest_from_json(Json::parse(manifest_json(files).dump()));
    RC_ASSERT(manifest.has_value());
    const Outcome outcome = transfer(source, files, *manifest, target);
    RC_ASSERT(outcome.sent);
    RC_ASSERT(outcome.error == "");
    RC_ASSERT(read_tree(target) == tree);
    RC_ASSERT(pairs(list_checkpoint(target)) == pairs(files));
    RC_ASSERT(!fs::exists(target + ".partial"));
  }));
}

}  // namespace
}  // namespace tune::internal

#include "tuner/exec/hosts.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/names.h"
#include "tuner/exec/run_program.h"
#include "tuner/spec/yaml_document.h"

namespace tune::internal {
namespace {

// A positive count ("4"), or nullopt.
std::optional<int> count_of(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  const int n = std::atoi(text.c_str());
  return n >= 0 ? std::optional<int>(n) : std::nullopt;
}

bool valid_host_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_' && c != ':') return false;
  return true;
}

}  // namespace

std::vector<Host> parse_hostfile(const std::string& text, const std::string& file) {
  static const std::vector<std::string> kKeys = {"slots", "max_slots", "gpus"};
  std::vector<Host> hosts;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    if (!valid_host_name(name)) throw ConfigError(file, number, "'" + name + "' is not a host name");
    if (!seen.insert(name).second) throw ConfigError(file, number, "host '" + name + "' is listed twice");
    Host host;
    host.name = name;
    host.local = is_local_host(name);
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (eq == std::string::npos || std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
        throw ConfigError(file, number, "unknown hostfile key '" + key + "'" + did_you_mean_or_list(key, kKeys, "keys"));
      const auto n = count_of(word.substr(eq + 1));
      if (!n || (key == "slots" && *n == 0))
        throw ConfigError(file, number, key + " must be a " + (key == "slots" ? "positive" : "non-negative") +
                                            " integer, got '" + word.substr(eq + 1) + "'");
      if (key == "slots") host.slots = *n;
      if (key == "gpus") host.gpus = *n;
    }
    hosts.push_back(std::move(host));
  }
  if (hosts.empty()) throw ConfigError(file, 0, "the hostfile lists no host");
  return hosts;
}

std::vector<Host> read_hostfile(const std::string& path) { return parse_hostfile(read_text_file(path, 1 << 20), path); }

namespace {

constexpr size_t kMaxHostlistNames = 100000;

// Appends the names one host-list item stands for: "node[1-2]-ib[0-1]" is
// node1-ib0, node1-ib1, node2-ib0, node2-ib1. `from` is where the part still
// to expand starts in `item`; `prefix` is what was expanded before it.
void expand_item(const std::string& item, size_t from, const std::string& prefix, std::vector<std::string>& names,
                 const std::function<void()>& fail) {
  const size_t open = item.find('[', from);
  if (open == std::string::npos) {
    if (names.size() >= kMaxHostlistNames) fail();
    names.push_back(prefix + item.substr(from));
    return;
  }
  const size_t close = item.find(']', open);
  if (close == std::string::npos || close == open + 1 || item[close - 1] == ',') fail();  // "node[]", "node[1,]"
  const std::string head = prefix + item.substr(from, open - from);
  std::istringstream ranges(item.substr(open + 1, close - open - 1));
  for (std::string range; std::getline(ranges, range, ',');) {
    const auto dash = range.find('-');
    const std::string low = range.substr(0, dash), high = dash == std::string::npos ? low : range.substr(dash + 1);
    const auto a = count_of(low), b = count_of(high);
    if (!a || !b || *a > *b || *b - *a > static_cast<int>(kMaxHostlistNames)) fail();
    for (int k = *a; k <= *b; ++k) {
      std::string digits = std::to_string(k);
      if (digits.size() < low.size()) digits.insert(0, low.size() - digits.size(), '0');
      expand_item(item, close + 1, head + digits, names, fail);
    }
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  auto fail = [&] { throw ConfigError("malformed Slurm host list '" + list + "'"); };
  // Items are separated by commas outside brackets; brackets do not nest.
  std::vector<std::string> names;
  size_t start = 0;
  bool inside = false;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') {
      if (inside) fail();
      inside = true;
    } else if (c == ']') {
      if (!inside) fail();
      inside = false;
    } else if (c == ',' && !inside) {
      if (i == start) fail();  // an empty item: "a,,b", "a,"
      expand_item(list.substr(start, i - start), 0, "", names, fail);
      start = i + 1;
    }
  }
  if (inside) fail();
  return names;
}

std::vector<int> expand_counts(const std::string& counts) {
  std::vector<int> out;
  std::istringstream in(counts);
  for (std::string item; std::getline(in, item, ',');) {
    const auto paren = item.find("(x");
    const auto n = count_of(item.substr(0, paren));
    int repeat = 1;
    if (paren != std::string::npos) {
      const auto r = count_of(item.substr(paren + 2, item.size() - paren - 3));
      if (!r || item.back() != ')') throw ConfigError("malformed Slurm count list '" + counts + "'");
      repeat = *r;
    }
    if (!n) throw ConfigError("malformed Slurm count list '" + counts + "'");
    out.insert(out.end(), static_cast<size_t>(repeat), *n);
  }
  return out;
}

std::optional<std::vector<Host>> slurm_hosts(const Getenv& getenv) {
  const char* nodes = getenv("SLURM_JOB_NODELIST");
  if (!getenv("SLURM_JOB_ID") || !nodes) return std::nullopt;
  const std::vector<std::string> names = expand_hostlist(nodes);
  const char* cpus = getenv("SLURM_JOB_CPUS_PER_NODE");
  std::vector<int> counts = cpus ? expand_counts(cpus) : std::vector<int>{};
  int gpus = 0;
  if (const char* g = getenv("SLURM_GPUS_PER_NODE")) {
    const std::string text = g;  // "2" or "a100:2"
    const auto n = count_of(text.substr(text.find(':') == std::string::npos ? 0 : text.find(':') + 1));
    gpus = n ? *n : 0;
  }
  std::vector<Host> hosts;
  for (size_t i = 0; i < names.size(); ++i) {
    Host host;
    host.name = names[i];
    host.slots = i < counts.size() ? std::max(1, counts[i]) : 1;
    host.gpus = gpus;
    host.local = is_local_host(host.name);
    hosts.push_back(std::move(host));
  }
  return hosts;
}

int detect_local_gpus(const std::string& proc_dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(proc_dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    n += it->is_directory(ec);
  return n;
}

bool is_local_host(const std::string& name) {
  if (name == "localhost" || name == "::1" || name.rfind("127.", 0) == 0) return true;
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return false;
  const std::string own = buffer;
  return name == own || name == own.substr(0, own.find('.'));
}

std::string slurm_node_address(const std::string& node) {
  if (node.empty() || node.find_first_of(" \t\n=") != std::string::npos) return "";
  RunLimits limits;
  limits.timeout_s = 5;
  limits.max_output = 1 << 16;
  Captured shown;
  try {
    shown = run_program({"scontrol", "show", "node", "-o", node}, "", limits);
  } catch (const Error&) {
    return "";
  }
  if (shown.status != 0 || shown.timed_out) return "";
  const auto at = shown.out.find("NodeAddr=");
  if (at == std::string::npos) return "";
  const auto start = at + 9;
  return shown.out.substr(start, shown.out.find_first_of(" \n", start) - start);
}

}  // namespace tune::internal

#include <map>
#include <memory>
#include <mutex>

#include "trainer/session.h"

namespace tune {
namespace {

struct Registry {
  std::mutex mutex;
  // unique_ptr keeps entries at stable addresses across insertions.
  std::map<std::string, std::unique_ptr<RegisteredTrainable>> entries;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void register_trainable(const std::string& name, TrainableFunction function, TrainableInfo info) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries[name] = std::make_unique<RegisteredTrainable>(
      RegisteredTrainable{name, std::move(function), std::move(info)});
}

const RegisteredTrainable* find_trainable(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? nullptr : it->second.get();
}

std::vector<std::string> trainable_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, entry] : r.entries) names.push_back(name);
  return names;
}

}  // namespace tune

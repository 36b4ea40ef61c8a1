// FIFO: every trial runs until its stop criteria; the default scheduler.
#include "schedulers/scheduler.h"
#include "tuner/error.h"

namespace tune {
namespace {

class FifoScheduler : public Scheduler {
 public:
  TrialDecision on_result(int64_t, const Json&) override { return TrialDecision::next(); }
};

}  // namespace

const std::vector<std::string>& scheduler_names() {
  static const std::vector<std::string> names = {"fifo"};
  return names;
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& type, const Json& params,
                                          const std::string&, const std::string&) {
  if (type == "fifo") {
    if (params.is_object() && !params.empty()) {
      throw ConfigError("scheduler fifo takes no options, got '" + params.begin().key() + "'");
    }
    return std::make_unique<FifoScheduler>();
  }
  throw ConfigError("unknown scheduler '" + type + "' (expected fifo)");
}

}  // namespace tune

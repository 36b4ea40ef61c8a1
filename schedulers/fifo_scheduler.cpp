// FIFO: every trial runs until its stop criteria; the default scheduler.
#include "schedulers/params.h"
#include "schedulers/scheduler_factory.h"

namespace tune {
namespace {

class FifoScheduler : public Scheduler {
 public:
  TrialDecision on_result(int64_t, const Json&) override { return TrialDecision::next(); }
  bool may_decide(int64_t, int64_t) const override { return false; }
};

}  // namespace

std::unique_ptr<Scheduler> internal::make_fifo(const Json& params) {
  internal::SchedulerParams p("fifo", params, {});
  return std::make_unique<FifoScheduler>();
}

}  // namespace tune

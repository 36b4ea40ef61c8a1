#include "schedulers/scheduler.h"

#include "schedulers/scheduler_factory.h"
#include "base/names.h"
#include "base/error.h"

namespace tune {

const std::vector<std::string>& scheduler_names() {
  static const std::vector<std::string> names = {"fifo", "asha", "hyperband", "median_stopping", "pbt", "pb2"};
  return names;
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& type, const Json& params, const std::string& metric,
                                          const std::string& mode) {
  // Ray's class-derived spellings are accepted as aliases.
  if (type == "fifo") return internal::make_fifo(params);
  if (type == "asha" || type == "async_hyperband") return internal::make_asha(params, metric, mode);
  if (type == "hyperband") return internal::make_hyperband(params, metric, mode);
  if (type == "median_stopping" || type == "median_stopping_rule") return internal::make_median_stopping(params, metric, mode);
  if (type == "pbt") return internal::make_pbt(params, metric, mode);
  if (type == "pb2") return internal::make_pb2(params, metric, mode);
  throw ConfigError::at("scheduler", "unknown scheduler '" + type + "'" + did_you_mean(type, scheduler_names()) +
                                         "; expected one of " + join_names(scheduler_names()));
}

}  // namespace tune

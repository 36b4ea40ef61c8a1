// Internal: one factory per scheduler file; make_scheduler dispatches.
#pragma once

#include <memory>
#include <string>

#include "schedulers/scheduler.h"

namespace tune::internal {

std::unique_ptr<Scheduler> make_fifo(const Json& params);
std::unique_ptr<Scheduler> make_asha(const Json& params, const std::string& metric, const std::string& mode);
std::unique_ptr<Scheduler> make_hyperband(const Json& params, const std::string& metric, const std::string& mode);
std::unique_ptr<Scheduler> make_median_stopping(const Json& params, const std::string& metric, const std::string& mode);
std::unique_ptr<Scheduler> make_pbt(const Json& params, const std::string& metric, const std::string& mode);
std::unique_ptr<Scheduler> make_pb2(const Json& params, const std::string& metric, const std::string& mode);

}  // namespace tune::internal

// Shared by the trainer/tabular tests.
#pragma once

#include <gtest/gtest.h>

#include "base/error.h"

namespace tune::tabular {

// The ConfigError `body` throws, or a test failure.
template <class F>
ConfigError config_error(F body) {
  try {
    body();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError";
  return ConfigError("none");
}

}  // namespace tune::tabular

#include "base/version.h"

namespace tune {

const char* version() { return TUNE_VERSION; }

}  // namespace tune

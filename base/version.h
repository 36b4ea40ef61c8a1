// tune's version ("0.1.0", CMake's PROJECT_VERSION): `tune --version`, and
// the host check that refuses a host whose tune is another release.
#pragma once

namespace tune {

const char* version();

}  // namespace tune

// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cpp).
//
// A target feeds its input to the code under test inside accept_errors():
// the errors that code documents (tune::Error and its subclasses, which the
// CLI prints as one line) are fine; any other exception is a finding and
// aborts with its type and message, as a crash or a sanitizer report would.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <typeinfo>

#include "base/error.h"

namespace tune::fuzz {

[[noreturn]] inline void finding(const char* what, const std::string& detail) {
  const size_t limit = 4000;  // the input is saved; keep the log readable
  std::fprintf(stderr, "FUZZ FINDING: %s: %s%s\n", what, detail.substr(0, limit).c_str(),
               detail.size() > limit ? "..." : "");
  std::fflush(stderr);
  std::abort();
}

template <class F>
void accept_errors(F&& body) {
  try {
    body();
  } catch (const tune::Error&) {
    // documented: the caller reports it in one line
  } catch (const std::bad_alloc&) {
    finding("std::bad_alloc", "unbounded allocation");
  } catch (const std::exception& e) {
    finding(typeid(e).name(), e.what());
  } catch (...) {
    finding("unknown exception", "");
  }
}

// An invariant of the code under test that does not hold for this input.
inline void check(bool ok, const std::string& what) {
  if (!ok) finding("invariant", what);
}

}  // namespace tune::fuzz

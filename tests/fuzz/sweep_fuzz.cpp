// Fuzz target: a sweep file's text, as `tune run FILE` reads it.
//
// read_sweep (YAML -> SweepSpec, structure and types), then prepare_sweep
// (the semantic checks, the searcher and scheduler), as tuner/cli/main.cpp does;
// then what a run relies on: the spec survives its JSON form (what the store
// keeps for `tune resume`) and the searcher suggests configurations. Only
// tune::Error (a one-line `file:line: ...` message, exit 2) is expected, and
// its message is one line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "trainer/session.h"
#include "tuner/driver/prepare.h"
#include "tuner/spec/sweep_reader.h"

namespace {

void check_sweep_text(const std::string& text) {
  tune::internal::LoadedSweep loaded = tune::internal::read_sweep(text, "fuzz.yaml");
  loaded.spec.search.seed = 1;  // reproducible
  tune::RunConfig run;
  run.slots = 8;
  run.use_slurm_allocation = false;
  run.verbose = false;
  tune::internal::PreparedSweep sweep =
      tune::internal::prepare_sweep(std::move(loaded.spec), run, {}, nullptr, loaded.source.get(), false);

  // As the store keeps it: text (a NaN or inf in a choice or constant
  // becomes null there, so compare the text, not the values).
  const tune::Json stored = tune::Json::parse(sweep.spec.to_json().dump());
  const tune::Json again = tune::SweepSpec::from_json(stored).to_json();
  tune::fuzz::check(again.dump() == stored.dump(),
                    "SweepSpec JSON round trip changed:\n" + stored.dump() + "\n" + again.dump());

  for (int64_t i = 0; i < 3; ++i) {
    auto config = sweep.searcher->suggest(i);
    if (!config) break;
    (void)config->dump();  // stored as text: must be valid UTF-8
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tune::register_builtin_trainables();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tune::fuzz::accept_errors([&] {
    try {
      check_sweep_text(text);
    } catch (const tune::Error& e) {
      const std::string what = e.what();  // what `tune run` prints: one line
      tune::fuzz::check(what.find('\n') == std::string::npos && what.find('\0') == std::string::npos,
                        "an error of more than one line: " + what);
      throw;
    }
  });
  return 0;
}

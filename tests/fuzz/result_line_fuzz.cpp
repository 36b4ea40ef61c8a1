// Fuzz target: what a command trainable's program prints on stdout
// (tuner/exec/result_line.h, tuner/exec/command_trainable.h), as a buggy or
// hostile program would.
//
// Input: the program's stdout. It is split into lines as ChildProcess splits
// it; every line starting "@tune " is read as a result. Only tune::Error is
// expected (the trial fails with that one line). A result that is accepted is
// a JSON object that passes what it goes through next: the result frame a
// worker sends the driver decodes again (protocol.h, kMaxJsonDepth), and its
// stored text reads back (the store's JSON columns).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/json.h"
#include "fuzz_util.h"
#include "tuner/exec/protocol.h"
#include "tuner/exec/result_line.h"

using namespace tune::internal;

namespace {

void read_result(std::string_view text) {
  const tune::Json result = parse_result_line(text);
  tune::fuzz::check(result.is_object(), "a result that is not an object: " + result.dump());
  const tune::Json frame = encode(UpMessage{ResultMessage{result, ""}});
  const std::string body = frame.dump(-1, ' ', false, tune::Json::error_handler_t::replace);
  std::string bytes(4, '\0');
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>((body.size() >> (8 * i)) & 0xff);
  bytes += body;
  const auto parsed = parse_frame(bytes);
  tune::fuzz::check(parsed && decode_up(*parsed).has_value(), "an accepted result's frame does not decode: " + body);
  std::string why;
  const std::string stored = result.dump(-1, ' ', false, tune::Json::error_handler_t::replace);
  tune::fuzz::check(!tune::parse_json(stored, tune::kMaxJsonDepth, &why).is_discarded(),
                    "an accepted result does not read back from the store (" + why + "): " + stored);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view out(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kPrefix = "@tune ";
  for (size_t start = 0; start <= out.size();) {
    size_t end = out.find('\n', start);
    if (end == std::string_view::npos) end = out.size();
    const std::string_view line = out.substr(start, end - start);
    if (line.substr(0, kPrefix.size()) == kPrefix) {
      tune::fuzz::accept_errors([&] {
        try {
          read_result(line.substr(kPrefix.size()));
        } catch (const tune::Error& e) {
          const std::string what = e.what();
          tune::fuzz::check(what.find('\n') == std::string::npos && what.find('\0') == std::string::npos,
                            "an error of more than one line: " + what);
          throw;
        }
      });
    }
    start = end + 1;
  }
  return 0;
}

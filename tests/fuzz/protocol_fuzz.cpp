// Fuzz target: the worker protocol decoder (tuner/exec/protocol.h), as the driver
// (decode_up, group_executor.cpp) and rank 0 (decode_down, worker.cpp) read
// a frame from a peer that may be corrupt or hostile.
//
// Input: one frame (4-byte little-endian length + JSON body). Decoding never
// throws: a bad frame is nullopt. A message that decodes must encode and
// decode to the same message, and a result's checkpoint manifest is checked
// the way the driver checks it before receiving files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "tuner/exec/checkpoint_transfer.h"
#include "tuner/exec/protocol.h"

using namespace tune::internal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  tune::fuzz::accept_errors([&] {
    std::optional<tune::Json> frame = parse_frame(bytes);
    // Rank 0 also reads a plain JSON text (worker.cpp): the body alone.
    if (!frame && size > 4) {
      tune::Json body = tune::parse_json(bytes.substr(4));
      if (!body.is_discarded()) frame = body;
    }
    if (!frame) return;
    if (auto up = decode_up(*frame)) {
      const tune::Json encoded = encode(*up);
      auto again = decode_up(encoded);
      tune::fuzz::check(again && encode(*again) == encoded, "up message round trip: " + encoded.dump());
      if (auto* result = std::get_if<ResultMessage>(&*up); result && !result->files.is_null()) {
        if (auto files = manifest_from_json(result->files)) {
          auto back = manifest_from_json(manifest_json(*files));
          tune::fuzz::check(back && back->size() == files->size(), "manifest round trip");
        }
      }
    }
    if (auto down = decode_down(*frame)) {
      const tune::Json encoded = encode(*down);
      auto again = decode_down(encoded);
      tune::fuzz::check(again && encode(*again) == encoded, "down message round trip: " + encoded.dump());
    }
  });
  return 0;
}

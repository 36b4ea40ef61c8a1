// Internal: the temporary folders a driver makes for itself (its listener's
// socket, its host checks' logs), each with an `owner` file that holds the
// driver's pid, so that a later driver removes the ones a driver killed with
// -9 left behind, and nothing else.
//
//   std::string dir = make_owned_folder("tune-driver-");  // <temp>/tune-driver-XXXXXX
//   remove_abandoned_folders(tmp, "tune-driver-", [](const auto& entry) {
//     return entry.path().filename() == "driver.sock";
//   });
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace tune::internal {

// Makes TEMP/<prefix>XXXXXX (mode 0700; TEMP: TMPDIR or /tmp) with its owner
// file, first removing the abandoned folders of the same prefix that hold
// only what `expected` accepts. Throws tune::Error when it cannot.
std::string make_owned_folder(std::string_view prefix,
                              const std::function<bool(const std::filesystem::directory_entry&)>& expected);

// Removes the folders PARENT/<prefix>XXXXXX whose owner file names a process
// that is gone and whose every other entry `expected` accepts; not links, not
// folders without an owner file. Returns how many it removed.
int remove_abandoned_folders(const std::string& parent, std::string_view prefix,
                             const std::function<bool(const std::filesystem::directory_entry&)>& expected);

}  // namespace tune::internal

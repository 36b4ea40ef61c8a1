// Internal helpers shared by tune_search and tune_spec (not public API).
#pragma once

#include <string>
#include <vector>

namespace tune::internal {

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions).
int edit_distance(const std::string& a, const std::string& b);

// The closest candidate within max(2, word.size() / 3) edits, or "" if none.
// Backs tune::closest_match (tuner/sweep_spec.h) without tune_search depending
// on tune_spec.
std::string closest_match_impl(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tune::internal

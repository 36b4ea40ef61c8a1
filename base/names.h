// Names users type (keys, algorithms, trainables, experiments): the close
// match behind every "did you mean" message.
//
//   throw tune::ConfigError("unknown scheduler '" + type + "'" +
//                           tune::did_you_mean(type, tune::scheduler_names()));
#pragma once

#include <string>
#include <vector>

namespace tune {

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions).
int edit_distance(const std::string& a, const std::string& b);

// The closest of `candidates` to `word` (edit distance <= 1/3 of its length,
// at least 2), or "" if none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the closest candidate, or "" when none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// `did_you_mean`, or " (LABEL: a, b, c)" listing every candidate when none is
// close: " (valid keys: name, trainable, ...)".
std::string did_you_mean_or_list(const std::string& word, const std::vector<std::string>& candidates,
                                 const std::string& label);

// "a, b, c" (or with another separator).
std::string join_names(const std::vector<std::string>& names, const std::string& separator = ", ");

}  // namespace tune

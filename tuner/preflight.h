// Internal: the checks a sweep passes before anything touches the disk.
#pragma once

#include <string>

#include "tuner/tuner.h"

namespace tune::internal {

// Slots the sweep may use: run.slots, or the number of cores.
int available_slots(const RunConfig& run);

// The registered trainable spec.trainable (nullptr when `function` is given).
// Throws ConfigError with a did-you-mean for an unknown name.
const RegisteredTrainable* resolve_trainable(const SweepSpec& spec, const TrainableFunction& function);

// "[A-Za-z0-9][A-Za-z0-9_.-]*", at most 100 characters: names become folder names.
void check_experiment_name(const std::string& name);

// Checks the spec and everything the sweep needs (trainable, slots,
// scheduler) without touching the disk. Throws ConfigError.
void preflight(const SweepSpec& spec, const RunConfig& run, const TrainableFunction& function,
               bool custom_scheduler = false);

}  // namespace tune::internal

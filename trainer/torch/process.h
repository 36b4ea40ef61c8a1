// Process-level settings a training or prediction process wants once:
// intra-op threads, malloc behaviour, the BLAS libtorch runs on. Included by
// distributed.h; prepare_model() applies them.
#pragma once

#include <string>

#include "trainer/session.h"

namespace tune::torch_dp {

// Sets libtorch's intra-op threads to session.cpus() (resources.cpus_per_worker,
// default 1), so N ranks on N cores do not oversubscribe. Also calls
// keep_freed_memory() and flush_denormals().
void use_session_threads(const Session& session);

// Subnormal floats (below 1.2e-38) are read and written as zero on this
// thread and the threads it creates afterwards (x86 FTZ + DAZ; TensorFlow does
// the same on CPU). A trial whose network collapsed (dead ReLUs, a learning
// rate far too high) fills its weights and gradients with subnormals, which
// x86 handles in microcode: such epochs of the Fashion-MNIST MLP took 2.0 s
// instead of 0.8 s (bench/schedulers/README.md). Healthy training never gets
// there, so its results are unchanged. Called by prepare_model() and
// use_session_threads(); TUNE_FLUSH_DENORMALS=0 leaves the FPU alone. Returns
// whether flushing is on (false where the CPU cannot do it).
bool flush_denormals();

// glibc's malloc gives freed blocks of over 128 KiB back to the kernel, so
// every training step page-faults its activations in again: a 1-rank CNN ran
// 283 samples/s this way vs 1,380 with this setting (perf: ~20 % of cycles in
// page faults alone; bench/ddp). This keeps freed memory in the process
// instead (mallopt: blocks under 64 MiB come from the heap, whose free top is
// kept up to 1 GiB). Called by prepare_model() and use_session_threads();
// idempotent. Left alone when the user tunes malloc (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES set) or sets
// TUNE_KEEP_FREED_MEMORY=0. Returns whether it changed the settings.
bool keep_freed_memory();

// The BLAS library this process loaded (libtorch's float GEMMs, i.e. every
// Linear layer, go through it), as a resolved path, or "" when none is
// loaded. Debian selects it with update-alternatives (libblas.so.3).
std::string blas_library();
// True when blas_library() is Debian's reference BLAS (libblas3), which is
// several times slower than OpenBLAS.
bool uses_reference_blas();
// Prints a one-line hint to stderr, at most once per process, when the
// reference BLAS is loaded (prepare_model() calls it on rank 0).
void hint_if_reference_blas();

}  // namespace tune::torch_dp

#include "trainer/torch/process.h"

#include <link.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <torch/torch.h>

namespace tune::torch_dp {

void use_session_threads(const Session& session) {
  keep_freed_memory();
  flush_denormals();  // before the intra-op threads exist: new threads inherit it
  torch::set_num_threads(std::max(1, session.cpus()));
}

bool flush_denormals() {
  const char* opt_out = std::getenv("TUNE_FLUSH_DENORMALS");
  if (opt_out && std::string(opt_out) == "0") return false;
  return torch::globalContext().setFlushDenormal(true);
}

bool keep_freed_memory() {
  static const bool changed = [] {
    for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
      if (std::getenv(name)) return false;
    }
    const char* opt_out = std::getenv("TUNE_KEEP_FREED_MEMORY");
    if (opt_out && std::string(opt_out) == "0") return false;
    return mallopt(M_MMAP_THRESHOLD, 64 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  }();
  return changed;
}

std::string blas_library() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        const std::string file = std::filesystem::path(name).filename().string();
        if (file.rfind("libblas.so", 0) == 0 || file.rfind("libopenblas", 0) == 0) {
          std::error_code ec;
          const auto resolved = std::filesystem::canonical(name, ec);
          *static_cast<std::string*>(out) = ec ? name : resolved.string();
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

bool uses_reference_blas() {
  // Debian's reference BLAS: /usr/lib/<triplet>/blas/libblas.so.3.x
  return blas_library().find("/blas/libblas.so") != std::string::npos;
}

void hint_if_reference_blas() {
  static std::atomic<bool> hinted{false};
  if (hinted.exchange(true) || !uses_reference_blas()) return;
  std::cerr << "tune: libtorch uses the reference BLAS (" << blas_library()
            << "); Linear layers train several times faster with: apt-get install libopenblas0-openmp\n";
}

}  // namespace tune::torch_dp

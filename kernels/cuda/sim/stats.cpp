// Launch statistics of the CUDA simulator (see stats.h).
#include "stats.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace opforge::sim {
namespace {

std::mutex& stats_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, kernel_stats>& stats() {
  static std::map<std::string, kernel_stats> s;
  return s;
}

// "detail::map_unary_kernel<T, F>" -> "map_unary_kernel".
std::string kernel_key(const launch_site& site) {
  std::string name = site.kernel;
  name = name.substr(0, name.find('<'));
  while (!name.empty() && name.back() == ' ') {
    name.pop_back();
  }
  if (const auto colon = name.rfind("::"); colon != std::string::npos) {
    name = name.substr(colon + 2);
  }
  std::string file = site.file;
  if (const auto slash = file.rfind('/'); slash != std::string::npos) {
    file = file.substr(slash + 1);
  }
  return file + ":" + name;
}

}  // namespace

void record_launch(const launch_site& site, unsigned block_threads) {
  const std::string key = kernel_key(site);
  const std::lock_guard<std::mutex> lock(stats_mutex());
  kernel_stats& s = stats()[key];
  ++s.launches;
  s.max_block_threads = std::max(s.max_block_threads, block_threads);
}

std::map<std::string, kernel_stats> launched_kernels() {
  const std::lock_guard<std::mutex> lock(stats_mutex());
  return stats();
}

namespace {
std::atomic<bool> capture_mode{false};
}  // namespace

bool capturing() { return capture_mode.load(); }
void set_capturing(bool on) { capture_mode = on; }

namespace {
std::atomic<int64_t> index_limit_value{INT32_MAX};
}  // namespace

int64_t index_limit() { return index_limit_value.load(); }
void set_index_limit(int64_t limit) { index_limit_value = limit; }

void reset_launched_kernels() {
  const std::lock_guard<std::mutex> lock(stats_mutex());
  stats().clear();
}

}  // namespace opforge::sim

// The grader's kernel recorder: a CUPTI activity library the CUDA driver loads into a process through
//   CUDA_INJECTION64_PATH=libcourse_kernel_recorder.so COURSE_KERNEL_LOG=out.tsv <driver> ...
// It records every kernel the process runs (launched with <<<>>>, cudaLaunchKernel, a library, or
// inside a CUDA graph) and, at exit, writes one line per distinct kernel:
//   <launches>\t<total GPU ns>\t<mangled name>
// The drivers are not changed or relinked: the CUDA driver calls InitializeInjection() once, when
// the process initializes CUDA. The log is written to a temporary file and renamed, so it is
// complete or absent (a process killed by the grader's time limit leaves none, and says nothing).
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;  // CUDA 12.x
#endif

constexpr size_t kBufferBytes = 8u << 20;

struct Totals {
  std::uint64_t launches = 0;
  std::uint64_t ns = 0;
};

std::mutex g_mutex;
std::map<std::string, Totals>* g_kernels = nullptr;  // leaked on purpose: used from atexit
std::uint64_t g_dropped = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const KernelRecord*>(record);
    Totals& t = (*g_kernels)[k->name ? k->name : "<unnamed>"];
    t.launches += 1;
    t.ns += k->end > k->start ? k->end - k->start : 0;
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
  std::free(buffer);
}

std::string* g_log_path = nullptr;  // read once at injection: the run's environment is its own after
std::string* g_nonce = nullptr;     // the grader's per-run token, wiped from the environment at injection

void write_log() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (!g_log_path || g_log_path->empty()) return;
  const std::string& path = *g_log_path;
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  bool ok = std::fprintf(f, "# course kernel record (run %s): launches, total ns, mangled name; dropped records %llu\n",
                         g_nonce->c_str(), static_cast<unsigned long long>(g_dropped)) > 0;
  for (const auto& [name, t] : *g_kernels) {
    ok = ok && std::fprintf(f, "%llu\t%llu\t%s\n", static_cast<unsigned long long>(t.launches),
                            static_cast<unsigned long long>(t.ns), name.c_str()) > 0;
  }
  ok = std::fclose(f) == 0 && ok;
  if (ok) std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

extern "C" int InitializeInjection(void) {
  g_kernels = new std::map<std::string, Totals>();
  const char* path = std::getenv("COURSE_KERNEL_LOG");  // before any of the run's code
  g_log_path = new std::string(path ? path : "");       // leaked on purpose: used from atexit
  // the grader's token proves the log is this recorder's; the run must not read it, so its bytes in
  // the environment block (what getenv and /proc/self/environ show) are overwritten
  char* nonce = std::getenv("COURSE_KERNEL_NONCE");
  g_nonce = new std::string(nonce ? nonce : "");
  if (nonce) std::memset(nonce, '0', std::strlen(nonce));
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) return 0;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return 0;
  std::atexit(write_log);
  return 1;
}

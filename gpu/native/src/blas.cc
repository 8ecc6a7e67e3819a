// A system BLAS, loaded at run time: the addon builds without one (npm ci cannot install it) and
// uses OpenBLAS where the machine has it (Debian's libopenblas0-pthread puts it on the library path).
#include <dlfcn.h>

#include <algorithm>
#include <string>

#include "gemm.h"
#include "thread-pool.h"

namespace triad {

namespace {
// CBLAS constants (cblas.h): row-major 101, no transpose 111, transpose 112.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
using SetThreadsFn = void (*)(int);
SgemmFn sgemm = nullptr;
SetThreadsFn set_threads = nullptr;
std::string loaded_path;
bool tried = false;
}  // namespace

const char* blas_load() {
  if (tried) return loaded_path.c_str();
  tried = true;
  const char* candidates[] = {"libopenblas.so.0", "libopenblasp.so.0", "libopenblas.so"};
  for (const char* name : candidates) {
    void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    auto f = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    if (!f) {
      dlclose(h);
      continue;
    }
    sgemm = f;
    set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
    loaded_path = name;
    if (set_threads) set_threads(1);  // triad's pool splits the products (gemm_blas_parallel)
    break;
  }
  return loaded_path.c_str();
}

bool blas_available() { return sgemm != nullptr; }

void blas_set_threads(int n) {
  if (set_threads) set_threads(n);
}

namespace {
/** cblas_sgemm for rows [i0, i1) of C (columns of A when transposed); leading dimensions of the whole product. */
void sgemm_rows(const GemmArgs& g, int64_t i0, int64_t i1) {
  const int lda = static_cast<int>(g.trans_a ? g.m : g.k);
  const int ldb = static_cast<int>(g.trans_b ? g.k : g.n);
  const float* a = g.trans_a ? g.a + i0 : g.a + i0 * g.k;  // A^T is stored k x m: the block is columns i0..i1
  sgemm(kRowMajor, g.trans_a ? kTrans : kNoTrans, g.trans_b ? kTrans : kNoTrans, static_cast<int>(i1 - i0),
        static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, a, lda, g.b, ldb, g.accumulate ? 1.0f : 0.0f,
        g.c + i0 * g.n, static_cast<int>(g.n));
}
}  // namespace

void gemm_blas(const GemmArgs& g) { sgemm_rows(g, 0, g.m); }

void gemm_blas_parallel(const GemmArgs& g) {
  // One BLAS thread per task of triad's pool, so the two never compete for the cores: blocks of
  // rows of C, each a whole sgemm over the same B.
  const int64_t blocks = std::min<int64_t>(ThreadPool::instance().threads(), g.m / 32);
  if (blocks <= 1) return gemm_blas(g);
  ThreadPool::instance().parallel_for(blocks, [&](int64_t t) { sgemm_rows(g, g.m * t / blocks, g.m * (t + 1) / blocks); });
}

}  // namespace triad

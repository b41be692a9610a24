/* The machine's measured arithmetic peak, per core: fp32 fused multiply-adds
 * with the widest vectors the CPU has (AVX-512, else AVX2), and bfloat16
 * dot products (VDPBF16PS) where the CPU has AVX512_BF16. Each figure is the
 * best of several timed runs of a loop of independent multiply-adds on one
 * thread, so it is what one core sustains at the clock it runs at under
 * load; multiply by the cores used for a machine's peak.
 *
 *   fma_peak            prints one JSON line:
 *   {"cpu": "...", "isa": "avx512", "fp32_gflops_per_core": 118.2,
 *    "bf16_gflops_per_core": 236.0}      (bf16: null without AVX512_BF16)
 *   fma_peak --isa avx2 the same with AVX2 vectors only (bf16 null): the peak
 *                       of code held to AVX2. On a Zen 4 it equals the
 *                       AVX-512 one (two 256-bit pipes either way); on a
 *                       Zen 5 or an Intel CPU with two 512-bit FMA units it
 *                       is half of it.
 *
 * A multiply-add counts 2 FLOPs; a bf16 dot product of pairs 4 per lane. */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { ACCUMULATORS = 12, ITERATIONS = 20 * 1000 * 1000, RUNS = 5 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Each kernel runs ITERATIONS rounds of ACCUMULATORS independent
 * multiply-adds `acc = STEP(acc)` on vectors of TYPE (enough of them to cover
 * the latency of two FMA pipes) and returns a value that depends on all of
 * them, so that none is optimised away. */
#define ACCUMULATE(TYPE, SET1, STEP, ADD, SUM_LANES)                              \
  TYPE acc[ACCUMULATORS];                                                      \
  for (int k = 0; k < ACCUMULATORS; ++k) acc[k] = SET1((float)k);              \
  for (long i = 0; i < ITERATIONS; ++i)                                        \
    _Pragma("GCC unroll 12") /* the accumulators stay in registers */          \
    for (int k = 0; k < ACCUMULATORS; ++k) acc[k] = STEP(acc[k]);              \
  TYPE sum = acc[0];                                                           \
  for (int k = 1; k < ACCUMULATORS; ++k) sum = ADD(sum, acc[k]);               \
  return SUM_LANES(sum)

static const float k_a = 0.999999f, k_b = 1e-7f;

__attribute__((target("avx2,fma"))) static float first_lane256(__m256 v) {
  return _mm_cvtss_f32(_mm256_castps256_ps128(v));
}

__attribute__((target("avx2,fma"))) static float fma_avx2(void) {
  const __m256 a = _mm256_set1_ps(k_a), b = _mm256_set1_ps(k_b);
#define FMA256(x) _mm256_fmadd_ps(x, a, b)
  ACCUMULATE(__m256, _mm256_set1_ps, FMA256, _mm256_add_ps, first_lane256);
}

__attribute__((target("avx512f"))) static float fma_avx512(void) {
  const __m512 a = _mm512_set1_ps(k_a), b = _mm512_set1_ps(k_b);
#define FMA512(x) _mm512_fmadd_ps(x, a, b)
  ACCUMULATE(__m512, _mm512_set1_ps, FMA512, _mm512_add_ps, _mm512_reduce_add_ps);
}

/* pairs of bfloat16 1.0 and 2^-24 */
__attribute__((target("avx512f,avx512bf16"))) static float dot_bf16(void) {
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
#define DOT_BF16(x) _mm512_dpbf16_ps(x, a, b)
  ACCUMULATE(__m512, _mm512_set1_ps, DOT_BF16, _mm512_add_ps, _mm512_reduce_add_ps);
}

/* The best GFLOP/s of RUNS runs of kernel, which does flops_per_call FLOPs. */
static double best_gflops(float (*kernel)(void), double flops_per_call, float *sink) {
  double best = 0;
  for (int r = 0; r < RUNS; ++r) {
    const double t0 = now();
    *sink += kernel();
    const double rate = flops_per_call / (now() - t0) * 1e-9;
    if (rate > best) best = rate;
  }
  return best;
}

static void cpu_name(char *out, size_t size) {
  snprintf(out, size, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && colon) {
      colon[strcspn(colon, "\n")] = '\0';
      snprintf(out, size, "%s", colon + 2);
      break;
    }
  }
  fclose(f);
}

int main(int argc, char **argv) {
  int avx2_only = 0;
  if (argc == 3 && strcmp(argv[1], "--isa") == 0 && strcmp(argv[2], "avx2") == 0)
    avx2_only = 1;
  else if (!(argc == 1 || (argc == 3 && strcmp(argv[1], "--isa") == 0 &&
                           strcmp(argv[2], "native") == 0))) {
    fprintf(stderr, "usage: fma_peak [--isa native|avx2]\n");
    return 2;
  }
  __builtin_cpu_init();
  const int avx512 = !avx2_only && __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    fprintf(stderr, "fma_peak: this CPU has neither AVX2 with FMA nor AVX-512\n");
    return 1;
  }
  float sink = 0;
  const double calls = (double)ITERATIONS * ACCUMULATORS;
  const double fp32 = avx512 ? best_gflops(fma_avx512, calls * 16 * 2, &sink)
                             : best_gflops(fma_avx2, calls * 8 * 2, &sink);
  char bf16[32] = "null";
  if (avx512 && __builtin_cpu_supports("avx512bf16"))
    snprintf(bf16, sizeof bf16, "%.1f", best_gflops(dot_bf16, calls * 16 * 4, &sink));
  char name[256];
  cpu_name(name, sizeof name);
  printf("{\"cpu\": \"%s\", \"isa\": \"%s\", \"fp32_gflops_per_core\": %.1f, "
         "\"bf16_gflops_per_core\": %s, \"checksum\": %g}\n",
         name, avx512 ? "avx512" : "avx2", fp32, bf16, (double)sink);
  return 0;
}

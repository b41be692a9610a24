/* Variable initializers (zeros, constants, uniform, normal, truncated
 * normal, Glorot, He), each a pure function of the graph seed and the name,
 * or of the graph seed and the variable's own seed when it has one; and
 * TensorFlow's random ops (CT_INIT_TF_*), a pure function of the variable's
 * TensorFlow seeds, drawn from TensorFlow's Philox streams. */
#include <math.h>
#include <string.h>

#include "core/hash.h"
#include "core/philox.h"
#include "exec/exec_internal.h"

typedef struct rng {
  uint64_t state;
} rng;

static uint64_t rng_next(rng *r) {
  r->state += 0x9E3779B97F4A7C15ull;
  return ct_mix64(r->state);
}
/* Uniform in [0, 1). */
static double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* Normal by Box-Muller. */
static double rng_normal(rng *r) {
  for (;;) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 > 0) return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  }
}

/* Normal by Box-Muller, redrawn past two standard deviations (TF's truncation). */
static double rng_truncated_normal(rng *r) {
  for (;;) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 <= 0) continue;
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    if (fabs(z) <= 2.0) return z;
  }
}

/* Fans as TensorFlow computes them: [in, out] for dense, [R, S, C, K] for
 * convolution filters (receptive field times channels). */
static void fans(const ct_shape *s, double *fan_in, double *fan_out) {
  if (s->rank < 2) {
    *fan_in = *fan_out = s->rank ? (double)s->dims[0] : 1.0;
    return;
  }
  double receptive = 1;
  for (int d = 0; d < s->rank - 2; ++d) receptive *= (double)s->dims[d];
  *fan_in = receptive * (double)s->dims[s->rank - 2];
  *fan_out = receptive * (double)s->dims[s->rank - 1];
}

/* TensorFlow's rnd * scale + mean, each rounded to float32 as its Mul and Add. */
static int initialize_tensorflow(const ct_variable_info *var, float *v, int64_t n) {
  switch (var->init.kind) {
    case CT_INIT_TF_UNIFORM: ct_philox_fill_uniform(var->seed, var->seed2, v, n); break;
    case CT_INIT_TF_NORMAL: ct_philox_fill_normal(var->seed, var->seed2, v, n); break;
    case CT_INIT_TF_TRUNCATED_NORMAL:
      ct_philox_fill_truncated_normal(var->seed, var->seed2, v, n);
      break;
    default: return 0;
  }
  const float scale = var->init.value, mean = var->init_mean;
  for (int64_t i = 0; i < n; ++i) {
    const float scaled = v[i] * scale;
    v[i] = scaled + mean;
  }
  return 1;
}

void ct_initialize_variable(const ct_variable_info *var, uint64_t graph_seed, ct_tensor *out) {
  float *v = ct_tensor_f32(out);
  int64_t n = ct_tensor_elements(out);
  if (initialize_tensorflow(var, v, n)) return;
  rng r = {var->has_seed ? ct_mix64(ct_mix64(graph_seed) ^ var->seed)
                         : ct_hash_string(graph_seed, var->name)};
  double fan_in, fan_out;
  fans(&var->shape, &fan_in, &fan_out);
  const double scale = var->init.value, mean = var->init_mean;
  for (int64_t i = 0; i < n; ++i) {
    double x = 0;
    switch (var->init.kind) {
      case CT_INIT_ZEROS: x = 0; break;
      case CT_INIT_ONES: x = 1; break;
      case CT_INIT_CONSTANT: x = scale; break;
      case CT_INIT_UNIFORM: x = mean + scale * (2 * rng_uniform(&r) - 1); break;
      case CT_INIT_NORMAL: x = mean + scale * rng_truncated_normal(&r); break;
      case CT_INIT_RANDOM_NORMAL: x = mean + scale * rng_normal(&r); break;
      case CT_INIT_GLOROT_UNIFORM:
        x = sqrt(6.0 / (fan_in + fan_out)) * (2 * rng_uniform(&r) - 1);
        break;
      case CT_INIT_HE_NORMAL:
        /* 0.8796 is the std of N(0,1) truncated at 2: keeps the variance 2/fan_in */
        x = sqrt(2.0 / fan_in) / 0.87962566103423978 * rng_truncated_normal(&r);
        break;
      default: break; /* the CT_INIT_TF_* kinds, drawn above */
    }
    v[i] = (float)x;
  }
}

/* Winograd's F(2x2, 3x3) convolution (winograd.h).
 *
 * The transforms, for a 4x4 input block d, 3x3 taps g and 2x2 output y:
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
 *   A^T = [1 1 1 0; 0 1 -1 -1]
 * Their gradients: dM = A dY A^T for the 4x4 product of a tile, and
 * dg = G^T dU G for the taps, dU the sum over tiles of (B^T d B) . dM.
 *
 * Threads take contiguous runs of blocks of tiles. The forward passes write
 * each output once; the filter's gradient sums each thread's blocks apart,
 * then the threads' sums in thread order: the same bits for the same
 * number of threads. */
#include "kernels/cpu/winograd.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>
#include <omp.h>
#include <string.h>

/* 16 positions of a transformed 4x4 tile; products computed 6 tiles by 16
 * output channels at a time (12 of the 16 AVX2 registers accumulate) */
enum { POSITIONS = 16, PANEL_ROWS = 6, PANEL_COLUMNS = 16, LANES = 8 };

/* A thread's block of tiles, transformed input and products, within this
 * many bytes: half the L2 cache of the smallest CPU with AVX2 here (Zen 3,
 * 512 KiB), so that both stay there between the transforms and the product. */
enum { BLOCK_BYTES = 256 << 10, MAX_BLOCK_TILES = 96 };

typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float *p) {
  v8 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void store8(float *p, v8 v) { memcpy(p, &v, sizeof v); }

/* How the output falls into tiles, and the tiles into blocks. */
typedef struct tiling {
  int64_t tiles_w, per_image, count; /* tiles across, in an image, in all */
  int64_t block, blocks;             /* tiles in a block (a multiple of 6), blocks */
} tiling;

static tiling tiling_of(const ct_winograd_shape *s) {
  tiling t;
  t.tiles_w = (s->out_w + 1) / 2;
  t.per_image = (s->out_h + 1) / 2 * t.tiles_w;
  t.count = s->batch * t.per_image;
  int64_t block = BLOCK_BYTES / (POSITIONS * (int64_t)sizeof(float) * (s->in_c + s->out_c));
  block = block / PANEL_ROWS * PANEL_ROWS;
  t.block = block < PANEL_ROWS ? PANEL_ROWS : block > MAX_BLOCK_TILES ? MAX_BLOCK_TILES : block;
  t.blocks = (t.count + t.block - 1) / t.block;
  return t;
}

/* Where tile number `tile` lies: its image and its top-left output pixel. */
static void tile_origin(const tiling *t, int64_t tile, int64_t *image, int64_t *row,
                        int64_t *col) {
  *image = tile / t->per_image;
  const int64_t in_image = tile % t->per_image;
  *row = in_image / t->tiles_w * 2;
  *col = in_image % t->tiles_w * 2;
}

/* The four sums of B^T applied to a column (or row) of four. */
static inline void input_transform4(v8 a, v8 b, v8 c, v8 d, v8 *o) {
  o[0] = a - c, o[1] = b + c, o[2] = c - b, o[3] = b - d;
}

/* A^T applied to four: two. */
static inline void output_transform4(v8 a, v8 b, v8 c, v8 d, v8 *o) {
  o[0] = a + b + c, o[1] = b - c - d;
}

/* A applied to two (the gradient of output_transform4): four. */
static inline void output_grad_transform2(v8 a, v8 b, v8 *o) {
  o[0] = a, o[1] = a + b, o[2] = a - b, o[3] = -b;
}

/* G applied to three taps: four. */
static inline void filter_transform3(v8 a, v8 b, v8 c, v8 *o) {
  const v8 half = a * 0.5f + c * 0.5f;
  o[0] = a, o[1] = half + b * 0.5f, o[2] = half - b * 0.5f, o[3] = c;
}

/* G^T applied to four (the gradient of filter_transform3): three taps. */
static inline void filter_grad_transform4(v8 a, v8 b, v8 c, v8 d, v8 *o) {
  const v8 half = (b + c) * 0.5f;
  o[0] = a + half, o[1] = (b - c) * 0.5f, o[2] = half + d;
}

/* V[p][t][c] (rows tiles a position apart): B^T d B of the 4x4 input d
 * around tiles first..first+n-1; tiles n..rows-1 of the block zero. */
static void transform_input(const ct_winograd_shape *s, const tiling *tl, const float *x,
                            int64_t first, int64_t n, int64_t rows, float *V) {
  const int64_t C = s->in_c;
  const v8 zero = {0};
  for (int64_t t = n; t < rows; ++t)
    for (int p = 0; p < POSITIONS; ++p) memset(V + (p * rows + t) * C, 0, C * sizeof(float));
  for (int64_t t = 0; t < n; ++t) {
    int64_t image, row0, col0;
    tile_origin(tl, first + t, &image, &row0, &col0);
    row0 -= s->pad_top, col0 -= s->pad_left;
    const float *in = x + image * s->in_h * s->in_w * C;
    int inside[4][4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        inside[i][j] = row0 + i >= 0 && row0 + i < s->in_h && col0 + j >= 0 && col0 + j < s->in_w;
    for (int64_t c = 0; c < C; c += LANES) {
      v8 d[4][4], e[4][4], v[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          d[i][j] = inside[i][j] ? load8(in + ((row0 + i) * s->in_w + col0 + j) * C + c) : zero;
      for (int j = 0; j < 4; ++j) {
        v8 column[4];
        input_transform4(d[0][j], d[1][j], d[2][j], d[3][j], column);
        for (int i = 0; i < 4; ++i) e[i][j] = column[i];
      }
      for (int i = 0; i < 4; ++i) input_transform4(e[i][0], e[i][1], e[i][2], e[i][3], v[i]);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) store8(V + ((i * 4 + j) * rows + t) * C + c, v[i][j]);
    }
  }
}

/* y around tiles first..first+n-1: A^T m A of their products M[p][t][o]. */
static void transform_output(const ct_winograd_shape *s, const tiling *tl, const float *M,
                             int64_t first, int64_t n, int64_t rows, float *y) {
  const int64_t O = s->out_c;
  for (int64_t t = 0; t < n; ++t) {
    int64_t image, row0, col0;
    tile_origin(tl, first + t, &image, &row0, &col0);
    float *out = y + image * s->out_h * s->out_w * O;
    const int64_t height = row0 + 1 < s->out_h ? 2 : 1, width = col0 + 1 < s->out_w ? 2 : 1;
    for (int64_t o = 0; o < O; o += LANES) {
      v8 m[4][4], e[2][4], r[2][2];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) m[i][j] = load8(M + ((i * 4 + j) * rows + t) * O + o);
      for (int j = 0; j < 4; ++j) {
        v8 column[2];
        output_transform4(m[0][j], m[1][j], m[2][j], m[3][j], column);
        e[0][j] = column[0], e[1][j] = column[1];
      }
      for (int i = 0; i < 2; ++i) output_transform4(e[i][0], e[i][1], e[i][2], e[i][3], r[i]);
      for (int i = 0; i < height; ++i)
        for (int j = 0; j < width; ++j) store8(out + ((row0 + i) * s->out_w + col0 + j) * O + o, r[i][j]);
    }
  }
}

/* dM[p][t][o] = A dy A^T of the 2x2 output gradient of tiles first..first+n-1
 * (zero beyond the output's edge). */
static void transform_output_grad(const ct_winograd_shape *s, const tiling *tl, const float *dy,
                                  int64_t first, int64_t n, int64_t rows, float *dM) {
  const int64_t O = s->out_c;
  const v8 zero = {0};
  for (int64_t t = 0; t < n; ++t) {
    int64_t image, row0, col0;
    tile_origin(tl, first + t, &image, &row0, &col0);
    const float *in = dy + image * s->out_h * s->out_w * O;
    const int inside[2] = {1, col0 + 1 < s->out_w};
    const int64_t height = row0 + 1 < s->out_h ? 2 : 1;
    for (int64_t o = 0; o < O; o += LANES) {
      v8 g[2][2], e[4][2], m[4][4];
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
          g[i][j] = i < height && inside[j] ? load8(in + ((row0 + i) * s->out_w + col0 + j) * O + o)
                                            : zero;
      for (int j = 0; j < 2; ++j) {
        v8 column[4];
        output_grad_transform2(g[0][j], g[1][j], column);
        for (int i = 0; i < 4; ++i) e[i][j] = column[i];
      }
      for (int i = 0; i < 4; ++i) output_grad_transform2(e[i][0], e[i][1], m[i]);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) store8(dM + ((i * 4 + j) * rows + t) * O + o, m[i][j]);
    }
  }
}

/* c[r][0..16) = (c[r][0..16) if accumulate) + sum over k < K of
 * a[r * a_row + k * a_k] * b[k * ldb + 0..16), for r < rows (a constant
 * where inlined, so that the accumulators stay in registers). */
static inline __attribute__((always_inline)) void panel_product(
    int rows, int64_t K, const float *a, int64_t a_row, int64_t a_k, const float *b, int64_t ldb,
    float *c, int64_t ldc, int accumulate) {
  __m256 acc[PANEL_ROWS][2];
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < 2; ++h)
      acc[r][h] = accumulate ? _mm256_loadu_ps(c + r * ldc + LANES * h) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * ldb), b1 = _mm256_loadu_ps(b + k * ldb + LANES);
    for (int r = 0; r < rows; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r * a_row + k * a_k);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(c + r * ldc + LANES * h, acc[r][h]);
}

/* M[p] = V[p] U[p] for each position p: [rows x I] by [I x O]. */
static void multiply_forward(int64_t rows, int64_t I, int64_t O, const float *V, const float *U,
                             float *M) {
  for (int p = 0; p < POSITIONS; ++p) {
    const float *Vp = V + p * rows * I, *Up = U + p * I * O;
    float *Mp = M + p * rows * O;
    for (int64_t t = 0; t < rows; t += PANEL_ROWS)
      for (int64_t o = 0; o < O; o += PANEL_COLUMNS)
        panel_product(PANEL_ROWS, I, Vp + t * I, I, 1, Up + o, O, Mp + t * O + o, O, 0);
  }
}

/* dU[p] += V[p]^T dM[p] for each position p: [I x n] by [n x O]. */
static void multiply_filter_grad(int64_t n, int64_t rows, int64_t I, int64_t O, const float *V,
                                 const float *dM, float *dU) {
  for (int p = 0; p < POSITIONS; ++p) {
    const float *Vp = V + p * rows * I, *dMp = dM + p * rows * O;
    float *dUp = dU + p * I * O;
    for (int64_t i = 0; i < I; i += PANEL_ROWS)
      for (int64_t o = 0; o < O; o += PANEL_COLUMNS) {
        const float *a = Vp + i, *b = dMp + o;
        float *c = dUp + i * O + o;
        /* I is a multiple of 16: the last panel has 6, 4 or 2 rows */
        switch (I - i < PANEL_ROWS ? I - i : PANEL_ROWS) {
          case 2: panel_product(2, n, a, 1, I, b, O, c, O, 1); break;
          case 4: panel_product(4, n, a, 1, I, b, O, c, O, 1); break;
          default: panel_product(PANEL_ROWS, n, a, 1, I, b, O, c, O, 1); break;
        }
      }
  }
}

/* U[p][i][o] = (G g G^T)[p], g the taps of input channel i to output
 * channel o of the HWIO filter f (I x O channels). Turned: the filter of
 * the convolution that computes x's gradient from dy, g turned half a turn
 * and U[p][o][i]. */
static void transform_filter(const float *f, int64_t I, int64_t O, int turned, float *U,
                             int threads) {
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < I; ++i)
    for (int64_t o = 0; o < O; o += LANES) {
      v8 g[3][3], e[4][3], u[4][4];
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 3; ++w) {
          const int tap = turned ? (2 - h) * 3 + 2 - w : h * 3 + w;
          g[h][w] = load8(f + (tap * I + i) * O + o);
        }
      for (int w = 0; w < 3; ++w) {
        v8 column[4];
        filter_transform3(g[0][w], g[1][w], g[2][w], column);
        for (int a = 0; a < 4; ++a) e[a][w] = column[a];
      }
      for (int a = 0; a < 4; ++a) filter_transform3(e[a][0], e[a][1], e[a][2], u[a]);
      for (int p = 0; p < POSITIONS; ++p) {
        if (!turned) {
          store8(U + (p * I + i) * O + o, u[p / 4][p % 4]);
          continue;
        }
        for (int l = 0; l < LANES; ++l) U[(p * O + o + l) * I + i] = u[p / 4][p % 4][l];
      }
    }
}

/* Floats of a thread's block buffers: transformed input and products. */
static size_t block_floats(const ct_winograd_shape *s) {
  return (size_t)(POSITIONS * tiling_of(s).block * (s->in_c + s->out_c));
}

static size_t filter_floats(const ct_winograd_shape *s) {
  return (size_t)(POSITIONS * s->in_c * s->out_c);
}

/* y = conv(x, U) with U the filter transformed; work: block_floats(s) a thread. */
static void forward_transformed(const ct_winograd_shape *s, const float *x, const float *U,
                                float *y, float *work, int threads) {
  const tiling tl = tiling_of(s);
  const size_t per_thread = block_floats(s);
#pragma omp parallel num_threads(threads)
  {
    const int part = omp_get_thread_num(), parts = omp_get_num_threads();
    float *V = work + part * per_thread, *M = V + POSITIONS * tl.block * s->in_c;
    for (int64_t b = tl.blocks * part / parts; b < tl.blocks * (part + 1) / parts; ++b) {
      const int64_t first = b * tl.block;
      const int64_t n = tl.count - first < tl.block ? tl.count - first : tl.block;
      const int64_t rows = (n + PANEL_ROWS - 1) / PANEL_ROWS * PANEL_ROWS;
      transform_input(s, &tl, x, first, n, rows, V);
      multiply_forward(rows, s->in_c, s->out_c, V, U, M);
      transform_output(s, &tl, M, first, n, rows, y);
    }
  }
}

int ct_winograd_supports(int64_t in_c, int64_t out_c) {
  return in_c > 0 && out_c > 0 && in_c % PANEL_COLUMNS == 0 && out_c % PANEL_COLUMNS == 0;
}

size_t ct_winograd_forward_scratch(const ct_winograd_shape *s, int threads) {
  return (filter_floats(s) + (size_t)threads * block_floats(s)) * sizeof(float);
}

void ct_winograd_forward(const ct_winograd_shape *s, const float *x, const float *filter, float *y,
                         void *scratch, int threads) {
  float *U = scratch;
  transform_filter(filter, s->in_c, s->out_c, 0, U, threads);
  forward_transformed(s, x, U, y, U + filter_floats(s), threads);
}

/* The convolution whose forward pass computes dx from dy: dy's shape in
 * x's place, the filter turned, padded 2 - p where s was padded p. */
static ct_winograd_shape transposed_shape(const ct_winograd_shape *s) {
  ct_winograd_shape t = {s->batch, s->out_h,       s->out_w,       s->out_c,   s->in_h,
                         s->in_w,  s->in_c,        2 - s->pad_top, 2 - s->pad_left};
  return t;
}

size_t ct_winograd_backward_data_scratch(const ct_winograd_shape *s, int threads) {
  const ct_winograd_shape t = transposed_shape(s);
  return ct_winograd_forward_scratch(&t, threads);
}

void ct_winograd_backward_data(const ct_winograd_shape *s, const float *filter, const float *dy,
                               float *dx, void *scratch, int threads) {
  const ct_winograd_shape t = transposed_shape(s);
  float *U = scratch;
  transform_filter(filter, s->in_c, s->out_c, 1, U, threads);
  forward_transformed(&t, dy, U, dx, U + filter_floats(s), threads);
}

size_t ct_winograd_backward_filter_scratch(const ct_winograd_shape *s, int threads) {
  return (size_t)threads * (block_floats(s) + filter_floats(s)) * sizeof(float);
}

void ct_winograd_backward_filter(const ct_winograd_shape *s, const float *x, const float *dy,
                                 float *dfilter, void *scratch, int threads) {
  const tiling tl = tiling_of(s);
  const int64_t I = s->in_c, O = s->out_c;
  const size_t per_thread = block_floats(s) + filter_floats(s);
  float *work = scratch;
  int parts = 1;
#pragma omp parallel num_threads(threads)
  {
    const int part = omp_get_thread_num();
#pragma omp single
    parts = omp_get_num_threads();
    float *dU = work + part * per_thread, *V = dU + filter_floats(s);
    float *dM = V + POSITIONS * tl.block * I;
    memset(dU, 0, filter_floats(s) * sizeof(float));
    for (int64_t b = tl.blocks * part / parts; b < tl.blocks * (part + 1) / parts; ++b) {
      const int64_t first = b * tl.block;
      const int64_t n = tl.count - first < tl.block ? tl.count - first : tl.block;
      transform_input(s, &tl, x, first, n, tl.block, V);
      transform_output_grad(s, &tl, dy, first, n, tl.block, dM);
      multiply_filter_grad(n, tl.block, I, O, V, dM, dU);
    }
  }
  /* the threads' sums in their order, then G^T dU G */
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < I; ++i)
    for (int64_t o = 0; o < O; o += LANES) {
      v8 u[4][4], e[3][4], w[3][3];
      for (int p = 0; p < POSITIONS; ++p) {
        v8 sum = load8(work + (p * I + i) * O + o);
        for (int part = 1; part < parts; ++part)
          sum += load8(work + part * per_thread + (p * I + i) * O + o);
        u[p / 4][p % 4] = sum;
      }
      for (int b = 0; b < 4; ++b) {
        v8 column[3];
        filter_grad_transform4(u[0][b], u[1][b], u[2][b], u[3][b], column);
        for (int h = 0; h < 3; ++h) e[h][b] = column[h];
      }
      for (int h = 0; h < 3; ++h) filter_grad_transform4(e[h][0], e[h][1], e[h][2], e[h][3], w[h]);
      for (int h = 0; h < 3; ++h)
        for (int c = 0; c < 3; ++c) store8(dfilter + ((h * 3 + c) * I + i) * O + o, w[h][c]);
    }
}

#else /* no AVX2 and FMA in this build: the callers use direct convolutions */

int ct_winograd_supports(int64_t in_c, int64_t out_c) {
  (void)in_c, (void)out_c;
  return 0;
}

size_t ct_winograd_forward_scratch(const ct_winograd_shape *s, int threads) {
  (void)s, (void)threads;
  return 0;
}

size_t ct_winograd_backward_data_scratch(const ct_winograd_shape *s, int threads) {
  (void)s, (void)threads;
  return 0;
}

size_t ct_winograd_backward_filter_scratch(const ct_winograd_shape *s, int threads) {
  (void)s, (void)threads;
  return 0;
}

void ct_winograd_forward(const ct_winograd_shape *s, const float *x, const float *filter, float *y,
                         void *scratch, int threads) {
  (void)s, (void)x, (void)filter, (void)y, (void)scratch, (void)threads;
}

void ct_winograd_backward_data(const ct_winograd_shape *s, const float *filter, const float *dy,
                               float *dx, void *scratch, int threads) {
  (void)s, (void)filter, (void)dy, (void)dx, (void)scratch, (void)threads;
}

void ct_winograd_backward_filter(const ct_winograd_shape *s, const float *x, const float *dy,
                                 float *dfilter, void *scratch, int threads) {
  (void)s, (void)x, (void)dy, (void)dfilter, (void)scratch, (void)threads;
}

#endif

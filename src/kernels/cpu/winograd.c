/* Winograd's F(2x2, 3x3) and F(2x2, 5x5) convolutions (winograd.h).
 *
 * Each algorithm is three constant matrices, for a tile of a = r + 1
 * inputs a side, r taps and 2 outputs:
 *   B^T (a x a) takes the input d to B^T d B,
 *   G   (a x r) takes the taps g to G g G^T,
 *   A^T (2 x a) takes the products m back to the output A^T m A.
 * F(2x2, 3x3) interpolates at 0, 1, -1 and infinity; F(2x2, 5x5) at 0, 1,
 * -1, 1/2, -2 and infinity, whose results round about half as far from the
 * exact ones as at 0, 1, -1, 2, -2 (the points of oneDNN's F(4x4, 3x3)),
 * and whose B^T and A^T are exact in binary. The gradients: dM = A dY A^T for a tile's products, and
 * dg = G^T dU G for the taps, dU the sum over tiles of (B^T d B) . dM.
 * Every transform is written once, over these matrices: inlined into a
 * function of one algorithm, its loops unroll and only the matrix's nonzero
 * terms remain.
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

#include "kernels/cpu/lanes.h"

/* Products computed 6 tiles by two vectors of output channels at a time
 * (16 channels with AVX2, 32 with AVX-512): 12 registers accumulate, of
 * the 16 AVX2 has. Channel counts are multiples of the panel's. */
enum { PANEL_ROWS = 6, PANEL_VECTORS = 2, PANEL_COLUMNS = PANEL_VECTORS * LANES };

/* Outputs a tile side; the largest filter and tile sides. */
enum { OUT = 2, MAX_TAPS = 5, MAX_TILE = MAX_TAPS + OUT - 1 };

/* A thread's block of tiles, transformed input and products, within this
 * many bytes: half the L2 cache of the smallest CPU with AVX2 here (Zen 3,
 * 512 KiB), so that both stay there between the transforms and the product. */
enum { BLOCK_BYTES = 256 << 10, MAX_BLOCK_TILES = 96 };

typedef struct algorithm {
  int taps, tile;               /* r, and a = r + 1 */
  float BT[MAX_TILE][MAX_TILE]; /* B^T, a x a */
  float G[MAX_TILE][MAX_TAPS];  /* G, a x r */
  float AT[OUT][MAX_TILE];      /* A^T, 2 x a */
} algorithm;

static const algorithm F2X2_3X3 = {
    3,
    4,
    {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
    {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}},
    {{1, 1, 1, 0}, {0, 1, -1, -1}}};

static const algorithm F2X2_5X5 = {
    5,
    6,
    {{1, -1.5f, -2, 1.5f, 1, 0},
     {0, -1, 0.5f, 2.5f, 1, 0},
     {0, 1, -2.5f, 0.5f, 1, 0},
     {0, -2, -1, 2, 1, 0},
     {0, 0.5f, -1, -0.5f, 1, 0},
     {0, 1, -1.5f, -2, 1.5f, 1}},
    {{1, 0, 0, 0, 0},
     {1.0f / 3, 1.0f / 3, 1.0f / 3, 1.0f / 3, 1.0f / 3},
     {-1.0f / 3, 1.0f / 3, -1.0f / 3, 1.0f / 3, -1.0f / 3},
     {-16.0f / 15, -8.0f / 15, -4.0f / 15, -2.0f / 15, -1.0f / 15},
     {1.0f / 15, -2.0f / 15, 4.0f / 15, -8.0f / 15, 16.0f / 15},
     {0, 0, 0, 0, 1}},
    {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5f, -2, 1}}};

static int positions_of(int64_t taps) { return (int)((taps + 1) * (taps + 1)); }

static inline lanes load_lanes(const float *p) {
  lanes v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void store_lanes(float *p, lanes v) { memcpy(p, &v, sizeof v); }

/* x in every lane (0 + x would add, for -0's sake, where this broadcasts). */
static inline lanes splat_lanes(float x) {
#if defined(__AVX512F__)
  return (lanes)_mm512_set1_ps(x);
#else
  return (lanes)_mm256_set1_ps(x);
#endif
}

/* a * b + c, rounded once. */
static inline lanes fma_lanes(lanes a, lanes b, lanes c) {
#if defined(__AVX512F__)
  return (lanes)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
  return (lanes)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#endif
}

/* out[i * out_step] = sum over j < cols of M(i, j) in[j * in_step] for
 * i < rows, where M(i, j) = M[i * row_step + j * column_step] (a matrix
 * above or its transpose): one side of a transform. */
static inline __attribute__((always_inline)) void transform_1d(
    const float *M, int row_step, int column_step, int rows, int cols, const lanes *in, int in_step,
    lanes *out, int out_step) {
#pragma GCC unroll 6
  for (int i = 0; i < rows; ++i) {
    lanes sum = {0};
#pragma GCC unroll 6
    for (int j = 0; j < cols; ++j) {
      const float c = M[i * row_step + j * column_step];
      const lanes x = in[j * in_step];
      if (c == 1.0f)
        sum += x;
      else if (c == -1.0f)
        sum -= x;
      else if (c != 0.0f)
        sum = fma_lanes(x, splat_lanes(c), sum);
    }
    out[i * out_step] = sum;
  }
}

/* out = M in M^T for the rows x cols matrix M (strides as transform_1d)
 * and in of cols x cols values, row i of each MAX_TILE apart. */
static inline __attribute__((always_inline)) void transform_2d(const float *M, int row_step,
                                                              int column_step, int rows, int cols,
                                                              const lanes *in, lanes *out) {
  lanes half[MAX_TILE][MAX_TILE];
#pragma GCC unroll 6
  for (int j = 0; j < cols; ++j)
    transform_1d(M, row_step, column_step, rows, cols, in + j, MAX_TILE, &half[0][j], MAX_TILE);
#pragma GCC unroll 6
  for (int i = 0; i < rows; ++i)
    transform_1d(M, row_step, column_step, rows, cols, half[i], 1, out + i * MAX_TILE, 1);
}

/* How the output falls into tiles, and the tiles into blocks. */
typedef struct tiling {
  int64_t tiles_w, per_image, count; /* tiles across, in an image, in all */
  int64_t block, blocks;             /* tiles in a block (a multiple of 6), blocks */
  int positions;                     /* of a transformed tile: (r + 1)^2 */
} tiling;

static tiling tiling_of(const ct_winograd_shape *s) {
  tiling t;
  t.positions = positions_of(s->taps);
  t.tiles_w = (s->out_w + 1) / 2;
  t.per_image = (s->out_h + 1) / 2 * t.tiles_w;
  t.count = s->batch * t.per_image;
  int64_t block = BLOCK_BYTES / (t.positions * (int64_t)sizeof(float) * (s->in_c + s->out_c));
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
  *row = in_image / t->tiles_w * OUT;
  *col = in_image % t->tiles_w * OUT;
}

/* V[p][t][c] (rows tiles a position apart): B^T d B of the a x a input d
 * around tiles first..first+n-1; tiles n..rows-1 of the block zero. */
static inline __attribute__((always_inline)) void transform_input(
    const algorithm *k, const ct_winograd_shape *s, const tiling *tl, const float *x,
    int64_t first, int64_t n, int64_t rows, float *V) {
  const int64_t C = s->in_c;
  const int a = k->tile;
  const lanes zero = {0};
  for (int64_t t = n; t < rows; ++t)
    for (int p = 0; p < a * a; ++p) memset(V + (p * rows + t) * C, 0, C * sizeof(float));
  for (int64_t t = 0; t < n; ++t) {
    int64_t image, row0, col0;
    tile_origin(tl, first + t, &image, &row0, &col0);
    row0 -= s->pad_top, col0 -= s->pad_left;
    const float *in = x + image * s->in_h * s->in_w * C;
    int inside[MAX_TILE][MAX_TILE];
    for (int i = 0; i < a; ++i)
      for (int j = 0; j < a; ++j)
        inside[i][j] = row0 + i >= 0 && row0 + i < s->in_h && col0 + j >= 0 && col0 + j < s->in_w;
    for (int64_t c = 0; c < C; c += LANES) {
      lanes d[MAX_TILE][MAX_TILE], v[MAX_TILE][MAX_TILE];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j)
          d[i][j] = inside[i][j] ? load_lanes(in + ((row0 + i) * s->in_w + col0 + j) * C + c) : zero;
      transform_2d(k->BT[0], MAX_TILE, 1, a, a, d[0], v[0]);
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) store_lanes(V + ((i * a + j) * rows + t) * C + c, v[i][j]);
    }
  }
}

/* y around tiles first..first+n-1: A^T m A of their products M[p][t][o],
 * then epilogue e. */
static inline __attribute__((always_inline)) void transform_output(
    const algorithm *k, const ct_winograd_shape *s, const tiling *tl, const float *M,
    int64_t first, int64_t n, int64_t rows, const ct_winograd_epilogue *e, float *y) {
  const int64_t O = s->out_c;
  const int a = k->tile;
  const lanes zero = {0};
  for (int64_t t = 0; t < n; ++t) {
    int64_t image, row0, col0;
    tile_origin(tl, first + t, &image, &row0, &col0);
    float *out = y + image * s->out_h * s->out_w * O;
    const int64_t height = row0 + 1 < s->out_h ? 2 : 1, width = col0 + 1 < s->out_w ? 2 : 1;
    for (int64_t o = 0; o < O; o += LANES) {
      lanes m[MAX_TILE][MAX_TILE], r[MAX_TILE][MAX_TILE];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) m[i][j] = load_lanes(M + ((i * a + j) * rows + t) * O + o);
      transform_2d(k->AT[0], MAX_TILE, 1, OUT, a, m[0], r[0]);
      const lanes bias = e->bias ? load_lanes(e->bias + o) : (lanes){0};
      for (int i = 0; i < height; ++i)
        for (int j = 0; j < width; ++j) {
          lanes value = r[i][j];
          if (e->bias) value += bias;
          /* 0 where value is not above 0, NaN included: Relu's rule */
          if (e->relu) value = lanes_select(value > zero, value, zero);
          store_lanes(out + ((row0 + i) * s->out_w + col0 + j) * O + o, value);
        }
    }
  }
}

/* dM[p][t][o] = A dy A^T of the 2x2 output gradient of tiles first..first+n-1
 * (zero beyond the output's edge). */
static inline __attribute__((always_inline)) void transform_output_grad(
    const algorithm *k, const ct_winograd_shape *s, const tiling *tl, const float *dy,
    int64_t first, int64_t n, int64_t rows, float *dM) {
  const int64_t O = s->out_c;
  const int a = k->tile;
  const lanes zero = {0};
  for (int64_t t = 0; t < n; ++t) {
    int64_t image, row0, col0;
    tile_origin(tl, first + t, &image, &row0, &col0);
    const float *in = dy + image * s->out_h * s->out_w * O;
    const int inside[OUT] = {1, col0 + 1 < s->out_w};
    const int64_t height = row0 + 1 < s->out_h ? 2 : 1;
    for (int64_t o = 0; o < O; o += LANES) {
      lanes g[MAX_TILE][MAX_TILE], m[MAX_TILE][MAX_TILE];
      for (int i = 0; i < OUT; ++i)
        for (int j = 0; j < OUT; ++j)
          g[i][j] = i < height && inside[j] ? load_lanes(in + ((row0 + i) * s->out_w + col0 + j) * O + o)
                                            : zero;
      /* A = (A^T)^T: a x 2 */
      transform_2d(k->AT[0], 1, MAX_TILE, a, OUT, g[0], m[0]);
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) store_lanes(dM + ((i * a + j) * rows + t) * O + o, m[i][j]);
    }
  }
}

/* c[r][0..PANEL_COLUMNS) = (the same if accumulate) + sum over k < K of
 * a[r * a_row + k * a_k] * b[k * ldb + 0..PANEL_COLUMNS), for r < rows (a
 * constant where inlined, so that the accumulators stay in registers). */
static inline __attribute__((always_inline)) void panel_product(
    int rows, int64_t K, const float *a, int64_t a_row, int64_t a_k, const float *b, int64_t ldb,
    float *c, int64_t ldc, int accumulate) {
  lanes acc[PANEL_ROWS][PANEL_VECTORS];
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < PANEL_VECTORS; ++h)
      acc[r][h] = accumulate ? load_lanes(c + r * ldc + LANES * h) : (lanes){0};
  for (int64_t k = 0; k < K; ++k) {
    lanes bk[PANEL_VECTORS];
    for (int h = 0; h < PANEL_VECTORS; ++h) bk[h] = load_lanes(b + k * ldb + LANES * h);
    for (int r = 0; r < rows; ++r) {
      const lanes ar = splat_lanes(a[r * a_row + k * a_k]);
      for (int h = 0; h < PANEL_VECTORS; ++h) acc[r][h] = fma_lanes(ar, bk[h], acc[r][h]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < PANEL_VECTORS; ++h) store_lanes(c + r * ldc + LANES * h, acc[r][h]);
}

/* M[p] = V[p] U[p] for each position p: [rows x I] by [I x O]. */
static void multiply_forward(int positions, int64_t rows, int64_t I, int64_t O, const float *V,
                             const float *U, float *M) {
  for (int p = 0; p < positions; ++p) {
    const float *Vp = V + p * rows * I, *Up = U + p * I * O;
    float *Mp = M + p * rows * O;
    for (int64_t t = 0; t < rows; t += PANEL_ROWS)
      for (int64_t o = 0; o < O; o += PANEL_COLUMNS)
        panel_product(PANEL_ROWS, I, Vp + t * I, I, 1, Up + o, O, Mp + t * O + o, O, 0);
  }
}

/* dU[p] += V[p]^T dM[p] for each position p: [I x n] by [n x O]. */
static void multiply_filter_grad(int positions, int64_t n, int64_t rows, int64_t I, int64_t O,
                                 const float *V, const float *dM, float *dU) {
  for (int p = 0; p < positions; ++p) {
    const float *Vp = V + p * rows * I, *dMp = dM + p * rows * O;
    float *dUp = dU + p * I * O;
    for (int64_t i = 0; i < I; i += PANEL_ROWS)
      for (int64_t o = 0; o < O; o += PANEL_COLUMNS) {
        const float *a = Vp + i, *b = dMp + o;
        float *c = dUp + i * O + o;
        /* I is a multiple of 16 (or 32): the last panel has 6, 4 or 2 rows */
        switch (I - i < PANEL_ROWS ? I - i : PANEL_ROWS) {
          case 2: panel_product(2, n, a, 1, I, b, O, c, O, 1); break;
          case 4: panel_product(4, n, a, 1, I, b, O, c, O, 1); break;
          default: panel_product(PANEL_ROWS, n, a, 1, I, b, O, c, O, 1); break;
        }
      }
  }
}

/* U[p][i][o] = (G g G^T)[p] for input channel i and output channels
 * o..o+7, g their taps in the HWIO filter f (I x O channels). Turned: the
 * filter of the convolution that computes x's gradient from dy, g turned
 * half a turn and U[p][o][i]. */
static inline __attribute__((always_inline)) void transform_filter_lanes(
    const algorithm *k, const float *f, int64_t I, int64_t O, int turned, int64_t i, int64_t o,
    float *U) {
  const int r = k->taps, a = k->tile;
  lanes g[MAX_TILE][MAX_TILE], u[MAX_TILE][MAX_TILE];
  for (int h = 0; h < r; ++h)
    for (int w = 0; w < r; ++w) {
      const int tap = turned ? (r - 1 - h) * r + r - 1 - w : h * r + w;
      g[h][w] = load_lanes(f + (tap * I + i) * O + o);
    }
  transform_2d(k->G[0], MAX_TAPS, 1, a, r, g[0], u[0]);
  for (int p = 0; p < a * a; ++p) {
    const lanes value = u[p / a][p % a];
    if (!turned) {
      store_lanes(U + (p * I + i) * O + o, value);
      continue;
    }
    for (int l = 0; l < LANES; ++l) U[(p * O + o + l) * I + i] = value[l];
  }
}

/* transform_filter_lanes for the algorithm of `taps`. */
static void transform_filter_channel(int64_t taps, const float *f, int64_t I, int64_t O,
                                     int turned, int64_t i, float *U) {
  for (int64_t o = 0; o < O; o += LANES) {
    if (taps == 5)
      transform_filter_lanes(&F2X2_5X5, f, I, O, turned, i, o, U);
    else
      transform_filter_lanes(&F2X2_3X3, f, I, O, turned, i, o, U);
  }
}

static void transform_filter(int64_t taps, const float *f, int64_t I, int64_t O, int turned,
                             float *U, int threads) {
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < I; ++i) transform_filter_channel(taps, f, I, O, turned, i, U);
}

/* Floats of a thread's block buffers: transformed input and products. */
static size_t block_floats(const ct_winograd_shape *s) {
  const tiling t = tiling_of(s);
  return (size_t)(t.positions * t.block * (s->in_c + s->out_c));
}

static size_t filter_floats(const ct_winograd_shape *s) {
  return (size_t)(positions_of(s->taps) * s->in_c * s->out_c);
}

/* The output around tiles first..first+n-1 of block buffers V and M. */
static inline __attribute__((always_inline)) void forward_block_of(
    const algorithm *k, const ct_winograd_shape *s, const tiling *tl, const float *x,
    const float *U, int64_t first, int64_t n, float *V, float *M, const ct_winograd_epilogue *e,
    float *y) {
  const int64_t rows = (n + PANEL_ROWS - 1) / PANEL_ROWS * PANEL_ROWS;
  transform_input(k, s, tl, x, first, n, rows, V);
  multiply_forward(tl->positions, rows, s->in_c, s->out_c, V, U, M);
  transform_output(k, s, tl, M, first, n, rows, e, y);
}

static void forward_block(const ct_winograd_shape *s, const tiling *tl, const float *x,
                          const float *U, int64_t first, int64_t n, float *V, float *M,
                          const ct_winograd_epilogue *e, float *y) {
  if (s->taps == 5)
    forward_block_of(&F2X2_5X5, s, tl, x, U, first, n, V, M, e, y);
  else
    forward_block_of(&F2X2_3X3, s, tl, x, U, first, n, V, M, e, y);
}

/* y = conv(x, U) with U the filter transformed, then epilogue e; work:
 * block_floats(s) a thread. */
static void forward_transformed(const ct_winograd_shape *s, const float *x, const float *U,
                                const ct_winograd_epilogue *e, float *y, float *work,
                                int threads) {
  const tiling tl = tiling_of(s);
  const size_t per_thread = block_floats(s);
#pragma omp parallel num_threads(threads)
  {
    const int part = omp_get_thread_num(), parts = omp_get_num_threads();
    float *V = work + part * per_thread, *M = V + tl.positions * tl.block * s->in_c;
    for (int64_t b = tl.blocks * part / parts; b < tl.blocks * (part + 1) / parts; ++b) {
      const int64_t first = b * tl.block;
      const int64_t n = tl.count - first < tl.block ? tl.count - first : tl.block;
      forward_block(s, &tl, x, U, first, n, V, M, e, y);
    }
  }
}

int64_t ct_winograd_channel_multiple(void) { return PANEL_COLUMNS; }

int ct_winograd_supports(int64_t taps, int64_t in_c, int64_t out_c) {
  return (taps == 3 || taps == 5) && in_c > 0 && out_c > 0 && in_c % PANEL_COLUMNS == 0 &&
         out_c % PANEL_COLUMNS == 0;
}

size_t ct_winograd_forward_scratch(const ct_winograd_shape *s, int threads) {
  return (filter_floats(s) + (size_t)threads * block_floats(s)) * sizeof(float);
}

void ct_winograd_forward(const ct_winograd_shape *s, const float *x, const float *filter,
                         const ct_winograd_epilogue *e, float *y, void *scratch, int threads) {
  static const ct_winograd_epilogue none = {NULL, 0};
  float *U = scratch;
  transform_filter(s->taps, filter, s->in_c, s->out_c, 0, U, threads);
  forward_transformed(s, x, U, e ? e : &none, y, U + filter_floats(s), threads);
}

/* The convolution whose forward pass computes dx from dy: dy's shape in
 * x's place, the filter turned, padded r - 1 - p where s was padded p. */
static ct_winograd_shape transposed_shape(const ct_winograd_shape *s) {
  ct_winograd_shape t = *s;
  t.in_h = s->out_h, t.in_w = s->out_w, t.in_c = s->out_c;
  t.out_h = s->in_h, t.out_w = s->in_w, t.out_c = s->in_c;
  t.pad_top = s->taps - 1 - s->pad_top, t.pad_left = s->taps - 1 - s->pad_left;
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
  static const ct_winograd_epilogue none = {NULL, 0};
  transform_filter(s->taps, filter, s->in_c, s->out_c, 1, U, threads);
  forward_transformed(&t, dy, U, &none, dx, U + filter_floats(s), threads);
}

size_t ct_winograd_backward_filter_scratch(const ct_winograd_shape *s, int threads) {
  return (size_t)threads * (block_floats(s) + filter_floats(s)) * sizeof(float);
}

/* dU += the products' gradient of tiles first..first+n-1 (block buffers V, dM). */
static inline __attribute__((always_inline)) void filter_grad_block_of(
    const algorithm *k, const ct_winograd_shape *s, const tiling *tl, const float *x,
    const float *dy, int64_t first, int64_t n, float *V, float *dM, float *dU) {
  transform_input(k, s, tl, x, first, n, tl->block, V);
  transform_output_grad(k, s, tl, dy, first, n, tl->block, dM);
  multiply_filter_grad(tl->positions, n, tl->block, s->in_c, s->out_c, V, dM, dU);
}

static void filter_grad_block(const ct_winograd_shape *s, const tiling *tl, const float *x,
                              const float *dy, int64_t first, int64_t n, float *V, float *dM,
                              float *dU) {
  if (s->taps == 5)
    filter_grad_block_of(&F2X2_5X5, s, tl, x, dy, first, n, V, dM, dU);
  else
    filter_grad_block_of(&F2X2_3X3, s, tl, x, dy, first, n, V, dM, dU);
}

/* dfilter for input channel i and output channels o..o+7: G^T dU G, dU the
 * sum of the `parts` threads' sums (`per_thread` floats apart) in their order. */
static inline __attribute__((always_inline)) void filter_grad_lanes(
    const algorithm *k, const float *work, size_t per_thread, int parts, int64_t I, int64_t O,
    int64_t i, int64_t o, float *dfilter) {
  const int r = k->taps, a = k->tile;
  lanes u[MAX_TILE][MAX_TILE], w[MAX_TILE][MAX_TILE];
  for (int p = 0; p < a * a; ++p) {
    lanes sum = load_lanes(work + (p * I + i) * O + o);
    for (int part = 1; part < parts; ++part)
      sum += load_lanes(work + part * per_thread + (p * I + i) * O + o);
    u[p / a][p % a] = sum;
  }
  /* G^T: r x a */
  transform_2d(k->G[0], 1, MAX_TAPS, r, a, u[0], w[0]);
  for (int h = 0; h < r; ++h)
    for (int c = 0; c < r; ++c) store_lanes(dfilter + ((h * r + c) * I + i) * O + o, w[h][c]);
}

static void filter_grad_channel(int64_t taps, const float *work, size_t per_thread, int parts,
                                int64_t I, int64_t O, int64_t i, float *dfilter) {
  for (int64_t o = 0; o < O; o += LANES) {
    if (taps == 5)
      filter_grad_lanes(&F2X2_5X5, work, per_thread, parts, I, O, i, o, dfilter);
    else
      filter_grad_lanes(&F2X2_3X3, work, per_thread, parts, I, O, i, o, dfilter);
  }
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
    float *dM = V + tl.positions * tl.block * I;
    memset(dU, 0, filter_floats(s) * sizeof(float));
    for (int64_t b = tl.blocks * part / parts; b < tl.blocks * (part + 1) / parts; ++b) {
      const int64_t first = b * tl.block;
      const int64_t n = tl.count - first < tl.block ? tl.count - first : tl.block;
      filter_grad_block(s, &tl, x, dy, first, n, V, dM, dU);
    }
  }
  /* the threads' sums in their order, then G^T dU G */
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < I; ++i) filter_grad_channel(s->taps, work, per_thread, parts, I, O, i, dfilter);
}

#else /* no AVX2 and FMA in this build: the callers use direct convolutions */

int64_t ct_winograd_channel_multiple(void) { return 0; }

int ct_winograd_supports(int64_t taps, int64_t in_c, int64_t out_c) {
  (void)taps, (void)in_c, (void)out_c;
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

void ct_winograd_forward(const ct_winograd_shape *s, const float *x, const float *filter,
                         const ct_winograd_epilogue *e, float *y, void *scratch, int threads) {
  (void)s, (void)x, (void)filter, (void)e, (void)y, (void)scratch, (void)threads;
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

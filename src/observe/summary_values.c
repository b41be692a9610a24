/* Summary values packed by protobuf-c (the code protoc-c made from
 * src/observe/proto), images encoded as PNG by libpng. */
#include "observe/summary_values.h"

#include <float.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summary.pb-c.h"

static int out_of_memory(const char *tag, ct_status *status) {
  ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory packing the summary '%s'", tag);
  return 1;
}

/* Packs the n values as one Summary into *bytes. */
static int pack(Tensorflow__Summary__Value **values, int n, const char *tag, uint8_t **bytes,
                size_t *size, ct_status *status) {
  Tensorflow__Summary summary = TENSORFLOW__SUMMARY__INIT;
  summary.n_value = (size_t)n;
  summary.value = values;
  *size = tensorflow__summary__get_packed_size(&summary);
  *bytes = malloc(*size ? *size : 1);
  if (*bytes == NULL) return out_of_memory(tag, status);
  tensorflow__summary__pack(&summary, *bytes);
  return 0;
}

int ct_summary_pack_scalar(const char *tag, double value, uint8_t **bytes, size_t *size,
                           ct_status *status) {
  Tensorflow__Summary__Value v = TENSORFLOW__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
  v.simple_value = (float)value;
  Tensorflow__Summary__Value *values[] = {&v};
  return pack(values, 1, tag, bytes, size, status);
}

/* ---- histograms ------------------------------------------------------------ */

/* TensorFlow's default bucket limits (lib/histogram/histogram.cc), ascending:
 * -DBL_MAX, -1e20.., ..-1e-12, 0, 1e-12.., ..1e20, DBL_MAX. Returns their
 * count, or 0 out of memory. */
static size_t default_limits(double **limits) {
  size_t half = 0;
  for (double v = 1e-12; v < 1e20; v *= 1.1) ++half;
  const size_t n = 2 * (half + 1) + 1;
  double *l = malloc(n * sizeof *l);
  if (l == NULL) return 0;
  size_t k = 0;
  for (double v = 1e-12; v < 1e20; v *= 1.1) {
    l[half + 1 + 1 + k] = v;
    l[half - k] = -v;
    ++k;
  }
  l[0] = -DBL_MAX;
  l[half + 1] = 0.0;
  l[n - 1] = DBL_MAX;
  *limits = l;
  return n;
}

/* The index of the first limit above x (x is finite, below DBL_MAX). */
static size_t bucket_of(const double *limits, size_t n, double x) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (limits[mid] > x)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

int ct_summary_pack_histogram(const char *tag, const double *values, int64_t n, uint8_t **bytes,
                              size_t *size, ct_status *status) {
  *bytes = NULL;
  for (int64_t i = 0; i < n; ++i)
    if (!isfinite(values[i])) {
      ct_status_set(status, CT_INVALID_ARGUMENT, "Nan in summary histogram for: %s", tag);
      return 1;
    }
  double *limits = NULL;
  const size_t n_limits = default_limits(&limits);
  double *counts = n_limits ? calloc(n_limits, sizeof *counts) : NULL;
  double *out_limits = n_limits ? malloc(n_limits * sizeof *out_limits) : NULL;
  double *out_counts = n_limits ? malloc(n_limits * sizeof *out_counts) : NULL;
  int failed = counts == NULL || out_limits == NULL || out_counts == NULL;
  if (failed) out_of_memory(tag, status);
  Tensorflow__HistogramProto histo = TENSORFLOW__HISTOGRAM_PROTO__INIT;
  histo.min = DBL_MAX;
  histo.max = -DBL_MAX;
  for (int64_t i = 0; i < n && !failed; ++i) {
    const double x = values[i];
    counts[bucket_of(limits, n_limits, x)] += 1.0;
    histo.min = fmin(histo.min, x);
    histo.max = fmax(histo.max, x);
    histo.num += 1.0;
    histo.sum += x;
    histo.sum_squares += x * x;
  }
  /* a run of empty buckets as one, ending where the run ends */
  size_t kept = 0;
  for (size_t i = 0; i < n_limits && !failed;) {
    double end = limits[i];
    const double count = counts[i++];
    if (count <= 0.0)
      while (i < n_limits && counts[i] <= 0.0) end = limits[i++];
    out_limits[kept] = end;
    out_counts[kept++] = count;
  }
  histo.n_bucket_limit = histo.n_bucket = kept;
  histo.bucket_limit = out_limits;
  histo.bucket = out_counts;
  Tensorflow__Summary__Value v = TENSORFLOW__SUMMARY__VALUE__INIT;
  v.tag = (char *)tag;
  v.value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_HISTO;
  v.histo = &histo;
  Tensorflow__Summary__Value *packed[] = {&v};
  failed = failed || pack(packed, 1, tag, bytes, size, status);
  free(limits);
  free(counts);
  free(out_limits);
  free(out_counts);
  return failed;
}

/* ---- images ---------------------------------------------------------------- */

typedef struct png_out {
  jmp_buf jump;
  uint8_t *data;
  size_t size, capacity;
  int no_memory; /* a write found no memory (else libpng failed) */
} png_out;

static void png_fail(png_structp png, png_const_charp message) {
  (void)message;
  longjmp(((png_out *)png_get_error_ptr(png))->jump, 1);
}

static void png_ignore_warning(png_structp png, png_const_charp message) {
  (void)png, (void)message;
}

static void png_append(png_structp png, png_bytep data, png_size_t n) {
  png_out *out = png_get_io_ptr(png);
  if (out->size + n > out->capacity) {
    const size_t capacity = 2 * (out->size + n);
    uint8_t *grown = realloc(out->data, capacity);
    if (grown == NULL) {
      out->no_memory = 1;
      png_error(png, "out of memory");
    }
    out->data = grown;
    out->capacity = capacity;
  }
  memcpy(out->data + out->size, data, n);
  out->size += n;
}

static void png_flush_nothing(png_structp png) { (void)png; }

/* Encodes one image as PNG (zlib's default compression) into out->data. */
static int encode_png(const uint8_t *pixels, int height, int width, int channels, png_out *out,
                      const char *tag, ct_status *status) {
  static const int color_types[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                    PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, out, png_fail, png_ignore_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (info == NULL) {
    png_destroy_write_struct(&png, NULL);
    return out_of_memory(tag, status);
  }
  if (setjmp(out->jump)) {
    png_destroy_write_struct(&png, &info);
    if (out->no_memory) return out_of_memory(tag, status);
    ct_status_set(status, CT_INTERNAL, "libpng could not encode the image of summary '%s'", tag);
    return 1;
  }
  png_set_write_fn(png, out, png_append, png_flush_nothing);
  png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, color_types[channels],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t stride = (size_t)width * (size_t)channels;
  for (int y = 0; y < height; ++y) png_write_row(png, (png_const_bytep)(pixels + y * stride));
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return 0;
}

int ct_summary_pack_images(const char *const *tags, const uint8_t *pixels, int n, int height,
                           int width, int channels, uint8_t **bytes, size_t *size,
                           ct_status *status) {
  *bytes = NULL;
  const char *first = n > 0 ? tags[0] : "";
  if (channels != 1 && channels != 3 && channels != 4) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "Tensor must be 4-D with last dim 1, 3, or 4, not %d (the summary '%s')",
                  channels, first);
    return 1;
  }
  if (height <= 0 || width <= 0) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "the images of summary '%s' are empty (%d x %d); give them pixels", first, height,
                  width);
    return 1;
  }
  Tensorflow__Summary__Value *values = calloc((size_t)n + 1, sizeof *values);
  Tensorflow__Summary__Value **pointers = calloc((size_t)n + 1, sizeof *pointers);
  Tensorflow__Summary__Image *images = calloc((size_t)n + 1, sizeof *images);
  png_out *encoded = calloc((size_t)n + 1, sizeof *encoded);
  int failed = values == NULL || pointers == NULL || images == NULL || encoded == NULL;
  if (failed) out_of_memory(first, status);
  const size_t image_bytes = (size_t)height * (size_t)width * (size_t)channels;
  for (int i = 0; i < n && !failed; ++i) {
    failed =
        encode_png(pixels + i * image_bytes, height, width, channels, &encoded[i], tags[i], status);
    tensorflow__summary__image__init(&images[i]);
    images[i].height = height;
    images[i].width = width;
    images[i].colorspace = channels;
    images[i].encoded_image_string.len = encoded[i].size;
    images[i].encoded_image_string.data = encoded[i].data;
    tensorflow__summary__value__init(&values[i]);
    values[i].tag = (char *)tags[i];
    values[i].value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_IMAGE;
    values[i].image = &images[i];
    pointers[i] = &values[i];
  }
  failed = failed || pack(pointers, n, first, bytes, size, status);
  for (int i = 0; encoded && i < n; ++i) free(encoded[i].data);
  free(encoded);
  free(images);
  free(pointers);
  free(values);
  return failed;
}

/* JPEG (libjpeg-turbo) and PNG (libpng) images decoded into the shape a
 * dataset asks for. Both libraries report errors by calling a handler that
 * must not return (libjpeg's default one calls exit()): ours record the
 * message and longjmp back, so a corrupt file is a status, never an exit. */
#include <math.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h and stddef.h, which it needs */
#include <png.h>

#include "data/dataset_internal.h"

#define IMAGE_MAX_BYTES (1ll << 28) /* a decoded image larger than this is refused */

typedef struct decoded {
  uint8_t *pixels; /* h * w * c, HWC: the caller's pixels (target) or a buffer of its own */
  int64_t h, w, c; /* c: 1 (gray) or 3 (RGB) */
} decoded;

/* The shape the caller asks for and its pixels: an image of that shape is
 * decoded straight into them, any other into a buffer converted after. */
typedef struct target {
  uint8_t *pixels;
  int64_t h, w, c;
} target;

/* Where an image of h x w x c decodes: the target's pixels when it has
 * their shape, else a new buffer (NULL when out of memory). */
static uint8_t *decode_buffer(const target *t, int64_t h, int64_t w, int64_t c) {
  if (h == t->h && w == t->w && c == t->c) return t->pixels;
  return malloc((size_t)(h * w * c));
}

static void free_buffer(const target *t, uint8_t *buffer) {
  if (buffer != t->pixels) free(buffer);
}

static int too_large(const char *where, int64_t h, int64_t w, ct_status *status) {
  if (h * w * 3 <= IMAGE_MAX_BYTES) return 0;
  ct_status_set(status, CT_DATA_LOSS,
                "%s is %lldx%lld pixels, over the %lld bytes an image may take decoded; "
                "shrink it",
                where, (long long)w, (long long)h, IMAGE_MAX_BYTES);
  return 1;
}

/* ---- JPEG ------------------------------------------------------------------ */

typedef struct jpeg_failure {
  struct jpeg_error_mgr mgr; /* first: libjpeg hands back a pointer to it */
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} jpeg_failure;

static void jpeg_fail(j_common_ptr cinfo) {
  jpeg_failure *f = (jpeg_failure *)cinfo->err;
  f->mgr.format_message(cinfo, f->message);
  longjmp(f->jump, 1);
}

/* Level -1 is a warning about corrupt data (a truncated file among them):
 * libjpeg would go on with made-up pixels; such an image is bad. */
static void jpeg_note(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_fail(cinfo);
}

static int decode_jpeg(const unsigned char *data, size_t size, const char *where, const target *t,
                       decoded *img, ct_status *status) {
  struct jpeg_decompress_struct cinfo;
  jpeg_failure failure;
  uint8_t *volatile out = NULL;
  cinfo.err = jpeg_std_error(&failure.mgr);
  failure.mgr.error_exit = jpeg_fail;
  failure.mgr.emit_message = jpeg_note;
  if (setjmp(failure.jump)) {
    jpeg_destroy_decompress(&cinfo);
    free_buffer(t, out);
    ct_status_set(status, CT_DATA_LOSS, "%s is a corrupt JPEG image (%s); replace or remove it",
                  where, failure.message);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  const int gray = cinfo.num_components == 1;
  if (!gray && cinfo.jpeg_color_space != JCS_YCbCr && cinfo.jpeg_color_space != JCS_RGB) {
    jpeg_destroy_decompress(&cinfo);
    ct_status_set(status, CT_DATA_LOSS,
                  "%s is a JPEG image with %d color components (CMYK?), which ctower cannot "
                  "convert; save it as RGB or grayscale",
                  where, cinfo.num_components);
    return 1;
  }
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  if (too_large(where, cinfo.image_height, cinfo.image_width, status)) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_start_decompress(&cinfo);
  const size_t stride = (size_t)cinfo.output_width * (size_t)cinfo.output_components;
  out = decode_buffer(t, cinfo.output_height, cinfo.output_width, cinfo.output_components);
  if (out == NULL) {
    jpeg_destroy_decompress(&cinfo);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory decoding %s", where);
    return 1;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  *img = (decoded){out, cinfo.output_height, cinfo.output_width, cinfo.output_components};
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

/* ---- PNG ------------------------------------------------------------------- */

typedef struct png_failure {
  jmp_buf jump;
  char message[256];
} png_failure;

typedef struct png_bytes {
  const unsigned char *data;
  size_t size, at;
} png_bytes;

static void png_fail(png_structp png, png_const_charp message) {
  png_failure *f = png_get_error_ptr(png);
  snprintf(f->message, sizeof f->message, "%s", message);
  longjmp(f->jump, 1);
}

static void png_ignore_warning(png_structp png, png_const_charp message) {
  (void)png, (void)message;
}

static void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  png_bytes *src = png_get_io_ptr(png);
  if (n > src->size - src->at) png_error(png, "the file ends early: it is truncated");
  memcpy(out, src->data + src->at, n);
  src->at += n;
}

static int decode_png(const unsigned char *data, size_t size, const char *where, const target *t,
                      decoded *img, ct_status *status) {
  png_failure failure;
  png_bytes src = {data, size, 0};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &failure, png_fail, png_ignore_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  uint8_t *volatile out = NULL;
  png_bytep *volatile rows = NULL;
  if (info == NULL) {
    png_destroy_read_struct(&png, NULL, NULL);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory decoding %s", where);
    return 1;
  }
  if (setjmp(failure.jump)) {
    png_destroy_read_struct(&png, &info, NULL);
    free_buffer(t, out);
    free(rows);
    ct_status_set(status, CT_DATA_LOSS, "%s is a corrupt PNG image (%s); replace or remove it",
                  where, failure.message);
    return 1;
  }
  png_set_read_fn(png, &src, png_read_bytes);
  png_read_info(png, info);
  /* palette -> RGB, gray below 8 bits -> 8, 16 bits -> 8, alpha dropped */
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int64_t h = png_get_image_height(png, info), w = png_get_image_width(png, info);
  const int64_t c = png_get_channels(png, info);
  const size_t stride = png_get_rowbytes(png, info);
  int failed = too_large(where, h, w, status);
  if (!failed && (c != 1 && c != 3)) {
    ct_status_set(status, CT_DATA_LOSS,
                  "%s is a PNG image of %lld channels, which ctower "
                  "cannot convert; save it as RGB or grayscale",
                  where, (long long)c);
    failed = 1;
  }
  if (!failed) {
    out = decode_buffer(t, h, w, c); /* 8 bits a sample by now: stride is w * c */
    rows = malloc((size_t)h * sizeof *rows);
    if (out == NULL || rows == NULL) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory decoding %s", where);
      failed = 1;
    }
  }
  if (!failed) {
    for (int64_t y = 0; y < h; ++y) rows[y] = out + (size_t)y * stride;
    png_read_image(png, rows);
    png_read_end(png, NULL); /* checks the chunks after the pixels too */
    *img = (decoded){out, h, w, c};
    out = NULL;
  }
  png_destroy_read_struct(&png, &info, NULL);
  free_buffer(t, out);
  free(rows);
  return failed;
}

/* ---- conversion ------------------------------------------------------------ */

/* Gray <-> RGB, in place of img (gray as PIL's "L": ITU-R 601-2 luma). */
static int convert_channels(decoded *img, int64_t c, const char *where, ct_status *status) {
  if (img->c == c) return 0;
  const int64_t n = img->h * img->w;
  uint8_t *out = malloc((size_t)(n * c));
  if (out == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory decoding %s", where);
    return 1;
  }
  const uint8_t *in = img->pixels;
  for (int64_t i = 0; i < n; ++i) {
    if (c == 3) {
      out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[i];
    } else {
      const uint32_t r = in[3 * i], g = in[3 * i + 1], b = in[3 * i + 2];
      out[i] = (uint8_t)((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
    }
  }
  free(img->pixels);
  img->pixels = out;
  img->c = c;
  return 0;
}

/* Bilinear resize with half-pixel centres (TensorFlow's resize_bilinear with
 * half_pixel_centers, no antialiasing): output pixel y samples the input at
 * (y + 0.5) * in_h / h - 0.5, clamped to the image. The same size copies. */
static void resize_bilinear(const decoded *img, int64_t h, int64_t w, uint8_t *out) {
  const int64_t c = img->c;
  if (img->h == h && img->w == w) { /* every sample falls on a pixel */
    memcpy(out, img->pixels, (size_t)(h * w * c));
    return;
  }
  for (int64_t y = 0; y < h; ++y) {
    double sy = ((double)y + 0.5) * (double)img->h / (double)h - 0.5;
    sy = sy < 0 ? 0 : sy;
    int64_t y0 = (int64_t)sy, y1 = y0 + 1 < img->h ? y0 + 1 : img->h - 1;
    const double fy = sy - (double)y0;
    for (int64_t x = 0; x < w; ++x) {
      double sx = ((double)x + 0.5) * (double)img->w / (double)w - 0.5;
      sx = sx < 0 ? 0 : sx;
      int64_t x0 = (int64_t)sx, x1 = x0 + 1 < img->w ? x0 + 1 : img->w - 1;
      const double fx = sx - (double)x0;
      const uint8_t *p00 = img->pixels + (y0 * img->w + x0) * c;
      const uint8_t *p01 = img->pixels + (y0 * img->w + x1) * c;
      const uint8_t *p10 = img->pixels + (y1 * img->w + x0) * c;
      const uint8_t *p11 = img->pixels + (y1 * img->w + x1) * c;
      for (int64_t k = 0; k < c; ++k) {
        const double top = p00[k] + (p01[k] - p00[k]) * fx;
        const double bottom = p10[k] + (p11[k] - p10[k]) * fx;
        out[(y * w + x) * c + k] = (uint8_t)lround(top + (bottom - top) * fy);
      }
    }
  }
}

int ct_image_decode(const unsigned char *data, size_t size, const char *where, int64_t h, int64_t w,
                    int64_t c, uint8_t *pixels, ct_status *status) {
  static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  const target t = {pixels, h, w, c};
  decoded img = {0};
  int failed;
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    failed = decode_jpeg(data, size, where, &t, &img, status);
  } else if (size >= 8 && memcmp(data, png_magic, 8) == 0) {
    failed = decode_png(data, size, where, &t, &img, status);
  } else {
    ct_status_set(status, CT_DATA_LOSS,
                  "%s is neither a JPEG nor a PNG image (its first bytes say so); replace or "
                  "remove it",
                  where);
    return 1;
  }
  if (failed || img.pixels == pixels) return failed; /* decoded in place: nothing to convert */
  failed = convert_channels(&img, c, where, status);
  if (!failed) resize_bilinear(&img, h, w, pixels);
  free(img.pixels);
  return failed;
}

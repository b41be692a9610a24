/* IDX files (the MNIST format), plain or gzipped, read through zlib. */
#include "ctower/data.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/files.h"

#define IDX_MAX_BYTES (1ull << 34)

/* What to do about a missing IDX file: install the package when path lies
 * in the Fashion-MNIST package's folder, else check the path. */
static const char *install_hint(const char *path) {
  static const char prefix[] = CT_FASHION_MNIST_DIR "/";
  return strncmp(path, prefix, sizeof prefix - 1) == 0
             ? "install it with `apt-get install dataset-fashion-mnist`"
             : "check the path (dataset.path in the config)";
}

/* Opens path for gzread, which also reads plain files. NULL with status set. */
static gzFile open_idx(const char *path, ct_status *status) {
  const ct_file_role role = {"IDX file", install_hint(path)};
  const int fd = ct_file_open_read(path, &role, NULL, status);
  if (fd < 0) return NULL;
  gzFile gz = gzdopen(fd, "rb");
  if (gz == NULL) {
    close(fd);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory opening '%s'", path);
    return NULL;
  }
  gzbuffer(gz, 1u << 17);
  return gz;
}

/* Reads up to size bytes; returns how many were read, or -1 on a broken
 * stream (status set). */
static int64_t read_fully(gzFile gz, const char *path, void *buf, size_t size, ct_status *status) {
  size_t done = 0;
  while (done < size) {
    size_t want = size - done;
    if (want > (1u << 30)) want = 1u << 30;
    int got = gzread(gz, (char *)buf + done, (unsigned)want);
    if (got < 0) {
      int err;
      const char *msg = gzerror(gz, &err);
      ct_status_set(status, CT_DATA_LOSS, "IDX file '%s' is corrupt (%s); download or reinstall it",
                    path, err == Z_ERRNO ? strerror(errno) : msg);
      return -1;
    }
    if (got == 0) break;
    done += (size_t)got;
  }
  return (int64_t)done;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Maps the IDX type byte to a dtype; -1 when unsupported. */
static int idx_dtype(unsigned type) {
  switch (type) {
    case 0x08:
      return CT_U8;
    case 0x0C:
      return CT_I32;
    case 0x0D:
      return CT_F32;
    default:
      return -1;
  }
}

/* Reads magic and dims; fills shape and dtype. 0 on success. */
static int read_header(gzFile gz, const char *path, ct_dtype *dtype, ct_shape *shape,
                       int *header_bytes, ct_status *status) {
  unsigned char magic[4];
  int64_t got = read_fully(gz, path, magic, 4, status);
  if (got < 0) return 1;
  if (got < 4) {
    ct_status_set(status, CT_DATA_LOSS,
                  "IDX file '%s' is truncated: expected a 4-byte header, found %lld bytes; "
                  "download or reinstall it",
                  path, (long long)got);
    return 1;
  }
  if (magic[0] != 0 || magic[1] != 0) {
    ct_status_set(status, CT_DATA_LOSS,
                  "'%s' is not an IDX file (its first bytes are %02x %02x, not 00 00); pass an "
                  "uncompressed or gzipped IDX file",
                  path, magic[0], magic[1]);
    return 1;
  }
  int dt = idx_dtype(magic[2]);
  if (dt < 0) {
    ct_status_set(status, CT_UNIMPLEMENTED,
                  "IDX file '%s' has element type 0x%02x; ctower reads u8 (0x08), i32 (0x0C) "
                  "and f32 (0x0D) only",
                  path, magic[2]);
    return 1;
  }
  int rank = magic[3];
  if (rank < 1 || rank > CT_MAX_RANK) {
    ct_status_set(status, rank == 0 ? CT_DATA_LOSS : CT_UNIMPLEMENTED,
                  "IDX file '%s' has %d dimensions; ctower reads 1 to %d", path, rank, CT_MAX_RANK);
    return 1;
  }
  unsigned char dims[4 * CT_MAX_RANK];
  got = read_fully(gz, path, dims, (size_t)(4 * rank), status);
  if (got < 0) return 1;
  *header_bytes = 4 + 4 * rank;
  if (got < 4 * rank) {
    ct_status_set(status, CT_DATA_LOSS,
                  "IDX file '%s' is truncated: expected a %d-byte header, found %lld bytes; "
                  "download or reinstall it",
                  path, *header_bytes, (long long)(4 + got));
    return 1;
  }
  uint64_t total = ct_dtype_size((ct_dtype)dt);
  shape->rank = rank;
  for (int i = 0; i < rank; ++i) {
    uint32_t d = be32(dims + 4 * i);
    shape->dims[i] = d;
    if (d > INT32_MAX || (d != 0 && total > IDX_MAX_BYTES / d)) {
      ct_status_set(status, CT_DATA_LOSS,
                    "IDX file '%s' is corrupt: its dimensions (dimension %d is %u) describe "
                    "more than 2^34 bytes; download or reinstall it",
                    path, i, d);
      return 1;
    }
    total *= d;
  }
  *dtype = (ct_dtype)dt;
  return 0;
}

/* Converts big-endian 4-byte words to host order, in place. */
static void be32_to_host(void *data, size_t count) {
  unsigned char *p = data;
  for (size_t i = 0; i < count; ++i, p += 4) {
    uint32_t v = be32(p);
    memcpy(p, &v, 4);
  }
}

/* The `claimed` data bytes the header promises, read into a buffer that
 * grows (doubling) as they arrive: a header that lies about its sizes
 * costs no more memory or time than the file really holds. *got: how many
 * came. NULL with status on a broken stream or out of memory. */
static unsigned char *read_claimed(gzFile gz, const char *path, size_t claimed, size_t *got,
                                   ct_status *status) {
  size_t cap = claimed < (1u << 20) ? claimed : (1u << 20), done = 0;
  unsigned char *buf = malloc(cap ? cap : 1);
  while (buf != NULL && done < claimed) {
    if (done == cap) {
      const size_t grown = cap > claimed / 2 ? claimed : 2 * cap;
      unsigned char *bigger = realloc(buf, grown);
      if (bigger == NULL) break;
      buf = bigger, cap = grown;
    }
    const int64_t n = read_fully(gz, path, buf + done, cap - done, status);
    if (n < 0) {
      free(buf);
      return NULL;
    }
    done += (size_t)n;
    if (done < cap) break; /* the stream ended short */
  }
  if (buf == NULL || (done < claimed && done == cap)) {
    free(buf);
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory reading IDX file '%s'",
                  path);
    return NULL;
  }
  *got = done;
  return buf;
}

ct_tensor *ct_idx_read(const char *path, ct_status *status) {
  if (path == NULL || path[0] == '\0') {
    ct_status_set(status, CT_INVALID_ARGUMENT, "ct_idx_read needs a file path, got none");
    return NULL;
  }
  gzFile gz = open_idx(path, status);
  if (gz == NULL) return NULL;
  ct_dtype dtype = CT_U8;
  ct_shape shape;
  memset(&shape, 0, sizeof shape);
  int header_bytes = 0;
  ct_tensor *t = NULL;
  unsigned char *data = NULL;
  size_t nbytes = 0, got = 0;
  if (read_header(gz, path, &dtype, &shape, &header_bytes, status) == 0) {
    nbytes = (size_t)ct_shape_elements(&shape) * ct_dtype_size(dtype);
    data = read_claimed(gz, path, nbytes, &got, status);
  }
  if (data != NULL) {
    unsigned char extra;
    int failed = 0;
    if (got < nbytes) {
      ct_status_set(status, CT_DATA_LOSS,
                    "IDX file '%s' is truncated: expected %zu data bytes after the %d-byte "
                    "header, found %lld; download or reinstall it",
                    path, nbytes, header_bytes, (long long)got);
      failed = 1;
    } else {
      int64_t more = read_fully(gz, path, &extra, 1, status);
      if (more == 1)
        ct_status_set(status, CT_DATA_LOSS,
                      "IDX file '%s' is corrupt: it is longer than the %zu data bytes its "
                      "header describes; download or reinstall it",
                      path, nbytes);
      failed = more != 0;
    }
    if (!failed && (t = ct_tensor_new(dtype, &shape, status)) != NULL) {
      memcpy(t->data, data, nbytes);
      if (ct_dtype_size(dtype) == 4) be32_to_host(t->data, nbytes / 4);
    }
    free(data);
  }
  gzclose(gz);
  return t;
}

#include "core/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Links followed before a path is called a loop, as the kernel's limit. */
enum { MAX_LINKS = 40 };

int ct_make_dirs(const char *path) {
  char *dir = strdup(path);
  if (dir == NULL) return 1; /* errno is ENOMEM */
  int failed = 0;
  for (char *p = dir + 1; !failed; ++p) {
    if (*p != '/' && *p != '\0') continue;
    const char saved = *p;
    *p = '\0';
    failed = mkdir(dir, 0777) != 0 && errno != EEXIST;
    *p = saved;
    if (saved == '\0') break;
  }
  struct stat st;
  if (!failed && stat(dir, &st) != 0) failed = 1;
  if (!failed && !S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    failed = 1;
  }
  const int saved_errno = errno;
  free(dir);
  errno = saved_errno;
  return failed;
}

const char *ct_file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

const char *ct_file_split_path(const char *path, char *dir, size_t dir_size) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL)
    snprintf(dir, dir_size, ".");
  else if (slash == path)
    snprintf(dir, dir_size, "/");
  else
    snprintf(dir, dir_size, "%.*s", (int)(slash - path), path);
  return slash ? slash + 1 : path;
}

int ct_file_present(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* ---- reading ------------------------------------------------------------------------- */

/* Sets status for an open of path that failed with errno e. */
static void open_failed(const char *path, const ct_file_role *role, int e, ct_status *status) {
  if (e == ENOENT || e == ENOTDIR) {
    ct_status_set(status, CT_NOT_FOUND, "%s '%s' not found: %s; %s", role->what, path, strerror(e),
                  role->fix);
    return;
  }
  const char *advice = role->fix;
  ct_code code = CT_UNAVAILABLE;
  if (e == EMFILE || e == ENFILE || e == ENOMEM) {
    code = CT_RESOURCE_EXHAUSTED;
    advice = e == ENOMEM ? "free some memory" : "raise the limit on open files (ulimit -n)";
  } else if (e == ELOOP) {
    code = CT_INVALID_ARGUMENT;
    advice = "its symbolic links lead in a circle; point them at the file";
  } else if (e == ENAMETOOLONG) {
    code = CT_INVALID_ARGUMENT;
    advice = "give a shorter path";
  } else if (e == EACCES || e == EPERM) {
    advice = "check its permissions";
  }
  ct_status_set(status, code, "cannot open %s '%s': %s; %s", role->what, path, strerror(e), advice);
}

int ct_file_open_read(const char *path, const ct_file_role *role, struct stat *st,
                      ct_status *status) {
  /* O_NONBLOCK: opening a FIFO without a writer, or some devices, would
   * wait forever; the check below refuses them before any read. */
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    open_failed(path, role, errno, status);
    return -1;
  }
  struct stat own;
  if (st == NULL) st = &own;
  if (fstat(fd, st) != 0) {
    const int e = errno;
    close(fd);
    open_failed(path, role, e, status);
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    ct_status_set(status, CT_INVALID_ARGUMENT, "%s '%s' is %s, not a regular file; %s", role->what,
                  path, ct_file_kind(st->st_mode), role->fix);
    return -1;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int e = errno;
    close(fd);
    open_failed(path, role, e, status);
    return -1;
  }
  return fd;
}

FILE *ct_file_fopen_read(const char *path, const ct_file_role *role, ct_status *status) {
  const int fd = ct_file_open_read(path, role, NULL, status);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) {
    const int e = errno;
    close(fd);
    open_failed(path, role, e, status);
  }
  return f;
}

/* Reads up to size bytes from fd into data: how many, fewer when the file
 * shrank while being read (the caller's checks of its contents see that),
 * or -1 with errno set. */
static ssize_t read_up_to(int fd, unsigned char *data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const size_t chunk = size - done > (1u << 30) ? (1u << 30) : size - done;
    const ssize_t got = read(fd, data + done, chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += (size_t)got;
  }
  return (ssize_t)done;
}

unsigned char *ct_file_read_all(const char *path, const ct_file_role *role, size_t *size,
                                ct_status *status) {
  *size = 0;
  struct stat st;
  const int fd = ct_file_open_read(path, role, &st, status);
  if (fd < 0) return NULL;
  const size_t n = (size_t)st.st_size;
  unsigned char *data = malloc(n + 1);
  ssize_t got;
  if (data == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "out of host memory reading the %zu bytes of %s '%s'", n, role->what, path);
  } else if ((got = read_up_to(fd, data, n)) < 0) {
    ct_status_set(status, CT_UNAVAILABLE, "cannot read %s '%s': %s", role->what, path,
                  strerror(errno));
    free(data);
    data = NULL;
  } else {
    data[got] = '\0';
    *size = (size_t)got;
  }
  close(fd);
  return data;
}

/* ---- writing ------------------------------------------------------------------------- */

/* `link`'s target, read relative to the folder `link` is in. */
static char *follow(const char *link, ct_status *status) {
  char target[4096];
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 0) {
    ct_status_set(status, CT_UNAVAILABLE, "cannot read the symbolic link '%s': %s", link,
                  strerror(errno));
    return NULL;
  }
  target[n] = '\0';
  const char *slash = strrchr(link, '/');
  const size_t dir_len = target[0] == '/' || slash == NULL ? 0 : (size_t)(slash - link) + 1;
  char *next = malloc(dir_len + (size_t)n + 1);
  if (next == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory resolving '%s'", link);
    return NULL;
  }
  memcpy(next, link, dir_len);
  memcpy(next + dir_len, target, (size_t)n + 1);
  return next;
}

char *ct_file_target(const char *path, const ct_file_role *role, mode_t *mode, ct_status *status) {
  *mode = 0;
  char *current = strdup(path);
  if (current == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory resolving '%s'", path);
    return NULL;
  }
  for (int links = 0; links <= MAX_LINKS; ++links) {
    struct stat st;
    if (lstat(current, &st) != 0) {
      if (errno == ENOENT) return current; /* a new file (or a link to one not written yet) */
      const int followed = strcmp(current, path) != 0; /* name the link's target too */
      ct_status_set(status, CT_UNAVAILABLE, "cannot write %s '%s': %s%s%s%s; %s", role->what, path,
                    followed ? "'" : "", followed ? current : "", followed ? "': " : "",
                    strerror(errno), role->fix);
      break;
    }
    if (S_ISREG(st.st_mode)) {
      *mode = st.st_mode & 07777;
      return current;
    }
    if (!S_ISLNK(st.st_mode)) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "cannot write %s '%s': '%s' is %s, not a regular file; %s", role->what, path,
                    current, ct_file_kind(st.st_mode), role->fix);
      break;
    }
    char *next = follow(current, status);
    free(current);
    if ((current = next) == NULL) return NULL;
  }
  if (status->code == CT_OK)
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cannot write %s '%s': more than %d symbolic links lead from it; %s", role->what,
                  path, MAX_LINKS, role->fix);
  free(current);
  return NULL;
}

int ct_file_temporary_template(const char *target, char *out, size_t size) {
  char dir[4096];
  const char *base = ct_file_split_path(target, dir, sizeof dir);
  const int n = snprintf(out, size, "%s/.%s.tmp-XXXXXX", dir, base);
  return n < 0 || (size_t)n >= size;
}

int ct_file_is_temporary_of(const char *name, const char *base) {
  const size_t len = strlen(base);
  return name[0] == '.' && strncmp(name + 1, base, len) == 0 &&
         strncmp(name + 1 + len, ".tmp-", 5) == 0 && strlen(name + 1 + len + 5) == 6;
}

/* Sets UNAVAILABLE: "cannot write <what> '<path>' (<doing>: <strerror>); ...". */
static void write_failed(const ct_file_writer *w, const char *doing, ct_status *status) {
  ct_status_set(status, CT_UNAVAILABLE,
                "cannot write %s '%s' (%s: %s); check that the folder is writable and the disk "
                "has space",
                w->role->what, w->path, doing, strerror(errno));
}

static void writer_free(ct_file_writer *w) {
  free(w->path);
  free(w->target);
  w->path = w->target = NULL;
  w->temp[0] = '\0';
}

int ct_file_writer_open(ct_file_writer *w, const char *path, const ct_file_role *role,
                        ct_status *status) {
  memset(w, 0, sizeof *w);
  w->fd = -1;
  w->role = role;
  if ((w->path = strdup(path)) == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory writing '%s'", path);
    return 1;
  }
  if ((w->target = ct_file_target(path, role, &w->mode, status)) == NULL) {
    writer_free(w);
    return 1;
  }
  if (w->mode == 0) w->mode = 0644;
  char dir[4096];
  ct_file_split_path(w->target, dir, sizeof dir);
  const char *doing = NULL;
  if (ct_file_temporary_template(w->target, w->temp, sizeof w->temp)) {
    errno = ENAMETOOLONG;
    doing = "naming a temporary file";
  } else if (ct_make_dirs(dir) != 0) {
    doing = "creating its folder";
  } else if ((w->fd = mkstemp(w->temp)) < 0) {
    doing = "creating a temporary file";
  }
  if (doing != NULL) {
    write_failed(w, doing, status);
    writer_free(w);
    return 1;
  }
  return 0;
}

int ct_file_writer_write(ct_file_writer *w, const void *data, size_t size, ct_status *status) {
  const char *p = data;
  while (size > 0) {
    const ssize_t n = write(w->fd, p, size > (1u << 30) ? (1u << 30) : size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      write_failed(w, "writing", status);
      return 1;
    }
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

void ct_file_writer_discard(ct_file_writer *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  if (w->temp[0]) unlink(w->temp);
  writer_free(w);
}

int ct_file_writer_commit(ct_file_writer *w, ct_status *status) {
  const char *doing = NULL;
  if (fchmod(w->fd, w->mode) != 0) doing = "setting permissions";
  if (!doing && fsync(w->fd) != 0) doing = "flushing to disk";
  if (close(w->fd) != 0 && !doing) doing = "closing";
  w->fd = -1;
  if (!doing && rename(w->temp, w->target) != 0) doing = "renaming the temporary file over it";
  if (doing) {
    write_failed(w, doing, status);
    ct_file_writer_discard(w);
    return 1;
  }
  char dir[4096];
  ct_file_split_path(w->target, dir, sizeof dir);
  const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd); /* best effort: some file systems refuse to sync folders */
    close(dfd);
  }
  writer_free(w);
  return 0;
}

FILE *ct_file_create_new(const char *path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "wb");
  if (f == NULL) {
    const int e = errno;
    close(fd);
    errno = e;
  }
  return f;
}

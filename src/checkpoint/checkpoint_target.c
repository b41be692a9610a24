/* Who may write a checkpoint: the lock that keeps two runs from writing
 * one, beside the file its path leads to (core/files.h), and the temporary
 * files an interrupted write left there. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "ctower/checkpoint.h"
#include "checkpoint/checkpoint_internal.h"

struct ct_checkpoint_lock {
  int fd;
  char *lock_path;
};

/* Removes the temporary files an interrupted write of `target` left; the
 * caller holds its lock, so none of them is being written. */
static int remove_temporaries(const char *target) {
  char dir[4096];
  const char *base = ct_file_split_path(target, dir, sizeof dir);
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  int removed = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (!ct_file_is_temporary_of(e->d_name, base)) continue;
    char stale[8192];
    snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
    removed += unlink(stale) == 0;
  }
  closedir(d);
  return removed;
}

/* The pid a lock file names, or 0. */
static long lock_holder(int fd) {
  char text[32] = "";
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  text[n] = '\0';
  return strtol(text, NULL, 10);
}

/* Opens (creating it) the lock file at lock_path: never through a symbolic
 * link, and only a regular file, so that the pid written into it lands in
 * ctower's own file. Returns the descriptor, or -1 with status set. */
static int open_lock_file(const char *path, const char *lock_path, ct_status *status) {
  const int fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat st;
  const char *kind = NULL;
  if (fd < 0 && errno == ELOOP)
    kind = "a symbolic link";
  else if (fd < 0 && errno == EISDIR)
    kind = "a directory";
  else if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
    kind = ct_file_kind(st.st_mode);
  if (kind != NULL) {
    ct_status_set(status, CT_INVALID_ARGUMENT,
                  "cannot lock checkpoint '%s': '%s' is %s, not ctower's lock file; remove it "
                  "(ctower creates it while a run writes the checkpoint)",
                  path, lock_path, kind);
  } else if (fd < 0) {
    ct_status_set(status, CT_UNAVAILABLE, "cannot lock checkpoint '%s' ('%s': %s)", path, lock_path,
                  strerror(errno));
  }
  if (kind != NULL && fd >= 0) close(fd);
  return kind != NULL ? -1 : fd;
}

ct_checkpoint_lock *ct_checkpoint_lock_acquire(const char *path, int *removed_temporaries,
                                               ct_status *status) {
  *removed_temporaries = 0;
  mode_t mode;
  char *target = ct_file_target(path, &ct_checkpoint_role, &mode, status);
  if (target == NULL) return NULL;
  ct_checkpoint_lock *lock = calloc(1, sizeof *lock);
  const size_t len = strlen(target) + 8;
  char *lock_path = lock ? malloc(len) : NULL;
  if (lock_path == NULL) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED, "out of host memory locking '%s'", path);
    free(lock), free(target);
    return NULL;
  }
  snprintf(lock_path, len, "%s.lock", target);
  lock->lock_path = lock_path;
  lock->fd = -1;
  /* A run that ends unlinks its lock file: what we lock must still be the
   * file at lock_path, else another run's unlink raced us; try again. */
  for (int tries = 0; tries < 100 && lock->fd < 0; ++tries) {
    char dir[4096];
    ct_file_split_path(target, dir, sizeof dir);
    if (ct_make_dirs(dir) != 0) {
      ct_status_set(status, CT_UNAVAILABLE,
                    "cannot write checkpoint '%s': cannot create folder '%s' (%s); check the "
                    "path and permissions",
                    path, dir, strerror(errno));
      break;
    }
    const int fd = open_lock_file(path, lock_path, status);
    if (fd < 0) break;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char who[48] = "another run";
      const long holder = lock_holder(fd);
      if (holder > 0) snprintf(who, sizeof who, "another run (pid %ld)", holder);
      close(fd);
      ct_status_set(status, CT_FAILED_PRECONDITION,
                    "%s is writing checkpoint '%s' (it holds '%s'); wait for it to end, or "
                    "give this run another train.checkpoint",
                    who, path, lock_path);
      break;
    }
    struct stat held, now;
    if (fstat(fd, &held) == 0 && lstat(lock_path, &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      lock->fd = fd;
    } else {
      close(fd);
    }
  }
  if (lock->fd < 0) {
    if (status->code == CT_OK)
      ct_status_set(status, CT_UNAVAILABLE, "cannot lock checkpoint '%s' ('%s')", path, lock_path);
    free(lock_path), free(lock), free(target);
    return NULL;
  }
  char pid[32];
  const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(lock->fd, 0) == 0 && pwrite(lock->fd, pid, (size_t)n, 0) != n) {
    /* the pid is only for the message another run prints: not worth failing */
  }
  *removed_temporaries = remove_temporaries(target);
  free(target);
  return lock;
}

void ct_checkpoint_lock_release(ct_checkpoint_lock *lock) {
  if (lock == NULL) return;
  unlink(lock->lock_path); /* while still holding it: see the retry above */
  close(lock->fd);
  free(lock->lock_path);
  free(lock);
}

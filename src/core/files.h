/* Files and folders on the file system, as every part of ctower opens them.
 *
 * Reading: a path is opened without blocking (O_NONBLOCK) and checked with
 * fstat to be a regular file before a byte is read, so that a FIFO or a
 * device given by mistake is an error naming it, never a hang.
 *
 * Writing: a file is written whole into a new temporary beside the file it
 * replaces (mkstemp: O_EXCL, so never through a link or into a FIFO someone
 * left there) and renamed over it, so that a reader sees the old file or
 * the new one, never part of one. A path that is a symbolic link is
 * followed on purpose: the file the link leads to is replaced and the link
 * stays. A folder, a device or a FIFO at the path is refused: a rename
 * would replace it (as root, `--trace /dev/null` would replace /dev/null).
 * Files that grow while a reader watches them (TensorBoard's event files)
 * are created new instead, with O_EXCL, for the same reasons. */
#ifndef CTOWER_CORE_FILES_H
#define CTOWER_CORE_FILES_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ctower/status.h"

/* What a file is to the user, for the messages of the calls below:
 * "<what> '<path>' is a FIFO, not a regular file; <fix>". */
typedef struct ct_file_role {
  const char *what; /* "config file", "checkpoint", "trace" */
  const char *fix;  /* what to do when it is missing or not a file: "check dataset.path" */
} ct_file_role;

/* mkdir -p: creates dir and the folders above it that are missing (mode
 * 0777 before the umask). Returns 0 when dir is a folder at the end, else
 * 1 with errno saying why (ENOTDIR when a file is in the way). */
int ct_make_dirs(const char *dir);

/* "a regular file", "a directory", "a FIFO", "a character device", "a
 * block device", "a socket", "a symbolic link", else "not a regular file". */
const char *ct_file_kind(mode_t mode);

/* The folder of path into dir ("." for a bare name, "/" for one in the
 * root); returns where its file name starts in path. */
const char *ct_file_split_path(const char *path, char *dir, size_t dir_size);

/* Whether anything is at path, a dangling or looping symbolic link
 * included (lstat): lets a caller choose among candidate names and leave
 * saying what is wrong with the one chosen to the open. */
int ct_file_present(const char *path);

/* ---- reading ------------------------------------------------------------------------- */

/* Opens path for reading: the descriptor (blocking, close-on-exec) of a
 * regular file, its stat in *st when st is not NULL. Else -1, nothing left
 * open, and status:
 *   NOT_FOUND           "<what> '<path>' not found: <strerror>; <fix>"
 *   INVALID_ARGUMENT    "<what> '<path>' is a FIFO, not a regular file; <fix>",
 *                       and a loop of symbolic links or a path too long
 *   RESOURCE_EXHAUSTED  too many open files, out of memory
 *   UNAVAILABLE         anything else ("cannot open <what> '<path>': <strerror>; ..."). */
int ct_file_open_read(const char *path, const ct_file_role *role, struct stat *st,
                      ct_status *status);
/* The same as a stdio stream ("rb"); NULL with status set. */
FILE *ct_file_fopen_read(const char *path, const ct_file_role *role, ct_status *status);
/* The whole of a regular file, with a NUL byte after its *size bytes (for
 * text; fewer than its size when it shrank while being read); the caller
 * frees it. NULL with status set as ct_file_open_read
 * does, or UNAVAILABLE when reading fails, RESOURCE_EXHAUSTED without the
 * memory. */
unsigned char *ct_file_read_all(const char *path, const ct_file_role *role, size_t *size,
                                ct_status *status);

/* ---- writing ------------------------------------------------------------------------- */

/* The file a write of `path` replaces: path itself, or the file its
 * symbolic links lead to (a write replaces the target, never the link);
 * *mode is that file's permissions, which the new one keeps, or 0 when
 * there is none yet. NULL and status (INVALID_ARGUMENT) when it is not a
 * regular file (a folder, a device, a FIFO) or too many links lead on;
 * the caller frees the path. */
char *ct_file_target(const char *path, const ct_file_role *role, mode_t *mode, ct_status *status);

/* mkstemp's template for a temporary file beside target:
 * "<folder>/.<name>.tmp-XXXXXX". Returns 0, or 1 when it does not fit. */
int ct_file_temporary_template(const char *target, char *out, size_t size);
/* Whether a folder entry `name` is a temporary of the file named `base`
 * (as ct_file_temporary_template names them). */
int ct_file_is_temporary_of(const char *name, const char *base);

/* A file being written: a temporary beside its target, renamed over the
 * target by ct_file_writer_commit. */
typedef struct ct_file_writer {
  int fd;                   /* the temporary, open for writing; -1 once closed */
  char *path;               /* the path asked for, for messages */
  char *target;             /* the file replaced: path with its links followed */
  char temp[4200];          /* the temporary's name, beside target */
  mode_t mode;              /* the permissions the file gets */
  const ct_file_role *role; /* for messages */
} ct_file_writer;

/* Creates the temporary for a write of path (and the folders above the
 * target that are missing). Returns 0, or 1 with status set and nothing
 * created: INVALID_ARGUMENT for what ct_file_target refuses, UNAVAILABLE
 * when the folder or the temporary cannot be created. */
int ct_file_writer_open(ct_file_writer *w, const char *path, const ct_file_role *role,
                        ct_status *status);
/* Appends size bytes to the temporary. Returns 0, or 1 with status set
 * (UNAVAILABLE; the disk is full, say); the caller then discards. */
int ct_file_writer_write(ct_file_writer *w, const void *data, size_t size, ct_status *status);
/* Gives the temporary the target's permissions, flushes it to disk and
 * renames it over the target. Returns 0, or 1 with status set, the
 * temporary removed and the target as it was. Frees what w holds either
 * way. */
int ct_file_writer_commit(ct_file_writer *w, ct_status *status);
/* Removes the temporary and frees what w holds; the target is as it was. */
void ct_file_writer_discard(ct_file_writer *w);

/* Creates path, which must not exist, for writing ("wb"): O_EXCL, so a
 * link or a FIFO already there is never opened. NULL with errno set
 * (EEXIST when something is there). */
FILE *ct_file_create_new(const char *path);

#endif

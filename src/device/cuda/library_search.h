/* Where the CUDA libraries that ctower loads at run time (cuBLAS, cuDNN,
 * NCCL: cuda_libraries.c) are looked for, in this order:
 *   1. the folders the user names in CTOWER_CUDA_LIBRARY_PATH (':' between);
 *   2. the system's library path, as dlopen searches it for a bare file
 *      name (LD_LIBRARY_PATH, the ld.so cache, /lib and /usr/lib);
 *   3. the CUDA toolkits under /usr/local: cuda/, then cuda-X.Y/ newest
 *      first, each in lib64/, lib/ and targets/x86_64-linux/lib/;
 *   4. the NVIDIA wheels of Python environments (the nvidia-cublas,
 *      nvidia-cudnn-cu13, nvidia-nccl-cu13 ... packages PyTorch installs),
 *      site-packages/nvidia/<package>/lib/: those of $VIRTUAL_ENV,
 *      $CONDA_PREFIX, every PATH folder that holds a python3 (its
 *      environment is the folder above), ~/.local, /usr/local and /usr.
 * A machine that has PyTorch with CUDA thus needs no other copy of the
 * libraries. */
#ifndef CTOWER_LIBRARY_SEARCH_H
#define CTOWER_LIBRARY_SEARCH_H

#include <stddef.h>

/* The places of the search, as the environment gives them. Each field may
 * be NULL (nothing there). */
typedef struct ct_library_places {
  const char *named;      /* folders separated by ':' (CTOWER_CUDA_LIBRARY_PATH) */
  int system;             /* 1: try the system's library path (step 2) */
  const char *cuda_root;  /* the folder of the toolkits (/usr/local) */
  const char *path;       /* folders separated by ':' where python3 is looked for (PATH) */
  const char *python_prefixes; /* environments separated by ':' ($VIRTUAL_ENV, $CONDA_PREFIX,
                                  ~/.local, /usr/local, /usr) */
} ct_library_places;

/* The places this process's environment gives; the strings live in
 * `storage` (of `size` bytes), which must outlive *places. */
void ct_library_places_from_environment(ct_library_places *places, char *storage, size_t size);

/* Calls visit(candidate, context) for each file the search tries, in order,
 * until visit returns nonzero: a full path for a file found in a folder, or
 * `file` alone for the system's library path. Candidates of steps 1 and 2
 * are offered whether or not they exist (dlopen says why not); those of
 * steps 3 and 4 only when the file is there. Returns visit's nonzero
 * value, or 0 when every candidate was refused. */
int ct_library_search(const char *file, const ct_library_places *places,
                      int (*visit)(const char *candidate, void *context), void *context);

/* A one-sentence list of the places searched for `file`, for messages:
 * "CTOWER_CUDA_LIBRARY_PATH (unset), the system's library path, /usr/local/cuda*
 * and the nvidia/ wheels of the Python environments /opt/venv, /usr". */
void ct_library_places_describe(const ct_library_places *places, char *text, size_t size);

/* dlopen()s `file` from the first candidate that loads (RTLD_NOW,
 * RTLD_LOCAL) and returns its handle, with the path it was loaded from in
 * `path` (the ld.so cache's when found through the system's path); NULL
 * when none loads, with `error` saying what each step found and where the
 * search looked. */
void *ct_library_open(const char *file, const ct_library_places *places, char *path,
                      size_t path_size, char *error, size_t error_size);

#endif

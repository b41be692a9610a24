/* Calls into a model library's code (model_library.c), guarded, and reads
 * of its memory that cannot crash. */
#ifndef CTOWER_MODELS_PLUGIN_CALL_H
#define CTOWER_MODELS_PLUGIN_CALL_H

#include <stddef.h>

/* From here to ct_plugin_call_end, a crash (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGABRT) prints "ctower: error: model library LIBRARY crashed
 * with SIGNAL in WHAT" and ends the process by that signal, and an exit()
 * prints that the library exited the process in WHAT and ends it with
 * status 1. Calls do not nest. */
void ct_plugin_call_begin(const char *library, const char *what);
void ct_plugin_call_end(void);

/* Copies n bytes at p into out; 1 when all of them could be read, else 0
 * (never faults: an address that is not mapped is reported, not read). */
int ct_plugin_copy(const void *p, void *out, size_t n);

/* Whether p is a readable NUL-terminated string of at most max_length
 * characters (never faults); its first `size` - 1 characters and a NUL
 * into out where out is not NULL. */
int ct_plugin_copy_string(const char *p, size_t max_length, char *out, size_t size);

/* The shared object holding the code or data at p, or NULL where none
 * does: a loaded library's path ("" for the main program). */
const char *ct_plugin_object_of(const void *p);

#endif

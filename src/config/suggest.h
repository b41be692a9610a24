/* "Did you mean ...?" for unknown keys (src/config), commands and options (src/cli). */
#ifndef CTOWER_CONFIG_SUGGEST_H
#define CTOWER_CONFIG_SUGGEST_H

#include <stddef.h>

/* Edit distance between a and b: insertions, deletions, substitutions and
 * swaps of two neighbouring characters each count one. */
size_t ct_edit_distance(const char *a, const char *b);

/* The index of the name in names[0..n) closest to word, or -1 when none is
 * close enough to be a likely typo (or word is one of them exactly: the
 * caller knows it then). Ties go to the earlier name. */
int ct_closest_name(const char *word, const char *const *names, size_t n);

#endif

#include "config/suggest.h"

#include <stdlib.h>
#include <string.h>

size_t ct_edit_distance(const char *a, const char *b) {
  const size_t n = strlen(a), m = strlen(b);
  /* Three rolling rows of the optimal-string-alignment table. */
  size_t *rows = malloc(3 * (m + 1) * sizeof *rows);
  if (rows == NULL) return (size_t)-1;
  size_t *before = rows, *prev = rows + (m + 1), *cur = rows + 2 * (m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t best = prev[j - 1] + cost;
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          before[j - 2] + 1 < best)
        best = before[j - 2] + 1;
      cur[j] = best;
    }
    size_t *t = before;
    before = prev;
    prev = cur;
    cur = t;
  }
  size_t d = prev[m];
  free(rows);
  return d;
}

int ct_closest_name(const char *word, const char *const *names, size_t n) {
  const size_t len = strlen(word);
  size_t limit = 1 + len / 4; /* "optimzer" -> 3 edits at most */
  if (limit > 3) limit = 3;
  int best = -1;
  size_t best_d = limit + 1;
  for (size_t i = 0; i < n; ++i) {
    size_t d = ct_edit_distance(word, names[i]);
    if (d == 0) return -1;
    if (d < best_d && d < strlen(names[i])) {
      best = (int)i;
      best_d = d;
    }
  }
  return best;
}

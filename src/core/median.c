#include "core/median.h"

/* Moves the k-th smallest of v[0..n) to v[k], with no larger value before
 * it and no smaller one after (Hoare's selection). */
static void select_kth(double *v, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const double pivot = v[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot) ++i;
      while (v[j] > pivot) --j;
      if (i <= j) {
        const double t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return; /* v[j+1..i-1] all equal the pivot */
  }
}

double ct_median(double *values, int n) {
  const int upper = n / 2;
  select_kth(values, n, upper);
  if (n % 2) return values[upper];
  double lower = values[0]; /* the largest of those before values[upper] */
  for (int i = 1; i < upper; ++i)
    if (values[i] > lower) lower = values[i];
  return 0.5 * (lower + values[upper]);
}

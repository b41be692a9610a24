/* The median of timings, found by selection: linear time on average, where
 * sorting takes n log n (`ctower bench` takes the median of every step so
 * far each time it prints a row). */
#ifndef CTOWER_CORE_MEDIAN_H
#define CTOWER_CORE_MEDIAN_H

/* The median of values[0..n), n >= 1: the middle value, or the mean of the
 * two middle ones when n is even. Reorders values. NaN is not allowed. */
double ct_median(double *values, int n);

#endif

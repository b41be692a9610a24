/* The values of TensorFlow's summary ops, packed: each function returns a
 * serialized Summary (src/observe/proto/summary.proto) holding one kind of
 * value, as TensorFlow's ScalarSummary, HistogramSummary and ImageSummary
 * kernels make it. Serialized Summaries concatenated are one Summary of all
 * their values (protobuf's rule for repeated fields), which is how
 * tf.summary.merge joins them; ct_summary_write_summary writes one. */
#ifndef CTOWER_OBSERVE_SUMMARY_VALUES_H
#define CTOWER_OBSERVE_SUMMARY_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "ctower/status.h"

/* Each returns 0 and sets *bytes (the caller frees it) and *size, or
 * returns 1 with *bytes NULL and the status set. */

/* `value` under `tag`, stored as a float (simple_value). */
int ct_summary_pack_scalar(const char *tag, double value, uint8_t **bytes, size_t *size,
                           ct_status *status);

/* The n values' histogram under `tag`: their min, max, count, sum and sum
 * of squares, and their counts in TensorFlow's default buckets (limits
 * growing by 10% from 1e-12 to 1e20, both signs, 0 and +-DBL_MAX), a run
 * of empty buckets written as one. A NaN or an infinity is
 * INVALID_ARGUMENT "Nan in summary histogram for: <tag>", as TensorFlow
 * has it. */
int ct_summary_pack_histogram(const char *tag, const double *values, int64_t n, uint8_t **bytes,
                              size_t *size, ct_status *status);

/* n images of height x width x channels bytes each (channels 1, 3 or 4:
 * gray, RGB, RGBA), row by row in `pixels`, each encoded as PNG under
 * tags[i]. INVALID_ARGUMENT for another channel count or an empty image. */
int ct_summary_pack_images(const char *const *tags, const uint8_t *pixels, int n, int height,
                           int width, int channels, uint8_t **bytes, size_t *size,
                           ct_status *status);

#endif

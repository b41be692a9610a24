/* The FLOPs rules (ct_op_def.flops) that many ops share. `ctower plan`
 * adds up each op's per device. */
#ifndef CTOWER_OPS_OP_COST_H
#define CTOWER_OPS_OP_COST_H

#include "graph/op_def.h"

/* Ops that only move or view data (Reshape, Identity, copies, Concat): 0. */
double ct_flops_none(const ct_attrs *attrs, int n_inputs, const ct_shape *in_shapes, int n_outputs,
                     const ct_shape *out_shapes);
/* One per element of the largest input or output: elementwise ops, and
 * reductions (one per input element). */
double ct_flops_per_element(const ct_attrs *attrs, int n_inputs, const ct_shape *in_shapes,
                            int n_outputs, const ct_shape *out_shapes);

/* Defines `name`, the FLOPs rule of an op that does `k` operations per
 * element of its largest input or output. */
#define CT_FLOPS_PER_ELEMENT_TIMES(name, k)                                                 \
  static double name(const ct_attrs *attrs, int n_inputs, const ct_shape *in_shapes,        \
                     int n_outputs, const ct_shape *out_shapes) {                           \
    (void)attrs;                                                                            \
    return (k) * ct_op_largest_elements(n_inputs, in_shapes, n_outputs, out_shapes);        \
  }

/* The element count of the largest input or output. */
double ct_op_largest_elements(int n_inputs, const ct_shape *in_shapes, int n_outputs,
                              const ct_shape *out_shapes);
/* The element count of s (0 while a dim is unknown). */
double ct_shape_elements_or_zero(const ct_shape *s);

#endif

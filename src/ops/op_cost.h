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

/* The element count of the largest input or output, for ops that do a few
 * operations per element. */
double ct_op_largest_elements(int n_inputs, const ct_shape *in_shapes, int n_outputs,
                              const ct_shape *out_shapes);
/* The element count of s (0 while a dim is unknown). */
double ct_shape_elements_or_zero(const ct_shape *s);

#endif

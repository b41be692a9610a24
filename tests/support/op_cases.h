/* The op cases the gradient check and the GPU test share: each builds one
 * op (or a short chain) from placeholders x[0..n_inputs-1] with inputs of
 * fixed shapes and values of a chosen kind. Every differentiable op has at
 * least one case (tests/ops/test_op_registry.c checks it); each unary math
 * op (src/ops/unary_math.h) has one from its row, and each binary math op
 * (src/ops/binary_math.h) two. */
#ifndef CTOWER_OP_CASES_H
#define CTOWER_OP_CASES_H

#include "test_support.h"

enum { CT_CASE_MAX_INPUTS = 4 };

typedef enum {
  VALUES_UNIFORM,        /* U(-1, 1) */
  VALUES_AWAY_FROM_ZERO, /* |v| >= 0.2: no kink of ReLU within a finite difference */
  VALUES_DISTINCT,       /* no two values within 0.05: a unique max per pooling window */
  VALUES_POSITIVE,       /* >= 0.5: safe divisors */
  VALUES_OFF_GRID        /* none within 0.1 of a multiple of 0.5: off the steps of Floor,
                            Ceil and Round */
} value_kind;

typedef struct op_case {
  const char *name;
  int n_inputs;
  ct_shape shapes[CT_CASE_MAX_INPUTS];
  value_kind values;
  ct_output (*build)(ct_graph *g, const ct_output *x);
} op_case;

/* The table, filled on first call. */
const op_case *ct_op_cases(int *n_cases);
/* Input values of the given kind, deterministic in seed. */
void ct_op_case_fill(float *v, int64_t n, value_kind kind, uint64_t seed);

/* A case built into a graph: placeholders x[i] and the feeds of their
 * values, the op's output y, and the loss sum(y * R) for a fixed random R. */
typedef struct op_case_graph {
  ct_output x[CT_CASE_MAX_INPUTS];
  ct_tensor *values[CT_CASE_MAX_INPUTS];
  ct_feed feeds[CT_CASE_MAX_INPUTS];
  ct_output y, loss;
} op_case_graph;
/* Builds case c into g (under whatever device scope is open). */
void ct_op_case_build(const op_case *c, ct_graph *g, op_case_graph *out);
void ct_op_case_graph_free(op_case_graph *built, int n_inputs);

#endif

/* Every op of the op list (src/ops/op_list.h) has what the kernels, the
 * plan's cost model and the op cases promise: a shape rule, a FLOPs rule
 * (ct_flops_none counts as one), a CPU kernel, a GPU kernel in a CUDA build,
 * a scratch rule for each of its kernels (ct_kernel_no_scratch counts as
 * one), and a gradient check. A differentiable op is checked when an op
 * case (tests/support/op_cases.c) builds it; a backward-only op when the
 * gradient of an op case builds it, as test_gradients computes it. An op
 * that lacks one of these is listed in `exemptions`, with the reason. */
#include <stdio.h>
#include <string.h>

#include "kernels/kernel.h"
#include "op_cases.h"
#include "ops/op_list.h"

typedef enum {
  SHAPE_RULE,
  FLOPS_RULE,
  CPU_KERNEL,
  GPU_KERNEL,
  SCRATCH_RULES,
  GRADIENT_CHECK
} requirement;
static const char *const requirement_names[] = {"a shape rule",
                                                "a FLOPs rule",
                                                "a CPU kernel",
                                                "a GPU kernel",
                                                "a scratch rule for each kernel",
                                                "a gradient check"};

typedef struct exemption {
  const char *op;
  requirement waived;
  const char *reason;
} exemption;

static const exemption exemptions[] = {
    {"NoOp", SHAPE_RULE, "it has no outputs"},
    {"NoOp", CPU_KERNEL, "it has no outputs: the executor runs no kernel for it"},
    {"NoOp", GPU_KERNEL, "it has no outputs: the executor runs no kernel for it"},
    {"NoOp", GRADIENT_CHECK, "it has no outputs"},
    {"ReshapeLike", GRADIENT_CHECK,
     "only Reshape's gradient builds it (no builder of its own); the Reshape case runs it"},
    {"Placeholder", GRADIENT_CHECK, "a source: its value is fed"},
    {"Const", GRADIENT_CHECK, "a source: its value is fixed"},
    {"Variable", GRADIENT_CHECK, "a source: gradients stop at variables"},
    {"ZerosLike", GRADIENT_CHECK, "its output does not depend on its input's values"},
    {"OnesLike", GRADIENT_CHECK, "its output does not depend on its input's values"},
    {"ArgMax", GRADIENT_CHECK, "its output is an integer index"},
    {"StopGradient", GRADIENT_CHECK,
     "its gradient is zero by definition, not its numerical one (test_gradients checks it)"},
    {"Accuracy", GRADIENT_CHECK, "a metric: it counts integer matches"},
    {"Equal", GRADIENT_CHECK, "its output is a comparison's 0 or 1"},
#define COMPARE_EXEMPTION(P, Name, function, op) \
  {#Name, GRADIENT_CHECK, "its output is a comparison's 0 or 1"},
    CT_COMPARE(COMPARE_EXEMPTION, _)
#undef COMPARE_EXEMPTION
    {"Cast", GRADIENT_CHECK, "a conversion between dtypes, of which only f32 is differentiable"},
    {"ApplyGradientDescent", GRADIENT_CHECK, "an optimizer update (tests/kernels checks it)"},
    {"ApplyMomentum", GRADIENT_CHECK, "an optimizer update (tests/kernels checks it)"},
    {"ApplyAdam", GRADIENT_CHECK, "an optimizer update (tests/kernels checks it)"},
    {"Assign", GRADIENT_CHECK, "it writes a variable (tests/kernels checks it)"},
    {"AssignMovingAvg", GRADIENT_CHECK, "a variable update (tests/kernels checks it)"},
    {"CompressGradient", GRADIENT_CHECK,
     "it carries gradients after the backward pass (tests/kernels/test_compress.c checks it "
     "against a naive loop)"},
    {"DecompressGradient", GRADIENT_CHECK,
     "it carries gradients after the backward pass (tests/kernels/test_compress.c checks it "
     "against a naive loop)"},
    {"CompressedAllReduce", GRADIENT_CHECK,
     "it carries gradients after the backward pass between ranks (tests/kernels and "
     "tests/mpi/compression.sh check it)"},
    {"CompressedAllReduce", GPU_KERNEL,
     "the ranks meet in host memory over MPI: a GPU packs and unpacks (CompressGradient, "
     "DecompressGradient), and only the packed bytes cross to the host"},
};
enum { N_EXEMPTIONS = sizeof exemptions / sizeof exemptions[0] };

static const ct_op_def *const all_ops[] = {CT_OP_LIST(CT_OP_ADDRESS)};
enum { N_OPS = sizeof all_ops / sizeof all_ops[0] };

static int op_index(const ct_op_def *op) {
  for (int k = 0; k < N_OPS; ++k)
    if (all_ops[k] == op) return k;
  return -1;
}

static const exemption *exemption_of(const ct_op_def *op, requirement r) {
  for (int e = 0; e < N_EXEMPTIONS; ++e)
    if (exemptions[e].waived == r && strcmp(exemptions[e].op, op->name) == 0) return &exemptions[e];
  return NULL;
}

/* Marks the op of every node from `first` on. */
static void mark_ops(const ct_graph *g, int first, int *marked) {
  for (int i = first; i < g->n_nodes; ++i) {
    int k = op_index(g->nodes[i]->op);
    assert_true(k >= 0);
    marked[k] = 1;
  }
}

/* built[k]: an op case builds op k; in_gradient[k]: the gradient of an op
 * case's loss builds op k. */
static void find_checked_ops(int *built, int *in_gradient) {
  int n_cases = 0;
  const op_case *cases = ct_op_cases(&n_cases);
  for (int c = 0; c < n_cases; ++c) {
    ct_graph *g = ct_graph_new();
    ct_output x[CT_CASE_MAX_INPUTS];
    for (int i = 0; i < cases[c].n_inputs; ++i)
      x[i] = ct_placeholder(g, "x", CT_F32, cases[c].shapes[i]);
    const int first = g->n_nodes;
    cases[c].build(g, x);
    assert_status_ok(ct_graph_status(g));
    mark_ops(g, first, built);
    ct_graph_free(g);

    g = ct_graph_new();
    op_case_graph case_graph;
    ct_op_case_build(&cases[c], g, &case_graph);
    const int first_backward = g->n_nodes;
    ct_output grads[CT_CASE_MAX_INPUTS];
    assert_int_equal(ct_gradients(g, case_graph.loss, cases[c].n_inputs, case_graph.x, grads), 0);
    assert_status_ok(ct_graph_status(g));
    mark_ops(g, first_backward, in_gradient);
    ct_op_case_graph_free(&case_graph, cases[c].n_inputs);
    ct_graph_free(g);
  }
}

/* Whether each kernel of op (on any device type) names its scratch rule. */
static int kernels_have_scratch_rules(const ct_op_def *op) {
  const ct_device_kind kinds[] = {CT_DEVICE_KIND_CPU, CT_DEVICE_KIND_GPU};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    const ct_kernel_def *k = ct_kernel_lookup(op->name, kinds[i]);
    if (k != NULL && k->scratch == NULL) return 0;
  }
  return 1;
}

typedef struct tally {
  int has, exempt;
} tally;

/* Counts op's requirement r as met or exempt; appends to `missing` when it
 * is neither, or when it is met but still listed as exempt. */
static void check(const ct_op_def *op, requirement r, int met, tally *t, char *missing,
                  size_t size) {
  const exemption *e = exemption_of(op, r);
  size_t used = strlen(missing);
  if (met && e)
    snprintf(missing + used, size - used, "  %s has %s but is listed as exempt (\"%s\")\n",
             op->name, requirement_names[r], e->reason);
  else if (!met && !e)
    snprintf(missing + used, size - used, "  %s lacks %s\n", op->name, requirement_names[r]);
  t->has += met;
  t->exempt += e != NULL;
}

static void test_every_op_is_complete(void **state) {
  (void)state;
  for (int e = 0; e < N_EXEMPTIONS; ++e)
    if (ct_op_find(exemptions[e].op) == NULL)
      fail_msg("the exemption of '%s' names no op", exemptions[e].op);

  int built[N_OPS] = {0}, in_gradient[N_OPS] = {0};
  find_checked_ops(built, in_gradient);
  char missing[8192] = "";
  tally shape_rules = {0, 0}, flops_rules = {0, 0}, cpu_kernels = {0, 0}, scratch_rules = {0, 0};
#ifdef CTOWER_HAVE_CUDA
  tally gpu_kernels = {0, 0};
#endif
  tally by_case = {0, 0}, by_case_gradient = {0, 0}, without_gradient = {0, 0};
  for (int k = 0; k < N_OPS; ++k) {
    const ct_op_def *op = all_ops[k];
    check(op, SHAPE_RULE, op->infer != NULL, &shape_rules, missing, sizeof missing);
    check(op, FLOPS_RULE, op->flops != NULL, &flops_rules, missing, sizeof missing);
    check(op, SCRATCH_RULES, kernels_have_scratch_rules(op), &scratch_rules, missing,
          sizeof missing);
    check(op, CPU_KERNEL, ct_kernel_find(op->name, CT_DEVICE_KIND_CPU) != NULL, &cpu_kernels,
          missing, sizeof missing);
#ifdef CTOWER_HAVE_CUDA
    check(op, GPU_KERNEL, ct_kernel_find(op->name, CT_DEVICE_KIND_GPU) != NULL, &gpu_kernels,
          missing, sizeof missing);
#endif
    if (op->grad != NULL)
      check(op, GRADIENT_CHECK, built[k], &by_case, missing, sizeof missing);
    else if (op->flags & CT_OP_NO_GRADIENT)
      check(op, GRADIENT_CHECK, 0, &without_gradient, missing, sizeof missing);
    else /* backward-only (or a source) */
      check(op, GRADIENT_CHECK, in_gradient[k], &by_case_gradient, missing, sizeof missing);
  }
  printf("%d ops: %d shape rules + %d exempt, %d FLOPs rules, %d with scratch rules, ", N_OPS,
         shape_rules.has, shape_rules.exempt, flops_rules.has, scratch_rules.has);
  printf("%d CPU kernels + %d exempt, ", cpu_kernels.has, cpu_kernels.exempt);
#ifdef CTOWER_HAVE_CUDA
  printf("%d GPU kernels + %d exempt, ", gpu_kernels.has, gpu_kernels.exempt);
#else
  printf("GPU kernels not checked (no CUDA in this build), ");
#endif
  printf(
      "gradient checks: %d built by an op case, %d built by an op case's gradient, "
      "%d exempt\n",
      by_case.has, by_case_gradient.has,
      by_case.exempt + by_case_gradient.exempt + without_gradient.exempt);
  if (missing[0] != '\0') fail_msg("incomplete ops:\n%s", missing);
}

/* Op `name` of a math table is in the op list with kernels on every
 * device type. */
static void check_listed_with_kernels(const char *name) {
  const ct_op_def *op = ct_op_find(name);
  if (op == NULL || op_index(op) < 0) fail_msg("%s is not in the op list", name);
  if (ct_kernel_find(name, CT_DEVICE_KIND_CPU) == NULL) fail_msg("%s lacks a CPU kernel", name);
#ifdef CTOWER_HAVE_CUDA
  if (ct_kernel_find(name, CT_DEVICE_KIND_GPU) == NULL) fail_msg("%s lacks a GPU kernel", name);
#endif
}

/* Each row of the unary math table (ops/unary_math.h) is an op of the
 * list with kernels on every device type, named by ct_unary_math_name, and
 * its gradient is UnaryMathGrad of that row, or none where TensorFlow
 * gives None. */
static void test_every_unary_math_row_is_an_op(void **state) {
  (void)state;
  static const struct {
    const char *name;
    const char *gradient;
  } rows[] = {
#define ROW(P, Name, function, forward, derivative, gradient, flops, domain) \
  {#Name, #gradient},
      CT_UNARY_MATH(ROW, _)
#undef ROW
  };
  assert_int_equal(sizeof rows / sizeof rows[0], CT_UNARY_MATH_COUNT);
  assert_null(ct_unary_math_name(CT_UNARY_MATH_COUNT, NULL));
  for (int k = 0; k < CT_UNARY_MATH_COUNT; ++k) {
    const char *function = NULL, *name = ct_unary_math_name(k, &function);
    assert_non_null(name);
    assert_string_equal(name, rows[k].name);
    assert_non_null(function);
    check_listed_with_kernels(name);
    ct_graph *g = ct_graph_new();
    ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
    ct_output y = ct_unary_math(g, name, x), dx;
    assert_int_equal(ct_gradients(g, ct_reduce_sum(g, y, 0, 0), 1, &x, &dx), 0);
    assert_status_ok(ct_graph_status(g));
    if (strcmp(rows[k].gradient, "NONE") == 0) {
      if (dx.node != NULL) fail_msg("%s: a gradient where TensorFlow has None", name);
    } else if (dx.node == NULL || strcmp(dx.node->op->name, "UnaryMathGrad") != 0 ||
               dx.node->attrs.unary_math.op != k) {
      fail_msg("%s: its gradient is not UnaryMathGrad of row %d", name, k);
    }
    ct_graph_free(g);
  }
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  assert_null(ct_unary_math(g, "Relu", x).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

/* Each row of the binary math table (ops/binary_math.h) is an op of the
 * list with kernels on every device type, named by ct_binary_math_name, and
 * its gradient is BinaryMathGrad of that row for a and for b, summed down
 * to their shapes where they broadcast. */
static void test_every_binary_math_row_is_an_op(void **state) {
  (void)state;
  static const char *const rows[] = {
#define ROW(P, Name, function, forward, da, db, flops, domain) #Name,
      CT_BINARY_MATH(ROW, _)
#undef ROW
  };
  assert_int_equal(sizeof rows / sizeof rows[0], CT_BINARY_MATH_COUNT);
  assert_null(ct_binary_math_name(CT_BINARY_MATH_COUNT, NULL));
  for (int k = 0; k < CT_BINARY_MATH_COUNT; ++k) {
    const char *function = NULL, *name = ct_binary_math_name(k, &function);
    assert_non_null(name);
    assert_string_equal(name, rows[k]);
    assert_non_null(function);
    check_listed_with_kernels(name);
    ct_graph *g = ct_graph_new();
    ct_output in[2] = {ct_placeholder(g, "a", CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)3)),
                       ct_placeholder(g, "b", CT_F32, ct_shape_of(1, (int64_t)3))};
    ct_output y = ct_binary_math(g, name, in[0], in[1]), d[2];
    assert_int_equal(ct_gradients(g, ct_reduce_sum(g, y, 0, 0), 2, in, d), 0);
    assert_status_ok(ct_graph_status(g));
    /* da has a's shape: BinaryMathGrad itself; db is summed from [2, 3] to [3] */
    const ct_node *summed = d[1].node;
    const ct_node *partials[2] = {d[0].node,
                                  summed && summed->n_inputs ? summed->inputs[0].node : NULL};
    if (d[1].node == NULL || strcmp(d[1].node->op->name, "SumLike") != 0)
      fail_msg("%s: b's gradient is not summed down to b's shape", name);
    for (int side = 0; side < 2; ++side)
      if (partials[side] == NULL || strcmp(partials[side]->op->name, "BinaryMathGrad") != 0 ||
          partials[side]->attrs.binary_math.op != k ||
          partials[side]->attrs.binary_math.side != side)
        fail_msg("%s: the gradient of input %d is not BinaryMathGrad of row %d", name, side, k);
    ct_graph_free(g);
  }
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  assert_null(ct_binary_math(g, "Add", x, x).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

/* Each row of the comparison table (ops/compare.h) is an op of the list with
 * kernels on every device type, named by ct_compare_name; its output is a
 * bool and carries no gradient. */
static void test_every_compare_row_is_an_op(void **state) {
  (void)state;
  static const char *const rows[] = {
#define ROW(P, Name, function, op) #Name,
      CT_COMPARE(ROW, _)
#undef ROW
  };
  assert_int_equal(sizeof rows / sizeof rows[0], CT_COMPARE_COUNT);
  assert_null(ct_compare_name(CT_COMPARE_COUNT, NULL));
  for (int k = 0; k < CT_COMPARE_COUNT; ++k) {
    const char *function = NULL, *name = ct_compare_name(k, &function);
    assert_non_null(name);
    assert_string_equal(name, rows[k]);
    assert_non_null(function);
    check_listed_with_kernels(name);
    ct_graph *g = ct_graph_new();
    ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3)), dx;
    ct_output y = ct_compare(g, name, x, x);
    assert_status_ok(ct_graph_status(g));
    assert_int_equal(ct_output_dtype(y), CT_U8);
    assert_int_equal(ct_gradients(g, ct_reduce_sum(g, ct_mul(g, x, ct_cast(g, y, CT_F32)), 0, 0),
                                  1, &x, &dx),
                     0);
    if (dx.node == NULL || strcmp(dx.node->op->name, "Mul") != 0)
      fail_msg("%s: a gradient flows through the comparison", name);
    ct_graph_free(g);
  }
  ct_graph *g = ct_graph_new();
  ct_output x = ct_placeholder(g, "x", CT_F32, ct_shape_of(1, (int64_t)3));
  assert_null(ct_compare(g, "Equal", x, x).node);
  assert_int_equal(ct_graph_status(g)->code, CT_INVALID_ARGUMENT);
  ct_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_op_is_complete),
      cmocka_unit_test(test_every_unary_math_row_is_an_op),
      cmocka_unit_test(test_every_binary_math_row_is_an_op),
      cmocka_unit_test(test_every_compare_row_is_an_op),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

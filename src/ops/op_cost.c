#include "ops/op_cost.h"

double ct_shape_elements_or_zero(const ct_shape *s) {
  const int64_t n = ct_shape_elements(s);
  return n > 0 ? (double)n : 0.0;
}

double ct_op_largest_elements(int n_inputs, const ct_shape *in_shapes, int n_outputs,
                              const ct_shape *out_shapes) {
  double largest = 0;
  for (int j = 0; j < n_inputs; ++j)
    if (ct_shape_elements_or_zero(&in_shapes[j]) > largest)
      largest = ct_shape_elements_or_zero(&in_shapes[j]);
  for (int o = 0; o < n_outputs; ++o)
    if (ct_shape_elements_or_zero(&out_shapes[o]) > largest)
      largest = ct_shape_elements_or_zero(&out_shapes[o]);
  return largest;
}

double ct_flops_none(const ct_attrs *attrs, int n_inputs, const ct_shape *in_shapes, int n_outputs,
                     const ct_shape *out_shapes) {
  (void)attrs, (void)n_inputs, (void)in_shapes, (void)n_outputs, (void)out_shapes;
  return 0;
}

double ct_flops_per_element(const ct_attrs *attrs, int n_inputs, const ct_shape *in_shapes,
                            int n_outputs, const ct_shape *out_shapes) {
  (void)attrs;
  return ct_op_largest_elements(n_inputs, in_shapes, n_outputs, out_shapes);
}

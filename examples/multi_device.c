/* TensorFlow's multi-device example, in ctower: two matmuls built under
 * /gpu:2 and /gpu:3 (or the devices given on the command line), summed by
 * add_n on /cpu:0, run with soft placement and the placement log.
 *
 *   build/multi_device                 # /gpu:2 and /gpu:3: moved where they can run
 *   build/multi_device /cpu:1 /cpu:2   # three CPU devices: runs where asked
 */
#include <stdio.h>

#include <ctower/ctower.h>

int main(int argc, char **argv) {
  const char *towers[2] = {"/gpu:2", "/gpu:3"};
  if (argc == 3) towers[0] = argv[1], towers[1] = argv[2];
  float values[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  ct_tensor value = {CT_F32, ct_shape_of(2, (int64_t)2, (int64_t)2), values, 0};

  ct_graph *g = ct_graph_new();
  ct_output products[2];
  for (int i = 0; i < 2; ++i) {
    ct_graph_push_device(g, towers[i]);
    ct_output a = ct_constant(g, "a", &value);
    ct_output b = ct_constant(g, "b", &value);
    products[i] = ct_matmul(g, a, b, 0, 0);
    ct_graph_pop_device(g);
  }
  ct_graph_push_device(g, "/cpu:0");
  ct_output sum = ct_add_n(g, 2, products);
  ct_graph_pop_device(g);

  ct_session_options options;
  ct_session_options_defaults(&options);
  options.log_device_placement = 1;
  options.allow_soft_placement = 1;
  options.device_count_cpu = 3; /* /cpu:0 .. /cpu:2, so the CPU variant can run as asked */
  options.log = stdout;
  ct_status status = CT_STATUS_INIT;
  ct_session *session = ct_session_new(g, &options, &status);
  ct_tensor *result = NULL;
  if (session == NULL || ct_session_run(session, NULL, 0, &sum, 1, NULL, 0, &result, &status)) {
    fprintf(stderr, "multi_device: %s\n", status.message);
    return 1;
  }
  const float *r = ct_tensor_f32(result);
  printf("[[%g %g]\n [%g %g]]\n", r[0], r[1], r[2], r[3]);
  ct_tensor_free(result);
  ct_session_free(session);
  ct_graph_free(g);
  return 0;
}

/* TensorFlow's random streams (core/philox.h): Philox-4x32-10 against the
 * known-answer vectors of its authors' Random123, and the three float
 * distributions against the first values TensorFlow's CPU kernels print. */
#include <string.h>

#include "core/philox.h"
#include "test_support.h"

static void set_block(ct_philox *p, const uint32_t counter[4], const uint32_t key[2]) {
  memcpy(p->counter, counter, sizeof p->counter);
  memcpy(p->key, key, sizeof p->key);
}

/* Random123's kat_vectors for philox4x32 with 10 rounds */
static void test_known_answers(void **state) {
  (void)state;
  static const struct {
    uint32_t counter[4], key[2], want[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (size_t c = 0; c < sizeof kat / sizeof kat[0]; ++c) {
    ct_philox p;
    set_block(&p, kat[c].counter, kat[c].key);
    uint32_t out[4];
    ct_philox_next(&p, out);
    for (int i = 0; i < 4; ++i) assert_int_equal(out[i], kat[c].want[i]);
  }
}

/* The counter is one 128-bit number: a skip carries from word to word */
static void test_skip_carries(void **state) {
  (void)state;
  ct_philox p;
  ct_philox_init(&p, 1, 0);
  p.counter[0] = 0xffffffffu;
  p.counter[1] = 0xffffffffu;
  ct_philox_skip(&p, 1);
  assert_int_equal(p.counter[0], 0);
  assert_int_equal(p.counter[1], 0);
  assert_int_equal(p.counter[2], 1);
  ct_philox_skip(&p, 0x100000002ull);
  assert_int_equal(p.counter[0], 2);
  assert_int_equal(p.counter[1], 1);
  assert_int_equal(p.counter[2], 1);
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* TensorFlow's values (their float32 bits) of tf.random_uniform([10], seed=1),
 * tf.random_normal([10], seed=1) and tf.truncated_normal([10], seed=1) with no
 * graph seed: op seeds (87654321, 1). */
static const uint32_t TF_UNIFORM[8] = {1047840312u, 1064017742u, 1028580896u, 1056821816u,
                                       1062593738u, 1020844160u, 1035236512u, 1055510372u};
static const uint32_t TF_NORMAL[8] = {3209671309u, 1069418325u, 1032178536u, 3223082308u,
                                      1036731071u, 1058495098u, 1058521919u, 3221741076u};
static const uint32_t TF_TRUNCATED[8] = {3209671309u, 1069418325u, 1032178536u, 1036731071u,
                                         1059308336u, 1070477575u, 1042773474u, 3217162916u};

static void test_tensorflow_values(void **state) {
  (void)state;
  float u[10], n[10], t[10];
  ct_philox_fill_uniform(87654321, 1, u, 10);
  ct_philox_fill_normal(87654321, 1, n, 10);
  ct_philox_fill_truncated_normal(87654321, 1, t, 10);
  for (int i = 0; i < 8; ++i) {
    assert_int_equal(bits(u[i]), TF_UNIFORM[i]);
    assert_int_equal(bits(n[i]), TF_NORMAL[i]);
    assert_int_equal(bits(t[i]), TF_TRUNCATED[i]);
  }
}

/* A fill of n values starts as a fill of more: a shorter tensor is a prefix,
 * and a truncated normal's second group draws from counter 256, not from where
 * the first group stopped (normal value 3, -2.44, was rejected there). */
static void test_prefixes_and_groups(void **state) {
  (void)state;
  float long_t[9], short_t[5], n[8];
  ct_philox_fill_truncated_normal(87654321, 1, long_t, 9);
  ct_philox_fill_truncated_normal(87654321, 1, short_t, 5);
  assert_memory_equal(long_t, short_t, sizeof short_t);
  ct_philox_fill_normal(87654321, 1, n, 8);
  assert_true(bits(long_t[4]) != bits(n[5]));
  ct_philox p;
  ct_philox_init(&p, 87654321, 1);
  ct_philox_skip(&p, 256);
  uint32_t block[4];
  ct_philox_next(&p, block);
  float f0, f1;
  ct_philox_box_muller(block[0], block[1], &f0, &f1);
  assert_int_equal(bits(f0), bits(long_t[4]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answers),
      cmocka_unit_test(test_skip_carries),
      cmocka_unit_test(test_tensorflow_values),
      cmocka_unit_test(test_prefixes_and_groups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A shared library without ctower's model exports: `ctower train` must
 * refuse it with a clear error (tests/cli/layers.sh). */
__attribute__((visibility("default"))) int not_a_model(void) { return 0; }

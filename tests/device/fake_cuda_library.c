/* A shared library that stands in for a CUDA library in
 * test_cuda_library_search.c: loaded from wherever the search finds it. */
int ct_fake_cuda_library_answer(void);
int ct_fake_cuda_library_answer(void) { return 42; }

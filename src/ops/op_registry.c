/* The table of every op definition. */
#include <string.h>

#include "ops/op_registry.h"
#include "ops/op_list.h"

static const ct_op_def *const all_ops[] = {CT_OP_LIST(CT_OP_ADDRESS)};

const ct_op_def *ct_op_find(const char *name) {
  for (size_t i = 0; i < sizeof all_ops / sizeof all_ops[0]; ++i)
    if (strcmp(all_ops[i]->name, name) == 0) return all_ops[i];
  return NULL;
}

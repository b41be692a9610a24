/* The ops ctower defines (listed once in op_list.h), found by name. */
#ifndef CTOWER_OPS_OP_REGISTRY_H
#define CTOWER_OPS_OP_REGISTRY_H

#include "ctower/ops.h"
#include "graph/op_def.h"

/* The op named `name` (TensorFlow's name: "Conv2D"), or NULL. */
const ct_op_def *ct_op_find(const char *name);

#endif

/* ctower: train neural networks on every device a machine has.
 * This header includes the library's whole public API (the YAML config,
 * ctower/config.h, is the ctower_config library's). */
#ifndef CTOWER_CTOWER_H
#define CTOWER_CTOWER_H

#include "ctower/status.h"
#include "ctower/tensor.h"
#include "ctower/device_name.h"
#include "ctower/session_options.h"
#include "ctower/cluster.h"
#include "ctower/graph.h"
#include "ctower/ops.h"
#include "ctower/session.h"
#include "ctower/optimizer.h"
#include "ctower/models.h"
#include "ctower/towers.h"
#include "ctower/trainer.h"
#include "ctower/data.h"
#include "ctower/checkpoint.h"

#endif

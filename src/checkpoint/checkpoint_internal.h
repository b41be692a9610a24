/* Pieces shared by checkpoint.c (writing) and checkpoint_read.c. */
#ifndef CTOWER_CHECKPOINT_CHECKPOINT_INTERNAL_H
#define CTOWER_CHECKPOINT_CHECKPOINT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/files.h"
#include "ctower/status.h"
#include "ctower/tensor.h"

/* What a checkpoint is in messages about its file (checkpoint.c). */
extern const ct_file_role ct_checkpoint_role;

/* "F32", "I32", "I64", "U8": the safetensors names of ctower's dtypes. */
static inline const char *ct_safetensors_dtype_name(ct_dtype dtype) {
  switch (dtype) {
    case CT_F32:
      return "F32";
    case CT_I32:
      return "I32";
    case CT_I64:
      return "I64";
    case CT_U8:
      return "U8";
    default:
      return "?";
  }
}

static inline int ct_host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

#endif

/* The GPUs of a session and their memory limits (gpu_layout.h). */
#include "device/gpu_layout.h"

#include <stdio.h>
#include <stdlib.h>

/* Reads gpu_options.visible_device_list into layout->ordinals. */
static int parse_visible_list(const char *list, int available, ct_gpu_layout *layout,
                              ct_status *status) {
  const char *p = list;
  for (;;) {
    char *end = NULL;
    long id = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0')) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "gpu_options.visible_device_list '%s' is not a comma-separated list of "
                    "GPU ids such as \"1,0\"",
                    list);
      return 1;
    }
    if (id < 0 || id >= available) {
      ct_status_set(status, CT_INVALID_ARGUMENT,
                    "gpu_options.visible_device_list '%s' names GPU %ld, but this machine has "
                    "%d visible GPU%s (0 to %d); list ids among those, or leave it empty",
                    list, id, available, available == 1 ? "" : "s", available - 1);
      return 1;
    }
    for (int i = 0; i < layout->n_physical; ++i)
      if (layout->ordinals[i] == id) {
        ct_status_set(status, CT_INVALID_ARGUMENT,
                      "gpu_options.visible_device_list '%s' names GPU %ld twice", list, id);
        return 1;
      }
    layout->ordinals[layout->n_physical++] = (int)id;
    if (*end == '\0') return 0;
    p = end + 1;
  }
}

int ct_gpu_layout_make(const ct_session_options *o, int available, ct_gpu_layout *layout,
                       ct_status *status) {
  layout->n_physical = 0;
  layout->per_physical =
      o->gpu_options.n_virtual_devices > 0 ? o->gpu_options.n_virtual_devices : 1;
  if (available > CT_MAX_DEVICES) available = CT_MAX_DEVICES;
  if (o->device_count_gpu == 0 || available <= 0) return 0;
  if (o->gpu_options.visible_device_list[0] != '\0') {
    if (parse_visible_list(o->gpu_options.visible_device_list, available, layout, status)) return 1;
  } else {
    for (int i = 0; i < available; ++i) layout->ordinals[layout->n_physical++] = i;
  }
  if (o->device_count_gpu > 0 && o->device_count_gpu < layout->n_physical)
    layout->n_physical = o->device_count_gpu;
  return 0;
}

int ct_gpu_layout_devices(const ct_gpu_layout *layout) {
  return layout->n_physical * layout->per_physical;
}

int ct_gpu_memory_limit(const ct_session_options *o, const char *name, int ordinal,
                        int virtual_index, size_t free_bytes, size_t total_bytes, size_t *limit,
                        ct_status *status) {
  const ct_gpu_options *g = &o->gpu_options;
  char source[128];
  size_t want;
  if (g->n_virtual_devices > 0) {
    want = (size_t)g->virtual_devices_mb[virtual_index] << 20;
    snprintf(source, sizeof source, "gpu_options.virtual_devices");
  } else if (o->gpu_memory_limit) {
    want = o->gpu_memory_limit;
    snprintf(source, sizeof source, "memory_limit_mb GPU");
  } else if (g->per_process_gpu_memory_fraction > 0 && g->per_process_gpu_memory_fraction < 1) {
    want = (size_t)((double)total_bytes * g->per_process_gpu_memory_fraction);
    snprintf(source, sizeof source, "per_process_gpu_memory_fraction %.2f of %zu MiB",
             g->per_process_gpu_memory_fraction, total_bytes >> 20);
  } else {
    const size_t floor = (size_t)256 << 20;
    const size_t headroom = free_bytes / 20 > floor ? free_bytes / 20 : floor;
    if (free_bytes <= headroom) {
      ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                    "GPU %d has %zu MiB free, no more than the %zu MiB left to the CUDA "
                    "libraries, so %s gets nothing; free memory on it, or hide it with "
                    "device_count: {GPU: 0} or gpu_options.visible_device_list",
                    ordinal, free_bytes >> 20, headroom >> 20, name);
      return 1;
    }
    want = free_bytes - headroom;
    snprintf(source, sizeof source, "the default (all free memory)");
  }
  if (!g->allow_growth && want > free_bytes) {
    ct_status_set(status, CT_RESOURCE_EXHAUSTED,
                  "GPU %d has %zu MiB free but %s asks for %zu MiB for %s; another session or "
                  "process holds the rest: ask for less, or set gpu_options.allow_growth: true",
                  ordinal, free_bytes >> 20, source, want >> 20, name);
    return 1;
  }
  *limit = want;
  return 0;
}

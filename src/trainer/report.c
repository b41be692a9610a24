/* What training prints: the banner, the progress line and memory. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cluster/communication.h"
#include "core/clock.h"
#include "trainer/report.h"

const char *ct_trainer_tower_summary(const ct_tower_options *t, char *buf, size_t size) {
  const ct_strategy *strategy = ct_strategy_of(t->variable_update);
  if (strategy)
    strategy->describe(t, buf, size);
  else
    snprintf(buf, size, "%d towers", t->n_towers);
  return buf;
}

void ct_trainer_classes_text(const ct_dataset *ds, char *buf, size_t size) {
  enum { SHOWN = 8 }; /* with more classes: the first SHOWN - 1, "...", the last */
  const int n = ct_dataset_num_classes(ds);
  size_t used = 0;
  buf[0] = '\0';
  if (ct_dataset_class_name(ds, 0) == NULL) return;
  used += (size_t)snprintf(buf, size, "classes:");
  for (int k = 0; k < n && used < size; ++k) {
    if (n > SHOWN && k == SHOWN - 1) {
      used += (size_t)snprintf(buf + used, size - used, " ... (%d classes),", n);
      k = n - 1;
    }
    used += (size_t)snprintf(buf + used, size - used, " %d %s%s", k, ct_dataset_class_name(ds, k),
                             k + 1 < n ? "," : "");
  }
}

void ct_trainer_print_banner(const ct_train_run *r) {
  const ct_trainer_options *o = r->options;
  char summary[128];
  printf("ctower %s: training %s on %s (%lld train / %lld test examples), batch %lld, %lld "
         "epochs, %s lr %g, seed %lld\n",
         CTOWER_VERSION, o->model, o->dataset.name, (long long)ct_dataset_size(r->train_set),
         (long long)ct_dataset_size(r->test_set), (long long)o->dataset.batch_size,
         (long long)o->train.epochs, ct_optimizer_name(o->train.optimizer.kind),
         o->train.schedule.base_rate, (long long)o->train.seed);
  char classes[512];
  ct_trainer_classes_text(r->train_set, classes, sizeof classes);
  if (classes[0]) printf("%s\n", classes);
  if (r->strategy->print_banner) { /* the job's shape, where the variables live */
    r->strategy->print_banner(r->strategy_state, r->split.global_towers);
    fflush(stdout);
    return;
  }
  printf("%s:", ct_trainer_tower_summary(&r->towers, summary, sizeof summary));
  for (int k = 0; k < r->towers.n_towers; ++k) {
    ct_status ignored = CT_STATUS_INIT;
    const char *device = ct_session_node_device(r->session, r->tg.train.logits[k].node, &ignored);
    ct_device_info info = {0};
    for (int d = 0; d < ct_session_device_count(r->session); ++d)
      if (device && strcmp(ct_session_device_name(r->session, d), device) == 0)
        ct_session_device_info(r->session, d, &info);
    const int gpu = info.kind && strcmp(info.kind, "GPU") == 0;
    printf("%s %s (%d %s%s)", k ? "," : "", device ? device : "?", info.threads,
           gpu ? "SM" : "thread", info.threads == 1 ? "" : "s");
  }
  printf("\n");
  fflush(stdout);
}

static void format_duration(double seconds, char *buf, size_t size) {
  if (!(seconds >= 0) || seconds > 1e7) seconds = 0;
  long s = (long)(seconds + 0.5);
  if (s >= 3600)
    snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

void ct_progress_update(ct_progress *p, int64_t epoch, int64_t epochs, int64_t batch,
                        int64_t batches, double loss, double accuracy, double images_per_sec,
                        double eta) {
  double t = ct_monotonic_seconds();
  int every_tenth = batches >= 10 && batch % (batches / 10) == 0;
  if (p->tty ? t - p->last_print < 0.2 : !every_tenth) return;
  p->last_print = t;
  enum { WIDTH = 24 };
  char bar[WIDTH + 1];
  int filled = (int)(WIDTH * batch / (batches ? batches : 1));
  for (int i = 0; i < WIDTH; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[WIDTH] = '\0';
  char eta_text[32];
  format_duration(eta, eta_text, sizeof eta_text);
  printf("%sepoch %lld/%lld [%s] %lld/%lld loss %.4f acc %.4f %.0f img/s%s%s ETA %s%s",
         p->tty ? "\r" : "", (long long)epoch, (long long)epochs, bar, (long long)batch,
         (long long)batches, loss, accuracy, images_per_sec, p->shards[0] ? " " : "", p->shards,
         eta_text, p->tty ? "\033[K" : "\n");
  fflush(stdout);
}

void ct_trainer_print_peak_memory(ct_session *s) {
  /* the devices that held anything (with towers on GPUs, not the CPU) */
  printf("peak memory:");
  for (int d = 0, listed = 0; d < ct_session_device_count(s); ++d) {
    ct_memory_stats m;
    ct_session_memory_stats(s, d, &m);
    if (m.peak_bytes_in_use == 0) continue;
    printf("%s %s %.1f MiB", listed++ ? "," : "",
           ct_device_short_name(ct_session_device_name(s, d)),
           (double)m.peak_bytes_in_use / 1048576.0);
  }
  printf("\n");
}

void ct_trainer_print_memory_stats(ct_session *s) {
  for (int d = 0; d < ct_session_device_count(s); ++d) {
    ct_memory_stats m;
    ct_session_memory_stats(s, d, &m);
    char limit[32] = "none";
    if (m.limit) snprintf(limit, sizeof limit, "%zu", m.limit);
    printf("memory %s: in use %zu bytes, peak %zu, reserved %zu, largest free chunk %zu, "
           "allocations %llu, limit %s\n",
           ct_session_device_name(s, d), m.bytes_in_use, m.peak_bytes_in_use, m.bytes_reserved,
           m.largest_free_chunk, (unsigned long long)m.allocations, limit);
  }
}

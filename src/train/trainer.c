#include "ctower/trainer.h"

int ct_train_main(const ct_config *config, const ct_train_flags *flags, ct_status *status) {
  (void)config;
  (void)flags;
  ct_status_set(status, CT_UNIMPLEMENTED, "training is not built yet");
  return 1;
}

int ct_eval_main(const ct_config *config, const char *checkpoint_path, ct_status *status) {
  (void)config;
  (void)checkpoint_path;
  ct_status_set(status, CT_UNIMPLEMENTED, "evaluation is not built yet");
  return 1;
}

/* Learning-rate schedules: constant, step, piecewise and cosine, with
 * linear warm-up. */
#include <math.h>

#include "ctower/optimizer.h"

double ct_schedule_rate(const ct_schedule *s, double epochs) {
  double rate = s->base_rate;
  switch (s->kind) {
    case CT_SCHEDULE_CONSTANT:
      break;
    case CT_SCHEDULE_STEP:
      if (s->step_epochs > 0) rate *= pow(s->gamma, floor(epochs / s->step_epochs));
      break;
    case CT_SCHEDULE_PIECEWISE: /* gamma once for each boundary reached */
      for (int i = 0; i < s->n_boundaries && i < 8 && epochs >= s->boundaries[i]; ++i)
        rate *= s->gamma;
      break;
    case CT_SCHEDULE_COSINE: {
      double t = s->total_epochs > 0 ? epochs / s->total_epochs : 1.0;
      if (t > 1) t = 1;
      rate = s->min_rate + (s->base_rate - s->min_rate) * 0.5 * (1.0 + cos(M_PI * t));
      break;
    }
  }
  if (s->warmup_epochs > 0 && epochs < s->warmup_epochs) rate *= epochs / s->warmup_epochs;
  return rate;
}

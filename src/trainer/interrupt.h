/* Signals during training (interrupt.c). */
#ifndef CTOWER_TRAINER_INTERRUPT_H
#define CTOWER_TRAINER_INTERRUPT_H

/* SIGINT and SIGTERM during ct_train_main (handle_signals). */
void ct_interrupt_install(void);
void ct_interrupt_restore(void);
/* From here on the first signal stops the run after its step; until then
 * (start-up: datasets, the model, the session) it ends the process. */
void ct_interrupt_training_started(void);
/* The signal received since ct_interrupt_install, or 0. */
int ct_interrupt_requested(void);
/* The signal a job stops with when one rank got a and another b (0:
 * none): SIGINT when either is, else the other; so every rank of a job
 * exits with the same status, whichever rank was signalled. */
int ct_interrupt_combine(int a, int b);
/* The run stopped for the job's signal `sig`: ct_trainer_interrupt_signal
 * reports it, on every rank, from now on. */
void ct_interrupt_stopped_by(int sig);

#endif

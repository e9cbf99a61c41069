/* SPDX-License-Identifier: Apache-2.0 */
/* fixture.h — the instrumented test workloads (fixture_body.h). */
#ifndef RVT_TEST_FIXTURE_H
#define RVT_TEST_FIXTURE_H
int call_top(int depth);
void call_spin(volatile int *stop_flag, unsigned long *calls);
extern const void *const call_functions[3]; /* top, middle, leaf */
int call_start_inside(void);
int inl_top(int depth);
int inl_start_inside(void);
void inl_spin(volatile int *stop_flag, unsigned long *calls);
extern const void *const inl_functions[3];
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_fix.h — instrumented fixtures for test_unwind: a chain
 * top → a → b → c → d → leaf whose leaf leaves non-locally (UF_*), then
 * after → after_inner.  unwind_fix.c is built in call mode (uc_), inline mode
 * (ui_), rvcc's late mode (ul_, where the build has the GCC plugin) and call
 * mode with _FORTIFY_SOURCE=2 (uf_, whose longjmp is __longjmp_chk);
 * unwind_cxx.cc with g++ (gx_), g++ in late mode (gl_) and clang++ (cl_).
 */
#ifndef RVT_TEST_UNWIND_FIX_H
#define RVT_TEST_UNWIND_FIX_H

#ifdef __cplusplus
extern "C" {
#endif

/* UF_SIGNAL: the leaf raises SIGUSR2, whose handler (uc_on_signal, installed
 * by the test) leaves by siglongjmp. */
enum { UF_LONGJMP, UF__LONGJMP, UF_SIGLONGJMP, UF_PTHREAD_EXIT, UF_CANCEL, UF_SIGNAL };

/* Runs the chain; kind UF_PTHREAD_EXIT / UF_CANCEL ends the calling thread
 * in the leaf (UF_CANCEL blocks in pause() until cancelled). */
void uc_top(int kind);
void ui_top(int kind);
void uf_top(int kind);
void ul_top(int kind);
/* Recurses n frames deep (past the shadow stack's capacity when n > 4096),
 * longjmps back to the top, then calls after (uc_ build). */
void uc_deep_top(int n);
/* The SIGUSR2 handler for UF_SIGNAL (uc_ build). */
void uc_on_signal(int sig);
/* Throws an int from the leaf, caught in x_top, then calls x_after. */
int gx_x_top(int v);
int cl_x_top(int v);
int gl_x_top(int v);

#ifdef __cplusplus
}
#endif
#endif

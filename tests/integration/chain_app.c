/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chain_app.c — a small instrumented program for the capture integration
 * test: a UI-like frame loop whose layout pass calls into a second module
 * (libchainmod.so) where one list item takes a slow path, as in the Hubble
 * paper's case study.  Built with -finstrument-functions against librvtrace.
 */
#include <stdlib.h>

void build_list_item(int i); /* libchainmod.so */
void layout_pass(int items);
void render_frame(int frame);
void layout_pass(int items);
void render_frame(int frame);

/* static: only in .symtab, so finding it by name proves .symtab is read. */
static __attribute__((noinline)) void measure_child(int i)
{
	volatile int x = i;

	(void)x;
}

__attribute__((noinline)) void layout_pass(int items)
{
	for (int i = 0; i < items; i++) {
		measure_child(i);
		build_list_item(i);
	}
}

__attribute__((noinline)) void render_frame(int frame)
{
	(void)frame;
	layout_pass(4);
}

int main(int argc, char **argv)
{
	long frames = argc > 1 ? strtol(argv[1], NULL, 10) : 20;

	for (long f = 0; f < frames; f++)
		render_frame((int)f);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chain_mod.c — the second module of chain_app: a shared library, so its
 * functions lie far from the main executable's base (two-slot entries) and
 * are symbolized from another ELF file.
 */
void build_list_item(int i);
void inflate_row_slowly(int i);
void inflate_row_slowly(int i);

__attribute__((noinline)) void inflate_row_slowly(int i)
{
	volatile unsigned long sum = 0;

	/* Far more work than anything else in the program: the top self time. */
	for (unsigned long k = 0; k < 300000; k++)
		sum += k ^ (unsigned long)i;
	(void)sum;
}

__attribute__((noinline)) void build_list_item(int i)
{
	if (i == 3)
		inflate_row_slowly(i);
}

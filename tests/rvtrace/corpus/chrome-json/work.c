/* work.c — the program traced for the chrome-json corpus (SOURCES.md): no invariants. */
#include <stdio.h>
static int leaf(int x)
{
	return x * 3 + 1;
}
static int mid(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}
int main(void)
{
	int s = 0;
	for (int i = 0; i < 5; i++)
		s += mid(10);
	printf("%d\n", s);
	return 0;
}

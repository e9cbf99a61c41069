// SPDX-License-Identifier: Apache-2.0
// cxxfix.cc — an instrumented C++ method for the demangling test.
namespace cxxfix {
struct Widget {
	int run(int x);
};

__attribute__((noinline)) int Widget::run(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x + 1;
}
} // namespace cxxfix

extern "C" int cxxfix_call(int x)
{
	cxxfix::Widget w;
	return w.run(x);
}

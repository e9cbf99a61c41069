/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rearview/sanitizer.h — which sanitizer this translation unit is built
 * with, the same answer from gcc (which defines __SANITIZE_ADDRESS__ and
 * __SANITIZE_THREAD__) and clang (which answers __has_feature() instead):
 *
 *   RV_ASAN   1 under AddressSanitizer, else 0
 *   RV_TSAN   1 under ThreadSanitizer, else 0
 *   RV_MEMORY_SANITIZED  RV_ASAN || RV_TSAN: shadow memory (and ASan's
 *             quarantine) inflate what allocations cost, so a bound on a
 *             process's memory cannot be judged
 *
 * Header only; include it anywhere (product code and tests).
 */
#ifndef REARVIEW_SANITIZER_H
#define REARVIEW_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define RV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RV_ASAN 1
#endif
#endif
#ifndef RV_ASAN
#define RV_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define RV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RV_TSAN 1
#endif
#endif
#ifndef RV_TSAN
#define RV_TSAN 0
#endif

#define RV_MEMORY_SANITIZED (RV_ASAN || RV_TSAN)

#endif

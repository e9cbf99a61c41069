/*
 * log.h — leveled logging to stderr for rearviewd (journald picks stderr up
 * under systemd; the "<N>" prefix is the sd-daemon priority convention).
 */
#ifndef RVD_LOG_H
#define RVD_LOG_H

enum rvd_log_level {
	RVD_LOG_ERR = 3,
	RVD_LOG_WARN = 4,
	RVD_LOG_INFO = 6,
	RVD_LOG_DEBUG = 7,
};

/* The most verbose level printed; RVD_LOG_INFO until changed. */
void rvd_log_set_level(int level);
int rvd_log_get_level(void);

/* Parses "err", "warn", "info", "debug".  Returns the level or -EINVAL. */
int rvd_log_level_parse(const char *s);

void rvd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rvd_err(...)   rvd_log(RVD_LOG_ERR, __VA_ARGS__)
#define rvd_warn(...)  rvd_log(RVD_LOG_WARN, __VA_ARGS__)
#define rvd_info(...)  rvd_log(RVD_LOG_INFO, __VA_ARGS__)
#define rvd_debug(...) rvd_log(RVD_LOG_DEBUG, __VA_ARGS__)

#endif

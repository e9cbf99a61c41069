/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.h — what the consent panel tells its user when the daemon refused
 * or could not be reached: a sentence in the user's language, never the
 * raw "GDBus.Error:org.freedesktop.DBus.Error.AccessDenied: …" text.
 */
#ifndef RV_SETTINGS_ERRORS_H
#define RV_SETTINGS_ERRORS_H

#include <gio/gio.h>

/* The human sentence for a failed call to org.rearview.Daemon1 (err from
 * g_dbus_proxy_call_finish; not NULL), translated (gettext domain
 * "rearview-settings"): refused by polkit, needing an administrator's
 * authentication, the service not running or gone, a choice it did not
 * take, or, for anything else, a generic sentence.  The returned string is
 * static (gettext's); any thread. */
const char *settings_error_text(const GError *err);

#endif

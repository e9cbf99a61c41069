/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.c — the panel's sentences for failed D-Bus calls (errors.h).
 * Decided by the D-Bus error name the daemon or the bus sent (sd-bus's
 * standard names: polkit's refusal is AccessDenied, a refusal that an
 * authentication agent could have turned into a yes is
 * InteractiveAuthorizationRequired), or by GIO's own error when the call
 * never reached the daemon.  The remote text is never shown: it is
 * English, technical, and names D-Bus.
 */
#include "errors.h"

#include <glib/gi18n.h>
#include <string.h>

const char *settings_error_text(const GError *err)
{
	gchar *name = g_dbus_error_get_remote_error(err);
	const char *text = NULL;

	if (name && !strcmp(name, "org.freedesktop.DBus.Error.AccessDenied"))
		text = _("Not changed: you are not allowed to change this. Ask the "
			 "person who administers this device.");
	else if (name && !strcmp(name, "org.freedesktop.DBus.Error."
				       "InteractiveAuthorizationRequired"))
		text = _("Not changed: this needs an administrator's password, and no "
			 "password prompt is available here.");
	else if ((name && (!strcmp(name, "org.freedesktop.DBus.Error.ServiceUnknown") ||
			   !strcmp(name, "org.freedesktop.DBus.Error.NameHasNoOwner") ||
			   !strcmp(name, "org.freedesktop.DBus.Error.NoReply"))) ||
		 g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CLOSED) ||
		 g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) ||
		 g_error_matches(err, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) ||
		 g_error_matches(err, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN))
		text = _("Not changed: the Rearview service is not running. Try again "
			 "later.");
	else if (name && !strcmp(name, "org.freedesktop.DBus.Error.InvalidArgs"))
		text = _("Not changed: the Rearview service did not accept this choice.");
	else
		text = _("Not changed: the Rearview service could not do it.");
	g_free(name);
	return text;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_settings_errors.c — the consent panel's sentences for failed D-Bus
 * calls (device/settings/errors.c): the errors GDBus builds from the names
 * the daemon, polkit and the bus send become plain sentences, and no
 * sentence shows the raw "GDBus.Error:…" text or a D-Bus name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "errors.h"

/* The sentence for a remote error `name`, as GDBus hands it to the panel. */
static const char *text_for(const char *name)
{
	GError *e = g_dbus_error_new_for_dbus_error(name, "polkit: not authorized (raw text)");
	const char *t;

	assert_non_null(strstr(e->message, "GDBus.Error:")); /* what was shown before */
	t = settings_error_text(e);
	g_error_free(e);
	assert_null(strstr(t, "GDBus"));
	assert_null(strstr(t, "org.freedesktop"));
	assert_null(strstr(t, "raw text"));
	return t;
}

static void test_settings_errors_are_sentences(void **state)
{
	GError *closed;

	(void)state;
	assert_non_null(strstr(text_for("org.freedesktop.DBus.Error.AccessDenied"),
			       "you are not allowed to change this"));
	assert_non_null(
		strstr(text_for("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"),
		       "administrator's password"));
	assert_non_null(strstr(text_for("org.freedesktop.DBus.Error.ServiceUnknown"),
			       "service is not running"));
	assert_non_null(strstr(text_for("org.freedesktop.DBus.Error.NameHasNoOwner"),
			       "service is not running"));
	assert_non_null(strstr(text_for("org.freedesktop.DBus.Error.InvalidArgs"),
			       "did not accept this choice"));
	assert_non_null(strstr(text_for("org.example.Something.Odd"), "could not do it"));
	/* A call that never reached the bus (the connection closed). */
	closed = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CLOSED, "The connection is closed");
	assert_non_null(strstr(settings_error_text(closed), "service is not running"));
	g_error_free(closed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_settings_errors_are_sentences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
